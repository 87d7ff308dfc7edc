/** GpuPool in cdk8s and Pulumi: same props, same GPUPool; defaults; every prop mapped. */
import { GpuPool as Cdk8sGpuPool, GpuPoolProps } from '../../components/cdk8s';
import { GpuPool as PulumiGpuPool } from '../../components/pulumi';
import { synthChart } from '../support/cdk8s';
import { fullGpuPoolProps } from '../support/api-examples';
import { validateAll } from '../support/validate-k8s';
import { sameInBoth } from './frameworks';

const both = (id: string, props: GpuPoolProps) =>
  sameInBoth(
    (chart) => new Cdk8sGpuPool(chart, id, props),
    () => void new PulumiGpuPool(id, props),
  );

describe('GpuPool', () => {
  it('selects nodes labelled tensor-fusion.ai/pool-<name> by default and writes defaultUsingLocalGPU: false', async () => {
    const [pool] = await both('gpus', { name: 'shared-a100' });
    expect(pool).toEqual({
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'GPUPool',
      metadata: { name: 'shared-a100' },
      spec: {
        nodeManagerConfig: {
          nodeSelector: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'tensor-fusion.ai/pool-shared-a100', operator: 'In', values: ['true'] }] }],
          },
        },
        defaultUsingLocalGPU: false,
      },
    });
    validateAll([pool]);
  });

  it('names the pool after the construct id / resource name when no name is given', async () => {
    const [pool] = await both('from-id', {});
    expect(pool.metadata.name).toBe('from-id');
  });

  it('marks the default pool with the is-default-pool annotation, and only then', async () => {
    const [marked] = await both('p', { name: 'p', isDefault: true, annotations: { team: 'ml' } });
    expect(marked.metadata.annotations).toEqual({ team: 'ml', 'tensor-fusion.ai/is-default-pool': 'true' });
    const [plain] = await both('q', { name: 'q', isDefault: false });
    expect(plain.metadata.annotations).toBeUndefined();
  });

  it('writes shareDelivery when asked, and none by default', async () => {
    const [dra] = await both('p', { name: 'p', shareDelivery: 'DRA' });
    expect((dra.spec as { nodeManagerConfig: object }).nodeManagerConfig).toMatchObject({ shareDelivery: 'DRA' });
    const [plain] = await both('q', { name: 'q' });
    expect((plain.spec as { nodeManagerConfig: object }).nodeManagerConfig).not.toHaveProperty('shareDelivery');
  });

  it('writes defaultUsingLocalGPU: true when asked', async () => {
    const [pool] = await both('p', { name: 'p', defaultUsingLocalGpu: true });
    expect((pool.spec as { defaultUsingLocalGPU: boolean }).defaultUsingLocalGPU).toBe(true);
  });

  it('maps every prop to its spec field', async () => {
    const { nodeSelector, workerPodTemplate } = fullGpuPoolProps();
    const [pool] = await both('everything', { name: 'everything', ...fullGpuPoolProps() });
    expect(pool).toEqual({
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'GPUPool',
      metadata: {
        name: 'everything',
        labels: { tier: 'gold' },
        annotations: { owner: 'platform', 'tensor-fusion.ai/is-default-pool': 'true' },
      },
      spec: {
        nodeManagerConfig: { nodeSelector, defaultIsolationMode: 'shared' },
        capacityConfig: {
          minResources: { tflops: '100', vram: '80Gi', cpu: '8', memory: '64Gi' },
          maxResources: { tflops: '1000', vram: '640Gi', cpu: '64', memory: '512Gi' },
          oversubscription: { tflopsOversellRatio: 300, vramExpandToHostMem: 50, vramExpandToHostDisk: 20 },
          gpuTflops: { 'NVIDIA-A100-SXM4-80GB': '312' },
        },
        qosConfig: { defaultQoS: 'high' },
        defaultUsingLocalGPU: true,
        placement: { mode: 'CompactFirst' },
        growth: { resource: 'example.com/gpu', gpusPerNode: 8 },
        componentConfig: { worker: { image: 'registry.example.com/worker:1.0', podTemplate: workerPodTemplate } },
      },
    });
    validateAll([pool]);
  });

  it('asks for nodes through nvidia.com/gpu unless growth names another resource', async () => {
    const [pool] = await both('grows', { name: 'grows', growth: { gpusPerNode: 4 } });
    expect(pool).toMatchObject({ spec: { growth: { resource: 'nvidia.com/gpu', gpusPerNode: 4 } } });
    validateAll([pool]);
  });

  it('never carries a namespace, even in a chart that has one', () => {
    const objects = synthChart((chart) => new Cdk8sGpuPool(chart, 'p', { name: 'p' }), { namespace: 'ml' });
    expect(objects).toHaveLength(1);
    expect(objects[0].metadata).toEqual({ name: 'p' });
  });
});
