/**
 * Both frameworks, with the real shipped bundle: parity (same props give deep-equal objects),
 * validity, construction-time errors that leave nothing behind, and the ConfigMap size budget.
 */
import { Chart, Testing } from 'cdk8s';
import { TensorFusionController as Cdk8sController } from '../../components/cdk8s/tensor-fusion-controller';
import { TensorFusionController as PulumiController } from '../../components/pulumi/tensor-fusion-controller';
import { loadControllerBundle } from '../../lib/contract/bundle-loader';
import { KubeObject } from '../../lib/k8s/object';
import {
  AGENT_BUNDLE_KEY,
  AGENT_PROGRAM,
  BUNDLE_KEY,
  bundleConfigMapName,
  CONFIGMAP_MAX_BYTES,
  SHIPPED_CONFIGMAP_BUDGET_BYTES,
  TensorFusionControllerProps,
} from '../../lib/render/controller';
import { sortObjects, synthChart } from '../support/cdk8s';
import { capture, objectsOf, valueOf } from '../support/pulumi-mocks';
import { validateAll } from '../support/validate-k8s';
import { find, Json, MODES } from '../render/controller/fixtures';

describe.each(Object.entries(MODES))('TensorFusionController parity (%s)', (_, modeProps) => {
  const props = modeProps as TensorFusionControllerProps;
  let cdk8sObjects: KubeObject[];
  let pulumiObjects: Record<string, unknown>[];

  beforeAll(async () => {
    // A chart namespace must not leak onto cluster-scoped objects nor override the controller's.
    cdk8sObjects = sortObjects(synthChart((chart) => new Cdk8sController(chart, 'controller', props), { namespace: 'chart-ns' }));
    pulumiObjects = sortObjects(objectsOf(await capture(() => void new PulumiController('tf', props))));
  });

  it('registers in Pulumi exactly what cdk8s synthesizes', () => {
    expect(pulumiObjects.map((o) => `${o.kind}/${(o.metadata as { name: string }).name}`)).toEqual(
      cdk8sObjects.map((o) => `${o.kind}/${o.metadata.name}`),
    );
    expect(pulumiObjects).toEqual(cdk8sObjects);
  });

  it('synthesizes only valid objects', () => {
    expect(() => validateAll(cdk8sObjects)).not.toThrow();
    expect(cdk8sObjects.some((o) => o.metadata.namespace === 'chart-ns')).toBe(false);
  });
});

