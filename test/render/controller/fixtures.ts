import { createHash } from 'crypto';
import { gzipSync } from 'zlib';
import { KubeObject } from '../../../lib/k8s/object';
import { ControllerBundleRef } from '../../../lib/render/controller';

/** A small real gzipped script; render functions only carry it, so its content does not matter. */
const SOURCE = Buffer.from("process.stdout.write('controller\\n');\n");
export const FAKE_BUNDLE: ControllerBundleRef = {
  gzipBase64: gzipSync(SOURCE).toString('base64'),
  sha256: createHash('sha256').update(SOURCE).digest('hex'),
  version: '0.1.0',
};

export function find(objects: readonly KubeObject[], kind: string, name?: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? `/${name}` : ''}, found ${found.length}`);
  return found[0];
}

export type Json = any;

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
