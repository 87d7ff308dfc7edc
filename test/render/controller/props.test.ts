import { ValidationError } from '../../../lib/model/errors';
import { CONTROLLER_DEFAULTS, resolveControllerProps, TensorFusionControllerProps } from '../../../lib/render/controller';

function message(props: unknown): string {
  try {
    resolveControllerProps(props as TensorFusionControllerProps);
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as Error).message;
  }
  throw new Error('expected a ValidationError');
}

describe('TensorFusionController props', () => {
  it('applies the documented defaults', () => {
    expect(resolveControllerProps()).toEqual({
      namespace: 'tensor-fusion-system',
      replicas: 2,
      resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } },
      logLevel: 'info',
      nodeSelector: undefined,
      tolerations: undefined,
      failurePolicy: 'Fail',
      certificateMode: 'self-managed',
      metrics: true,
      serviceMonitor: false,
      image: undefined,
      nodeImage: 'node:24-alpine',
      installCrds: true,
      schedulerVersion: 'v1.36.3',
      nodeAgent: true,
      nodeAgentImage: 'node:24-bookworm-slim',
      dra: false,
      nodeAgentDaemonCgroup: '/sys/fs/cgroup/tensor-fusion-mps',
      prometheusUrl: undefined,
      grafanaDashboard: false,
      grafanaDashboardNamespace: undefined,
      alertRules: undefined,
      alertRuleLabels: undefined,
      webView: false,
    });
  });

  it('accepts a Node.js image pinned by digest', () => {
    const pinned = `node:24-alpine@sha256:${'0'.repeat(64)}`;
    expect(resolveControllerProps({ nodeImage: pinned }).nodeImage).toBe(pinned);
    expect(resolveControllerProps({ image: `registry.example.com:5000/tf/controller@sha256:${'a'.repeat(64)}` }).image).toMatch(/@sha256:/);
  });

  it('accepts release and pre-release tags as schedulerVersion', () => {
    expect(resolveControllerProps({ schedulerVersion: 'v1.35.2' }).schedulerVersion).toBe('v1.35.2');
    expect(resolveControllerProps({ schedulerVersion: 'v1.37.0-rc.1' }).schedulerVersion).toBe('v1.37.0-rc.1');
  });

  it('replaces each resource quantity on its own', () => {
    const r = resolveControllerProps({ resources: { limits: { memory: '1Gi' } } }).resources;
    expect(r).toEqual({ requests: CONTROLLER_DEFAULTS.resources.requests, limits: { cpu: '1', memory: '1Gi' } });
  });

  it.each<[string, unknown, string]>([
    [
      'namespace',
      { namespace: 'Tensor_Fusion' },
      'namespace: got "Tensor_Fusion", expected a DNS label: at most 63 lowercase letters, digits and "-", starting and ending with a letter or digit',
    ],
    [
      'namespace length',
      { namespace: 'a'.repeat(64) },
      `namespace: got "${'a'.repeat(64)}", expected a DNS label: at most 63 lowercase letters, digits and "-", starting and ending with a letter or digit`,
    ],
    ['replicas', { replicas: 0 }, 'replicas: got 0, expected an integer of at least 1'],
    ['replicas fraction', { replicas: 1.5 }, 'replicas: got 1.5, expected an integer of at least 1'],
    [
      'cpu request',
      { resources: { requests: { cpu: 'lots' } } },
      'resources.requests.cpu: got "lots", expected a positive Kubernetes quantity such as 500m',
    ],
    [
      'memory limit',
      { resources: { limits: { memory: '0' } } },
      'resources.limits.memory: got "0", expected a positive Kubernetes quantity such as 256Mi',
    ],
    [
      'limit below request',
      { resources: { requests: { memory: '1Gi' } } },
      'resources.limits.memory: got "512Mi", expected at least resources.requests.memory (1Gi)',
    ],
    ['logLevel', { logLevel: 'verbose' }, 'logLevel: got "verbose", expected one of trace, debug, info, warn, error, fatal'],
    ['nodeSelector', { nodeSelector: ['a'] }, 'nodeSelector: got ["a"], expected a map of node label keys to string values'],
    ['nodeSelector value', { nodeSelector: { pool: true } }, 'nodeSelector.pool: got true, expected a string label value'],
    ['tolerations', { tolerations: { key: 'a' } }, 'tolerations: got {"key":"a"}, expected a list of tolerations'],
    [
      'toleration operator',
      { tolerations: [{ key: 'a', operator: 'In' }] },
      'tolerations[0].operator: got "In", expected one of Exists, Equal',
    ],
    [
      'toleration effect',
      { tolerations: [{ key: 'a', effect: 'NoRun' }] },
      'tolerations[0].effect: got "NoRun", expected one of NoSchedule, PreferNoSchedule, NoExecute',
    ],
    [
      'toleration Exists value',
      { tolerations: [{ key: 'a', operator: 'Exists', value: 'x' }] },
      'tolerations[0].value: got "x", expected no value when operator is Exists',
    ],
    [
      'tolerationSeconds',
      { tolerations: [{ key: 'a', effect: 'NoSchedule', tolerationSeconds: 30 }] },
      'tolerations[0].tolerationSeconds: got 30, expected no tolerationSeconds unless effect is NoExecute',
    ],
    ['failurePolicy', { failurePolicy: 'Retry' }, 'failurePolicy: got "Retry", expected one of Fail, Ignore'],
    ['certificateMode', { certificateMode: 'manual' }, 'certificateMode: got "manual", expected one of self-managed, cert-manager'],
    ['metrics', { metrics: 'yes' }, 'metrics: got "yes", expected true or false'],
    ['serviceMonitor', { serviceMonitor: 1 }, 'serviceMonitor: got 1, expected true or false'],
    [
      'serviceMonitor without metrics',
      { metrics: false, serviceMonitor: true },
      'serviceMonitor: got true, expected false when metrics is false (the ServiceMonitor scrapes the metrics Service)',
    ],
    [
      'image',
      { image: 'my image' },
      'image: got "my image", expected an image reference such as registry.example.com/tensor-fusion-controller:0.1.0, optionally pinned by @sha256:<64 hex digits>',
    ],
    [
      'nodeImage',
      { nodeImage: '' },
      'nodeImage: got "", expected an image reference such as registry.example.com/tensor-fusion-controller:0.1.0, optionally pinned by @sha256:<64 hex digits>',
    ],
    [
      'nodeImage digest',
      { nodeImage: 'node:24-alpine@sha256:abc' },
      'nodeImage: got "node:24-alpine@sha256:abc", expected an image reference such as registry.example.com/tensor-fusion-controller:0.1.0, optionally pinned by @sha256:<64 hex digits>',
    ],
    ['installCrds', { installCrds: 'no' }, 'installCrds: got "no", expected true or false'],
    [
      'schedulerVersion',
      { schedulerVersion: '1.36.3' },
      'schedulerVersion: got "1.36.3", expected a Kubernetes release tag such as v1.36.3',
    ],
    [
      'schedulerVersion image',
      { schedulerVersion: 'registry.k8s.io/kube-scheduler:v1.36.3' },
      'schedulerVersion: got "registry.k8s.io/kube-scheduler:v1.36.3", expected a Kubernetes release tag such as v1.36.3',
    ],
    ['grafanaDashboard', { grafanaDashboard: 'on' }, 'grafanaDashboard: got "on", expected true or false'],
    [
      'grafanaDashboardNamespace',
      { grafanaDashboard: true, grafanaDashboardNamespace: 'Monitoring' },
      'grafanaDashboardNamespace: got "Monitoring", expected a DNS label: at most 63 lowercase letters, digits and "-", starting and ending with a letter or digit',
    ],
    [
      'grafanaDashboardNamespace without grafanaDashboard',
      { grafanaDashboardNamespace: 'monitoring' },
      'grafanaDashboardNamespace: got "monitoring", expected no value unless grafanaDashboard is true',
    ],
    ['alertRules', { alertRules: 'RuleFile' }, 'alertRules: got "RuleFile", expected one of PrometheusRule, ConfigMap'],
    [
      'alertRuleLabels',
      { alertRules: 'PrometheusRule', alertRuleLabels: 'release=prom' },
      'alertRuleLabels: got "release=prom", expected a map of object label keys to string values',
    ],
    [
      'alertRuleLabels value',
      { alertRules: 'PrometheusRule', alertRuleLabels: { release: 1 } },
      'alertRuleLabels.release: got 1, expected a string label value',
    ],
    [
      'alertRuleLabels without alertRules',
      { alertRuleLabels: { release: 'prom' } },
      'alertRuleLabels: got {"release":"prom"}, expected no value unless alertRules is set',
    ],
  ])('rejects a bad %s with a message naming field, value and what is allowed', (_, props, expected) => {
    expect(message(props)).toBe(`TensorFusionController: ${expected}`);
  });

  it('reports every bad field at once, in prop order', () => {
    expect(message({ replicas: -1, failurePolicy: 'x' })).toBe(
      'TensorFusionController: replicas: got -1, expected an integer of at least 1\nfailurePolicy: got "x", expected one of Fail, Ignore',
    );
  });
});
