/** GpuNode in cdk8s and Pulumi: labels only (never spec.taints), GFD inventory labels, T9k labels. */
import { GpuNode as Cdk8sGpuNode, GpuNodeProps } from '../../components/cdk8s';
import { GpuNode as PulumiGpuNode } from '../../components/pulumi';
import { synthChart } from '../support/cdk8s';
import { capture, reads, registrationLog } from '../support/pulumi-mocks';
import { validateAll } from '../support/validate-k8s';
import { sameInBoth } from './frameworks';

const both = (id: string, props: GpuNodeProps) =>
  sameInBoth(
    (chart) => new Cdk8sGpuNode(chart, id, props),
    () => void new PulumiGpuNode(id, props),
  );

describe('GpuNode', () => {
  it('writes pool membership and GFD inventory labels (memory per GPU in MiB), vendor NVIDIA by default', async () => {
    const [node] = await both('a100', {
      nodeName: 'gpu-a100-0',
      pools: ['default-pool', 'training'],
      gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 8, memory: '80Gi' },
    });
    expect(node).toEqual({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'gpu-a100-0',
        labels: {
          'tensor-fusion.ai/pool-default-pool': 'true',
          'tensor-fusion.ai/pool-training': 'true',
          'nvidia.com/gpu.present': 'true',
          'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB',
          'nvidia.com/gpu.count': '8',
          'nvidia.com/gpu.memory': '81920',
          'tensor-fusion.ai/hardware-vendor': 'NVIDIA',
        },
        annotations: { 'tensor-fusion.ai/gpu-node': 'true' },
      },
    });
    validateAll([node]);
  });

  it('accepts memory as bytes or as another binary quantity and writes MiB', async () => {
    const [bytes] = await both('n1', { nodeName: 'n1', gpu: { model: 'L4', count: 1, memory: 24 * 2 ** 30 } });
    expect(bytes.metadata.labels!['nvidia.com/gpu.memory']).toBe('24576');
    const [mi] = await both('n2', { nodeName: 'n2', gpu: { model: 'L4', count: 1, memory: '40960Mi' } });
    expect(mi.metadata.labels!['nvidia.com/gpu.memory']).toBe('40960');
  });

  it('writes only pool labels for a node GFD already labels, with no vendor unless given', async () => {
    const [node] = await both('gfd', { nodeName: 'gfd-node', pools: ['default-pool'] });
    expect(node.metadata.labels).toEqual({ 'tensor-fusion.ai/pool-default-pool': 'true' });
    const [amd] = await both('amd', { nodeName: 'amd-node', vendor: 'AMD', labels: { zone: 'a' } });
    expect(amd.metadata.labels).toEqual({ zone: 'a', 'tensor-fusion.ai/hardware-vendor': 'AMD' });
  });

  it('writes the T9k accelerator and allocation-mode labels, never the xgn taint', async () => {
    const [xgn] = await both('xgn', { nodeName: 't9k-xgn-0', t9k: { accelerator: 'nvidia-gpu', allocMode: 'xgn' } });
    expect(xgn.metadata.labels).toEqual({
      'sched.tensorstack.dev/accelerator': 'nvidia-gpu',
      'sched.tensorstack.dev/node-alloc-mode': 'xgn',
    });
    expect(xgn).not.toHaveProperty('spec');
    const [npu] = await both('npu', { nodeName: 'npu-0', t9k: { accelerator: 'huawei-npu' } });
    expect(npu.metadata.labels).toEqual({ 'sched.tensorstack.dev/accelerator': 'huawei-npu' });
  });

  it('synthesizes only apiVersion, kind, name and labels: no spec, no taints, no namespace even in a namespaced chart', () => {
    const objects = synthChart(
      (chart) =>
        new Cdk8sGpuNode(chart, 'n', {
          nodeName: 'n',
          pools: ['p'],
          gpu: { model: 'A', count: 1, memory: '16Gi' },
          t9k: { accelerator: 'nvidia-gpu', allocMode: 'xgn' },
        }),
      { namespace: 'ml' },
    );
    expect(objects).toHaveLength(1);
    expect(Object.keys(objects[0])).toEqual(['apiVersion', 'kind', 'metadata']);
    expect(Object.keys(objects[0].metadata).sort()).toEqual(['annotations', 'labels', 'name']);
    expect(objects[0].metadata.annotations).toEqual({ 'tensor-fusion.ai/gpu-node': 'true' });
  });

  it('registers a NodePatch (server-side apply) in Pulumi', async () => {
    const registered = await capture(() => void new PulumiGpuNode('patch', { nodeName: 'n', pools: ['p'] }));
    expect(registered.map((r) => r.type)).toEqual(['kubernetes:core/v1:NodePatch']);
  });

  it('reads the Node before the patch in Pulumi, and the patch waits for the read (a missing node must fail, not be created)', async () => {
    const log = registrationLog.length;
    const read = reads.length;
    await capture(() => void new PulumiGpuNode('guarded', { nodeName: 'gpu-7', pools: ['p'] }), ['kubernetes:core/v1:Node'], 200);
    expect(reads.slice(read)).toEqual([{ type: 'kubernetes:core/v1:Node', name: 'guarded', id: 'gpu-7' }]);
    // The component, the read (slow), then the NodePatch, which started only once the read was done.
    expect(registrationLog.slice(log)).toEqual([
      'start guarded',
      'done guarded',
      'start read guarded',
      'done read guarded',
      'start guarded',
      'done guarded',
    ]);
  });
});
