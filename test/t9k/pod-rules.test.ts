import { checkNoTensorFusionMix, checkSharedGpuPool, checkT9kPod, t9kPodTemplate } from '../../lib/t9k';

const t9kShared = t9kPodTemplate({ spec: { containers: [{ name: 'app' }] } }, { mode: 'shared-gpu', percent: 30 });

describe('checkNoTensorFusionMix', () => {
  it('flags tensor-fusion.ai annotations added to a T9k pod', () => {
    const annotated = { ...t9kShared, metadata: { annotations: { 'tensor-fusion.ai/gpupool': 'pool-a' } } };
    expect(checkNoTensorFusionMix(annotated)?.message).toBe(
      'metadata.annotations["tensor-fusion.ai/gpupool"]: got "pool-a", expected no tensor-fusion.ai GPU key on a pod that requests T9k resources (spec.containers[0].resources.limits["tensorstack.dev/nvidia-gpu-percent"]); use one GPU-sharing system per pod',
    );
    expect(checkT9kPod(annotated).map((i) => i.message)).toEqual([checkNoTensorFusionMix(annotated)?.message]);
  });

  it('flags the tensor-fusion.ai/enabled label on a T9k pod', () => {
    const labelled = { ...t9kShared, metadata: { labels: { 'tensor-fusion.ai/enabled': 'true' } } };
    expect(checkNoTensorFusionMix(labelled)?.message).toBe(
      'metadata.labels["tensor-fusion.ai/enabled"]: got "true", expected no tensor-fusion.ai GPU key on a pod that requests T9k resources (spec.containers[0].resources.limits["tensorstack.dev/nvidia-gpu-percent"]); use one GPU-sharing system per pod',
    );
  });

  it('accepts either system alone', () => {
    expect(checkNoTensorFusionMix(t9kShared)).toBeUndefined();
    expect(
      checkNoTensorFusionMix({
        metadata: { annotations: { 'tensor-fusion.ai/gpupool': 'p' } },
        spec: { containers: [{ name: 'a', resources: { limits: { cpu: 1 } } }] },
      }),
    ).toBeUndefined();
    expect(checkT9kPod(t9kShared)).toEqual([]);
  });
});

describe('checkSharedGpuPool', () => {
  it('flags a shared-GPU request on a pool whose nodes are all xgn', () => {
    expect(
      checkSharedGpuPool('training', [
        { name: 'gpu-a100-0', allocMode: 'xgn' },
        { name: 'gpu-a100-1', allocMode: 'xgn' },
      ])?.message,
    ).toBe(
      'mode: got "shared-gpu", expected exclusive-gpu or exclusive-node: every node of pool "training" is xgn (gpu-a100-0, gpu-a100-1); shared GPUs need an sgn node',
    );
  });

  it('accepts a pool with an sgn node, a node of unknown mode, or no known nodes', () => {
    expect(
      checkSharedGpuPool('p', [
        { name: 'a', allocMode: 'xgn' },
        { name: 'b', allocMode: 'sgn' },
      ]),
    ).toBeUndefined();
    expect(checkSharedGpuPool('p', [{ name: 'a', allocMode: 'xgn' }, { name: 'b' }])).toBeUndefined();
    expect(checkSharedGpuPool('p', [])).toBeUndefined();
  });
});
