/**
 * The layering of lib/ and components/, checked by `npm test` (npm run lint:imports). Arrows point
 * down only: components -> lib; the IaC side of lib (render, api, model, annotations, ...) never into
 * the runtime; the runtime's parts (webhook, extender, reconcilers, autoscaler, node agent) only into
 * the shared floor below them, never sideways into each other; no cycles anywhere.
 *
 * Arrows that existed when these rules came in are listed in .dependency-cruiser-known-violations.json
 * and tolerated until they are moved (issue 40); any other arrow a rule forbids fails the check,
 * naming the rule. Regenerate the list only when removing arrows:
 * `npx depcruise lib components scripts bench --output-type baseline > .dependency-cruiser-known-violations.json`.
 */
const RUNTIME_PARTS = '(webhook|scheduler|controller|autoscale|agent)';

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
      comment: 'What renders objects (lib/render, lib/api, lib/model, ...) does not import the runtime process; contracts between them live in lib/contract.',
      severity: 'error',
      from: { path: '^lib/', pathNot: '^lib/runtime/' },
      to: { path: '^lib/runtime/' },
    },
    {
      name: 'runtime-parts-not-sideways',
      comment: `The runtime's parts ${RUNTIME_PARTS} import only the shared runtime floor below them (lib/runtime/*.ts, kube/, ...), never each other.`,
      severity: 'error',
      from: { path: `^lib/runtime/${RUNTIME_PARTS}/` },
      to: { path: `^lib/runtime/${RUNTIME_PARTS}/`, pathNot: '^lib/runtime/$1/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
