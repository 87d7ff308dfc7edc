/**
 * The layering of lib/ and components/, checked by `npm test` (npm run lint:imports): arrows point
 * down only, never sideways between rooms of one floor, and there are no cycles. Each rule names the
 * floors it keeps apart, so a back-arrow fails with a message that says which. CONTRIBUTING.md
 * ("Layering") draws the floors.
 */

/**
 * The IaC side of lib/, bottom floor first. A room imports only rooms on lower floors; rooms of one
 * floor never import each other. lib/*.ts (the package's entry) and components/ sit on top.
 */
const IAC_FLOORS = [
  ['k8s'], // Kubernetes vocabulary: quantities, names, labels, pod templates
  ['model'], // our vocabulary: keys, rules, limits, errors, the GPU catalog
  ['api'], // the tensor-fusion.ai/v1 kinds: schemas, types, validation
  ['annotations'], // the pod annotations: decode, merge over profile and pool, encode
  ['allocator', 'autoscale', 'contract', 't9k'], // placement, recommendations, component-process contracts, T9k
  ['render'], // objects from props
];

/**
 * The runtime (lib/runtime), bottom floor first. It stands on the IaC floors below render. Its parts
 * (admission, the extender, the reconcilers, the autoscaler, the node agent, the web view) are one
 * floor and never import each other; the kubectl plugin (cli/) stands on them, and main.ts and
 * runtime.ts (the replica) sit on top and wire them.
 */
const RUNTIME_FLOORS = [
  ['kube'], // the API client: cluster, informers, work queue, leader election
  ['shared'], // what several parts use: a pod's share record, caches, pod lifecycle, settings resolution, the runtime context
  ['serving'], // HTTP and TLS servers apart from what they serve
  ['webhook', 'extender', 'reconcile', 'autoscale', 'agent', 'view'],
  ['cli'], // the kubectl plugin: a program of its own that reads the cluster with the parts' code
];

const alt = (names) => `(${names.join('|')})`;

/** The node agent's rooms: [name, comment, from (under lib/runtime/agent/), to, allowed after all]. */
const AGENT = '^lib/runtime/agent/';
const AGENT_RULES = [
  [
    'agent-doors-apart',
    'A front door (device-plugin/, dra/) imports the share machinery, never another door or the supervision round (node/).',
    '(device-plugin|dra)/',
    `${AGENT}(device-plugin|dra|node)/`,
    `${AGENT}$1/`,
  ],
  [
    'agent-machinery-below-doors',
    'The share machinery (share/, cdi/, kubelet/, host/, mps/) is below the doors and the supervision round.',
    '(share|cdi|kubelet|host|mps)/',
    `${AGENT}(device-plugin|dra|node)/|${AGENT}(main|agent-server)\\.ts$`,
  ],
  [
    'agent-host-below-share',
    "What the host, the kubelet's APIs, the CDI writer and the MPS daemons are (cdi/, kubelet/, host/, mps/) knows nothing of a share's delivery (share/) but the members contract.",
    '(cdi|kubelet|host|mps)/',
    `${AGENT}share/`,
    `${AGENT}share/members\\.ts$`,
  ],
];

/** One rule per floor: no import of a higher floor, nor of another room on the same floor. */
function floorRules(prefix, floors, label) {
  return floors.map((rooms, i) => {
    const above = floors.slice(i + 1).flat();
    return {
      name: `${label}-floor-${rooms.join('-')}`,
      comment: `${prefix}${alt(rooms)} may import only floors below it (${floors
        .slice(0, i)
        .map((f) => f.join(', '))
        .join(' < ') || 'none'}); not ${[...above, ...(rooms.length > 1 ? ['each other'] : [])].join(', ') || 'the roof'}.`,
      severity: 'error',
      from: { path: `^${prefix}${alt(rooms)}/` },
      to: {
        path: `^${prefix}(${[...above, ...rooms].join('|')})/|^${prefix}[^/]+\\.ts$`,
        pathNot: `^${prefix}$1/`,
      },
    };
  });
}

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'A cycle makes both sides one room: move what both need below them.',
      severity: 'error',
      from: { path: '^(lib|components)/' },
      to: { circular: true },
    },
    {
      name: 'lib-not-into-components',
      comment: 'lib/ is framework-free: the framework classes in components/ sit above it.',
      severity: 'error',
      from: { path: '^lib/' },
      to: { path: '^components/' },
    },
    {
      name: 'frameworks-apart',
      comment: 'The Pulumi and cdk8s components share lib/, never each other.',
      severity: 'error',
      from: { path: '^components/(pulumi|cdk8s)/' },
      to: { path: '^components/', pathNot: '^components/$1/' },
    },
    {
      name: 'iac-not-into-runtime',
      comment: 'What renders objects does not import the runtime process; contracts between them live in lib/contract.',
      severity: 'error',
      from: { path: '^(lib/|components/)', pathNot: '^lib/runtime/' },
      to: { path: '^lib/runtime/' },
    },
    {
      name: 'runtime-not-into-render',
      comment: 'The runtime reads objects, it does not render them: lib/render and the package entry are above it.',
      severity: 'error',
      from: { path: '^lib/runtime/' },
      to: { path: '^lib/render/|^lib/[^/]+\\.ts$' },
    },
    // The node agent's rooms (lib/runtime/agent/README.md): the front doors (the device plugin; DRA)
    // stand on the share machinery both use and never import each other; the machinery never
    // imports a door or the supervision round above them.
    ...AGENT_RULES.map(([name, comment, from, to, pathNot]) => ({
      name,
      comment,
      severity: 'error',
      from: { path: `^lib/runtime/agent/${from}` },
      to: { path: to, ...(pathNot ? { pathNot } : {}) },
    })),
    ...floorRules('lib/', IAC_FLOORS, 'iac'),
    ...floorRules('lib/runtime/', RUNTIME_FLOORS, 'runtime'),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
