import { createHash } from 'crypto';
import { gzipSync } from 'zlib';
import { KubeObject } from '../../../lib/k8s/object';
import { AGENT_NAMES, ControllerBundleRef } from '../../../lib/render/controller';

/** Small real gzipped scripts; render functions only carry them, so their content does not matter. */
const code = (source: Buffer) => ({
  gzipBase64: gzipSync(source).toString('base64'),
  sha256: createHash('sha256').update(source).digest('hex'),
});
export const FAKE_BUNDLE: ControllerBundleRef = {
  ...code(Buffer.from("process.stdout.write('controller\\n');\n")),
  version: '0.1.0',
  agent: code(Buffer.from("process.stdout.write('agent\\n');\n")),
};

export function find(objects: readonly KubeObject[], kind: string, name?: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? `/${name}` : ''}, found ${found.length}`);
  return found[0];
}

export type Json = any;

/** The controller's own objects: the install less the node agent's (agent.test.ts checks those). */
export function controllerObjects(objects: readonly KubeObject[]): KubeObject[] {
  const inAgentNamespace = (ns?: string) => ns?.endsWith(AGENT_NAMES.namespaceSuffix) === true;
  return objects.filter(
    (o) =>
      !inAgentNamespace(o.metadata.namespace) &&
      !(o.kind === 'Namespace' && inAgentNamespace(o.metadata.name)) &&
      o.metadata.name !== AGENT_NAMES.agent,
  );
}

export function podSpec(objects: readonly KubeObject[]): Json {
  return (find(objects, 'Deployment') as Json).spec.template.spec;
}

/** A container of the controller pod by name (`controller`, `scheduler`). */
export function container(objects: readonly KubeObject[], name: string): Json {
  const found = (podSpec(objects).containers as Json[]).filter((c) => c.name === name);
  if (found.length !== 1) throw new Error(`expected one container ${name}, found ${found.length}`);
  return found[0];
}

/** Prop sets that cover every branch of the render: both certificate modes, both ways of shipping, metrics off, every prop set. */
export const MODES = {
  defaults: {},
  certManager: {
    certificateMode: 'cert-manager',
    serviceMonitor: true,
    failurePolicy: 'Ignore',
    grafanaDashboard: true,
    grafanaDashboardNamespace: 'monitoring',
    alertRules: 'PrometheusRule',
  },
  image: {
    image: 'registry.example.com/tensor-fusion-controller:0.1.0',
    metrics: false,
    installCrds: false,
    namespace: 'gpu-system',
    alertRules: 'ConfigMap',
    alertRuleLabels: { prometheus: 'rules' },
  },
  tuned: {
    replicas: 3,
    logLevel: 'debug',
    nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
    tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
    resources: { requests: { cpu: '200m' }, limits: { memory: '1Gi' } },
    schedulerVersion: 'v1.35.2',
  },
} as const;