describe('TensorFusionController components', () => {
  it('install the node agent by default with its own shipped bundle in both frameworks, in its namespace', async () => {
    const cdk8sObjects = sortObjects(synthChart((chart) => new Cdk8sController(chart, 'controller', {})));
    const pulumiObjects = sortObjects(objectsOf(await capture(() => void new PulumiController('tf', {}))));
    const bundle = loadControllerBundle();
    const names = [bundleConfigMapName(bundle), bundleConfigMapName({ ...bundle.agent, version: bundle.version }, AGENT_PROGRAM)];
    const bundles = cdk8sObjects.filter((o) => o.kind === 'ConfigMap' && names.includes(o.metadata.name));
    expect(bundles.map((o) => `${o.metadata.namespace}/${Object.keys((o as Json).binaryData)}`).sort()).toEqual([
      `tensor-fusion-system-agent/${AGENT_BUNDLE_KEY}`,
      `tensor-fusion-system/${BUNDLE_KEY}`,
    ]);
    expect(pulumiObjects).toEqual(cdk8sObjects);
  });

  it('expose the same outputs in both frameworks', async () => {
    const chart = new Chart(Testing.app(), 'outputs');
    const c = new Cdk8sController(chart, 'controller', { namespace: 'gpu-system' });
    let p!: PulumiController;
    await capture(() => {
      p = new PulumiController('outputs', { namespace: 'gpu-system' });
    });
    const outputs = {
      namespace: c.namespace,
      webhookServiceName: c.webhookServiceName,
      metricsServiceName: c.metricsServiceName,
      serviceAccountName: c.serviceAccountName,
    };
    expect(outputs).toEqual({
      namespace: 'gpu-system',
      webhookServiceName: 'tensor-fusion-webhook',
      metricsServiceName: 'tensor-fusion-controller-metrics',
      serviceAccountName: 'tensor-fusion-controller',
    });
    // Pulumi exposes them as Outputs (pulumi-eks style) with the same values.
    expect({
      namespace: await valueOf(p.namespace),
      webhookServiceName: await valueOf(p.webhookServiceName),
      metricsServiceName: await valueOf(p.metricsServiceName),
      serviceAccountName: await valueOf(p.serviceAccountName),
    }).toEqual(outputs);
    expect(new Cdk8sController(new Chart(Testing.app(), 'm'), 'c', { metrics: false }).metricsServiceName).toBeUndefined();
  });

  it('take schedulerVersion in both frameworks and run that kube-scheduler', async () => {
    const image = (objects: readonly KubeObject[]) =>
      ((find(objects, 'Deployment') as Json).spec.template.spec.containers as Json[]).find((c) => c.name === 'scheduler').image;
    const cdk8s = synthChart((chart) => new Cdk8sController(chart, 'controller', { schedulerVersion: 'v1.35.2' }));
    const pulumi = objectsOf(
      await capture(() => void new PulumiController('version', { schedulerVersion: 'v1.35.2' })),
    ) as unknown as KubeObject[];
    expect(image(cdk8s)).toBe('registry.k8s.io/kube-scheduler:v1.35.2');
    expect(image(pulumi)).toBe(image(cdk8s));
  });

  it('keep the cluster-scoped policy and PriorityClasses out of the chart namespace', () => {
    const objects = synthChart((chart) => new Cdk8sController(chart, 'controller', {}), { namespace: 'chart-ns' });
    const scoped = objects.filter((o) =>
      ['PriorityClass', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'].includes(o.kind),
    );
    // Four QoS PriorityClasses and the growth placeholders' one; eight policies (pod integrity, pod records, pod bindings, share resource, worker pods, controller
    // writes, node guard, quota status) and their bindings.
    expect(scoped.map((o) => o.kind).sort()).toEqual([
      ...Array(5).fill('PriorityClass'),
      ...Array(8).fill('ValidatingAdmissionPolicy'),
      ...Array(8).fill('ValidatingAdmissionPolicyBinding'),
    ]);
    for (const o of scoped) expect(o.metadata.namespace).toBeUndefined();
  });

  it('registers every Pulumi child under the component, the Namespace and CRDs first', async () => {
    const captured = await capture(() => void new PulumiController('order', {}));
    const kinds = captured.map((r) => (r.inputs as { kind: string }).kind);
    const firstOther = kinds.findIndex((k) => k !== 'Namespace' && k !== 'CustomResourceDefinition');
    expect(kinds.slice(firstOther)).not.toContain('Namespace');
    expect(kinds.slice(firstOther)).not.toContain('CustomResourceDefinition');
    expect(captured.find((r) => r.type === 'kubernetes:core/v1:Namespace')?.name).toBe('order-namespace-tensor-fusion-system');
  });

  it('keeps the Namespace resource name when installCrds is turned off (a rename would replace and empty it)', async () => {
    const captured = await capture(() => void new PulumiController('order', { installCrds: false }));
    expect(captured.find((r) => r.type === 'kubernetes:core/v1:Namespace')?.name).toBe('order-namespace-tensor-fusion-system');
  });

  it('fails at construction with the exact message and leaves nothing behind, in both frameworks', async () => {
    const expected = 'TensorFusionController: failurePolicy: got "Sometimes", expected one of Fail, Ignore';
    const bad = { failurePolicy: 'Sometimes' } as unknown as TensorFusionControllerProps;
    const chart = new Chart(Testing.app(), 'bad');
    expect(() => new Cdk8sController(chart, 'controller', bad)).toThrow(expected);
    expect(chart.node.children).toHaveLength(0);
    let error: unknown;
    const captured = await capture(() => {
      try {
        new PulumiController('bad', bad);
      } catch (err) {
        error = err;
      }
    });
    expect((error as Error).message).toBe(expected);
    expect(captured).toEqual([]);
  });
});

describe('shipped bundles', () => {
  it('leave every shipped ConfigMap within the budget of 800 KiB serialized (of the 1 MiB an object may hold)', () => {
    const bundle = loadControllerBundle();
    const configMaps = synthChart((chart) => new Cdk8sController(chart, 'controller', {})).filter((o) => o.kind === 'ConfigMap') as Json[];
    const sizes = configMaps.map((cm) => ({ name: cm.metadata.name as string, bytes: Buffer.byteLength(JSON.stringify(cm)) }));
    // Printed for the report: what each ConfigMap weighs.
    // eslint-disable-next-line no-console
    console.log(JSON.stringify({ controllerGzipBytes: bundle.gzippedSize, agentGzipBytes: bundle.agent.gzippedSize, configMaps: sizes }));
    const over = sizes.filter((s) => s.bytes > SHIPPED_CONFIGMAP_BUDGET_BYTES);
    expect(over).toEqual([]);
    expect(SHIPPED_CONFIGMAP_BUDGET_BYTES).toBeLessThan(CONFIGMAP_MAX_BYTES);
    // Both bundles ship, each once: the controller's and the agent's.
    const decoded = configMaps.flatMap((cm) => Object.values(cm.binaryData ?? {}).map((b) => Buffer.from(b as string, 'base64').length));
    expect(decoded.sort()).toEqual([bundle.gzippedSize, bundle.agent.gzippedSize].sort());
  });

  it('is what the Deployment runs: its checksum is on the pod template', () => {
    const objects = synthChart((chart) => new Cdk8sController(chart, 'controller', {}));
    expect((find(objects, 'Deployment') as Json).spec.template.metadata.annotations['tensor-fusion.ai/controller-bundle-sha256']).toBe(
      loadControllerBundle().sha256,
    );
  });
});
