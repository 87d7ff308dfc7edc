/**
 * Pods written for upstream TensorFusion: the keys that map onto this package's model act (percent of
 * a GPU, whole GPUs, device indices, vendor), the others are admitted with a warning naming the key,
 * and a typo of any known key is still refused with a did-you-mean. Also every other choice the
 * webhook makes for a pod is said in AdmissionReview warnings.
 */
import { ANNOTATION_PREFIX, GFD, SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import { nodeInventory } from '../../../lib/runtime/shared/capacity';
import { API_VERSION } from '../../../lib/model/group';
import { UPSTREAM_IGNORED_KEYS } from '../../../lib/annotations/upstream';
import { workerPod } from '../../../lib/runtime/webhook/workers';
import type { AdmissionReview } from '../../../lib/runtime/webhook/review';
import { ann } from '../../support/annotations';
import { patched, pod, review, useWebhookSuite } from './fixtures';

const LOCAL = { 'is-local-gpu': 'true', 'vram-request': '1Gi' };
/** A pool's own figures, keyed by the GPU product as GFD labels nodes. */
const BY_PRODUCT = { 'NVIDIA-A100-SXM4-80GB': '280', 'NVIDIA-H100-80GB-HBM3': '900', 'NVIDIA-H100-PCIe': '700' };

async function admit(annotations: Record<string, string>, extra: { containers?: string[] } = {}): Promise<AdmissionReview> {
  const p = pod({ name: 'p', annotations: ann(annotations), containers: extra.containers });
  const answer = await suite.webhook.handle(review(p));
  return { ...answer, request: { uid: '', object: patched(p, answer) } } as AdmissionReview;
}
const shareOf = (a: AdmissionReview) => JSON.parse((a.request!.object!.metadata.annotations as Record<string, string>)[SHARE_ANNOTATION]);
const denial = (a: AdmissionReview) => a.response!.status?.message;

const suite = useWebhookSuite(
  [
    { name: 'pool-a', nodes: 1, gpusPerNode: 4, tflops: 312, isDefault: true },
    { name: 'tuned', nodes: 1, gpusPerNode: 1, spec: { capacityConfig: { gpuTflops: { A100: '300' } } } },
    { name: 'remote', nodes: 1, gpusPerNode: 1, spec: { defaultUsingLocalGPU: false } },
    { name: 'by-product', nodes: 1, gpusPerNode: 1, spec: { capacityConfig: { gpuTflops: BY_PRODUCT } } },
  ],
  (double) => {
    // Before the webhook starts: it reads workloads from its cache only.
    double.put('tensorfusionworkloads', {
      apiVersion: API_VERSION,
      kind: 'TensorFusionWorkload',
      metadata: { name: 'fixed', namespace: 'default' },
      spec: {
        poolName: 'pool-a',
        isLocalGPU: false,
        replicas: 2,
        qos: 'high',
        resources: { requests: { tflops: '50', vram: '1Gi' }, limits: { tflops: '50', vram: '1Gi' } },
      },
    });
  },
);

describe('compute-percent-request and -limit', () => {
  it("turn a percent of the model's TFLOPS (catalog, or the pool's gpuTflops) into the share's TFLOPS", async () => {
    const a = await admit({ ...LOCAL, 'gpu-model': 'A100', 'compute-percent-request': '25', 'compute-percent-limit': '50' });
    expect(a.response!.allowed).toBe(true);
    expect(shareOf(a)).toMatchObject({ tflopsRequest: 78, tflopsLimit: 156, gpuModel: 'A100' });
    const tuned = await admit({ ...LOCAL, gpupool: 'tuned', 'gpu-model': 'A100', 'compute-percent-request': '10' });
    expect(shareOf(tuned)).toMatchObject({ tflopsRequest: 30, tflopsLimit: 30 });
  });

  it('need a GPU model whose TFLOPS are known', async () => {
    expect(denial(await admit({ ...LOCAL, 'compute-percent-request': '25' }))).toBe(
      'tensor-fusion.ai/compute-percent-request: got "25", expected a value together with a tensor-fusion.ai/gpu-model whose TFLOPS are known (the GPU catalog or GPUPool.spec.capacityConfig.gpuTflops)',
    );
    expect(denial(await admit({ ...LOCAL, 'gpu-model': 'Z9', 'compute-percent-request': '25' }))).toBe(
      'tensor-fusion.ai/compute-percent-request: got "25", expected a value together with a tensor-fusion.ai/gpu-model whose TFLOPS are known (the GPU catalog or GPUPool.spec.capacityConfig.gpuTflops); tensor-fusion.ai/gpu-model "Z9" is in neither',
    );
  });

  it('are refused with a model name that selects GPUs of different TFLOPS, where the share could land on another model than it was sized for', async () => {
    expect(denial(await admit({ ...LOCAL, 'gpu-model': 'H100', 'compute-percent-request': '50' }))).toBe(
      'tensor-fusion.ai/compute-percent-request: got "50", expected a value together with a tensor-fusion.ai/gpu-model that selects GPUs of one TFLOPS figure; ' +
        'tensor-fusion.ai/gpu-model "H100" selects H100 (989), H100-NVL (835), H100-PCIe (756), so the share would be sized for one and could land on another: ' +
        'name one model (H100_SXM, H100-NVL, H100-PCIe)',
    );
    // One exact model: 50 % of the PCIe card's 756 TFLOPS, and the share only lands on that model.
    const pcie = await admit({ ...LOCAL, 'gpu-model': 'H100-PCIe', 'compute-percent-request': '50' });
    expect(shareOf(pcie)).toMatchObject({ tflopsRequest: 378, gpuModel: 'H100-PCIe' });
    expect(shareOf(await admit({ ...LOCAL, 'gpu-model': 'H100_SXM', 'compute-percent-request': '50' }))).toMatchObject({
      tflopsRequest: 494.5,
      gpuModel: 'H100_SXM',
    });
  });

  it('are refused beside TFLOPS, above 100 or below the request', async () => {
    expect(denial(await admit({ ...LOCAL, 'gpu-model': 'A100', 'tflops-request': '10', 'compute-percent-limit': '50' }))).toBe(
      'tensor-fusion.ai/compute-percent-limit: got "50", expected nothing, since tensor-fusion.ai/tflops-request is set: a share is written in TFLOPS or in percent of a GPU, not both',
    );
    expect(denial(await admit({ ...LOCAL, 'gpu-model': 'A100', 'compute-percent-request': '150' }))).toBe(
      'tensor-fusion.ai/compute-percent-request: got "150", expected a percent of one GPU\'s compute, more than 0 and at most 100, such as 50',
    );
    expect(denial(await admit({ ...LOCAL, 'gpu-model': 'A100', 'compute-percent-request': '50', 'compute-percent-limit': '20' }))).toBe(
      'tensor-fusion.ai/compute-percent-limit: got "20", expected at least tensor-fusion.ai/compute-percent-request (50)',
    );
  });
});

describe('dedicated-gpu', () => {
  it("reserves all of the model's TFLOPS, so no other share fits on the GPU", async () => {
    const a = await admit({ ...LOCAL, 'gpu-model': 'A100', 'dedicated-gpu': 'true' });
    expect(shareOf(a)).toMatchObject({ tflopsRequest: 312, tflopsLimit: 312 });
  });

  it('is refused with a family name whose models differ in TFLOPS: a whole H100 SXM would never fit an H100 PCIe', async () => {
    expect(denial(await admit({ ...LOCAL, 'gpu-model': 'V100', 'dedicated-gpu': 'true' }))).toBe(
      'tensor-fusion.ai/dedicated-gpu: got "true", expected a value together with a tensor-fusion.ai/gpu-model that selects GPUs of one TFLOPS figure; ' +
        'tensor-fusion.ai/gpu-model "V100" selects V100 (125), V100-PCIe (112), so the share would be sized for one and could land on another: name one model (V100_SXM, V100-PCIe)',
    );
    expect(shareOf(await admit({ ...LOCAL, 'gpu-model': 'V100-PCIe', 'dedicated-gpu': 'true' }))).toMatchObject({
      tflopsRequest: 112,
      tflopsLimit: 112,
    });
  });

  it('needs a known model and takes no amount of compute beside it', async () => {
    expect(denial(await admit({ ...LOCAL, 'dedicated-gpu': 'true' }))).toBe(
      'tensor-fusion.ai/dedicated-gpu: got "true", expected a value together with a tensor-fusion.ai/gpu-model whose TFLOPS are known (the GPU catalog or GPUPool.spec.capacityConfig.gpuTflops)',
    );
    expect(denial(await admit({ ...LOCAL, 'gpu-model': 'A100', 'dedicated-gpu': 'true', 'tflops-limit': '20' }))).toBe(
      'tensor-fusion.ai/tflops-limit: got "20", expected nothing, since tensor-fusion.ai/dedicated-gpu is "true" (the whole GPU\'s TFLOPS)',
    );
  });
});

describe("a pool's own TFLOPS by product", () => {
  /** The figure the pool's GPUs of `product` get (what the GPU node reconciler and kubectl tf plan write). */
  const gpuFigure = (product: string) => nodeInventory({ [GFD.product]: product, [GFD.count]: '1' }, BY_PRODUCT)!.tflopsPerGpu;
  const onPool = { ...LOCAL, gpupool: 'by-product' };

  it("size dedicated-gpu and compute-percent for a model by the pool's figure for its products, exactly the GPU's", async () => {
    expect(gpuFigure('NVIDIA-A100-SXM4-80GB')).toBe(280);
    for (const model of ['A100', 'a100', 'A100_SXM_80G', 'NVIDIA-A100-SXM4-80GB']) {
      const whole = await admit({ ...onPool, 'gpu-model': model, 'dedicated-gpu': 'true' });
      expect(shareOf(whole)).toMatchObject({ tflopsRequest: 280, tflopsLimit: 280 });
    }
    const half = await admit({ ...onPool, 'gpu-model': 'A100', 'compute-percent-request': '50' });
    expect(shareOf(half)).toMatchObject({ tflopsRequest: 140, tflopsLimit: 140 });
    // A model the pool sets no figure for keeps the catalog's, as its GPUs do.
    expect(gpuFigure('NVIDIA-L4')).toBe(121);
    expect(shareOf(await admit({ ...onPool, 'gpu-model': 'L4', 'dedicated-gpu': 'true' }))).toMatchObject({ tflopsRequest: 121 });
  });

  it("a family: the pool's figures for its products stand for their models, the catalog for the rest; one figure or refused", async () => {
    expect(denial(await admit({ ...onPool, 'gpu-model': 'H100', 'dedicated-gpu': 'true' }))).toBe(
      'tensor-fusion.ai/dedicated-gpu: got "true", expected a value together with a tensor-fusion.ai/gpu-model that selects GPUs of one TFLOPS figure; ' +
        'tensor-fusion.ai/gpu-model "H100" selects NVIDIA-H100-80GB-HBM3 (900), H100-NVL (835), NVIDIA-H100-PCIe (700), so the share would be sized for one and could land on another: name one model (H100-NVL)',
    );
    expect(gpuFigure('NVIDIA-H100-PCIe')).toBe(700);
    expect(shareOf(await admit({ ...onPool, 'gpu-model': 'H100-PCIe', 'dedicated-gpu': 'true' }))).toMatchObject({ tflopsRequest: 700 });
    expect(shareOf(await admit({ ...onPool, 'gpu-model': 'H100_SXM', 'compute-percent-request': '10' }))).toMatchObject({
      tflopsRequest: 90,
    });
  });

  it('a pod that names no model is refused, whatever the pool sets', async () => {
    expect(denial(await admit({ ...onPool, 'dedicated-gpu': 'true' }))).toBe(
      'tensor-fusion.ai/dedicated-gpu: got "true", expected a value together with a tensor-fusion.ai/gpu-model whose TFLOPS are known (the GPU catalog or GPUPool.spec.capacityConfig.gpuTflops)',
    );
  });
});

describe('gpu-indices', () => {
  it('records the indices in the share and sets the GPU count', async () => {
    const a = await admit({ ...LOCAL, 'tflops-request': '10', 'gpu-indices': '1,3' });
    expect(shareOf(a)).toMatchObject({ gpuCount: 2, gpuIndices: [1, 3] });
  });

  it('refuses a malformed list and a gpu-count that disagrees', async () => {
    expect(denial(await admit({ ...LOCAL, 'tflops-request': '10', 'gpu-indices': '1,1' }))).toBe(
      'tensor-fusion.ai/gpu-indices: got "1,1", expected a comma-separated list of distinct GPU indices (integers from 0), at most 128, such as "0,1"',
    );
    expect(denial(await admit({ ...LOCAL, 'tflops-request': '10', 'gpu-indices': '0,1', 'gpu-count': '3' }))).toBe(
      'tensor-fusion.ai/gpu-count: got "3", expected 2 (the number of tensor-fusion.ai/gpu-indices) or nothing',
    );
  });
});

describe('vendor and eviction-protection', () => {
  it('accepts NVIDIA in any case and refuses another vendor', async () => {
    expect((await admit({ ...LOCAL, 'tflops-request': '10', vendor: 'nvidia' })).response!.allowed).toBe(true);
    expect(denial(await admit({ ...LOCAL, 'tflops-request': '10', vendor: 'AMD' }))).toBe(
      'tensor-fusion.ai/vendor: got "AMD", expected "NVIDIA", the vendor of every GPU this package manages',
    );
  });

  it('checks eviction-protection as a duration and warns that it has no effect', async () => {
    const a = await admit({ ...LOCAL, 'tflops-request': '10', 'eviction-protection': '1h30m' });
    expect(a.response!.warnings).toEqual([
      'tensor-fusion.ai/eviction-protection: "1h30m" has no effect: upstream TensorFusion prices the protection window, and this package has no pricing',
    ]);
    expect(denial(await admit({ ...LOCAL, 'tflops-request': '10', 'eviction-protection': 'soon' }))).toBe(
      'tensor-fusion.ai/eviction-protection: got "soon", expected a duration such as "30m" or "1h30m"',
    );
  });
});

describe('upstream keys not acted on', () => {
  it('admits the pod with one warning per key, naming it and why', async () => {
    const keys = Object.fromEntries([...UPSTREAM_IGNORED_KEYS.keys()].map((k) => [k.slice(ANNOTATION_PREFIX.length), 'x']));
    const a = await admit({ ...LOCAL, 'tflops-request': '10', ...keys });
    expect(a.response!.allowed).toBe(true);
    expect(a.response!.warnings).toHaveLength(UPSTREAM_IGNORED_KEYS.size);
    expect(a.response!.warnings).toContain('tensor-fusion.ai/gang-enabled: "x" is not acted on: there is no gang scheduling');
    expect(a.response!.warnings).toContain(
      'tensor-fusion.ai/isolation: "x" is not acted on: the isolation is always MPS limits on a shared GPU (use dedicated-gpu for a GPU of its own)',
    );
  });

  it('still refuses a typo of one, or of an implemented upstream key, with a did-you-mean', async () => {
    expect(denial(await admit({ ...LOCAL, 'tflops-request': '10', 'gang-enabeld': 'true' }))).toBe(
      'tensor-fusion.ai/gang-enabeld: got "true", expected a known tensor-fusion.ai annotation; did you mean tensor-fusion.ai/gang-enabled?',
    );
    expect(denial(await admit({ ...LOCAL, 'tflops-request': '10', 'dedicated-gpus': 'true' }))).toBe(
      'tensor-fusion.ai/dedicated-gpus: got "true", expected a known tensor-fusion.ai annotation; did you mean tensor-fusion.ai/dedicated-gpu?',
    );
  });
});

describe('denials are capped', () => {
  it('lists the first ten issues of 500 unknown keys and counts the rest', async () => {
    const keys = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`zz-unknown-${String(i).padStart(3, '0')}`, 'x']));
    const message = denial(await admit({ ...LOCAL, 'tflops-request': '10', ...keys }))!;
    const lines = message.split('\n');
    expect(lines).toHaveLength(11);
    expect(lines[0]).toMatch(/^tensor-fusion\.ai\/zz-unknown-000: got "x", expected a known tensor-fusion\.ai annotation/);
    expect(lines[10]).toBe(
      '(and 490 more issues, fields tensor-fusion.ai/zz-unknown-010, tensor-fusion.ai/zz-unknown-011, tensor-fusion.ai/zz-unknown-012, ...)',
    );
    expect(message.length).toBeLessThan(8_000);
  });
});

describe('warnings for the choices the webhook makes', () => {
  it('warns that a remote pod gets no GPU when its pool names no worker image', async () => {
    const a = await admit({ gpupool: 'remote', 'tflops-request': '10', 'vram-request': '1Gi', workload: 'infer' });
    expect(a.response!.allowed).toBe(true);
    expect(a.response!.warnings).toEqual([
      'tensor-fusion.ai/is-local-gpu: remote mode, but GPUPool "remote" names no worker image (spec.componentConfig.worker), so TensorFusionWorkload default/infer gets no worker pods and this pod no GPU until one is set',
    ]);
  });

  it('warns when spec.nodeName becomes an affinity and when copied placement records go', async () => {
    const p = pod({ name: 'n', annotations: { ...ann({ ...LOCAL, 'tflops-request': '10' }), 'tensor-fusion.ai/gpu-ids': 'g0' } });
    (p.spec as Record<string, unknown>).nodeName = 'pool-a-node-0';
    expect((await suite.webhook.handle(review(p))).response!.warnings).toEqual([
      "metadata.annotations: removed tensor-fusion.ai/gpu-ids, copied from another pod's placement; this pod gets its own at bind",
      'spec.nodeName: "pool-a-node-0" became a required node affinity, so that tensor-fusion-scheduler places the GPU share on that node',
    ]);
  });
});

describe('two inject-containers (MPS limits)', () => {
  it('records the number of containers in the share, so each gets an equal part of the MPS limits, and says so', async () => {
    const a = await admit({ ...LOCAL, 'tflops-request': '10', 'inject-container': 'a,b' }, { containers: ['a', 'b'] });
    expect(shareOf(a)).toMatchObject({ containers: 2 });
    expect(a.response!.warnings).toEqual([
      "tensor-fusion.ai/inject-container: the 2 containers a, b share the pod's GPU share; each gets 1/2 of its MPS limits",
    ]);
  });
});

describe('an existing TensorFusionWorkload that was not generated (issue 14.4)', () => {
  it('refuses a pod whose share contradicts it, naming both values', async () => {
    const a = await admit({ ...LOCAL, 'tflops-request': '10', workload: 'fixed' });
    expect(denial(a)).toBe(
      [
        'tensor-fusion.ai/is-local-gpu: got "true", expected "false", the spec.isLocalGPU of TensorFusionWorkload default/fixed, which this pod reuses and which was not generated, so it is not changed',
        'tensor-fusion.ai/qos: got "medium", expected "high", the spec.qos of TensorFusionWorkload default/fixed, which this pod reuses and which was not generated, so it is not changed',
        'tensor-fusion.ai/tflops-request: got "10", expected "50", the spec.resources.requests.tflops of TensorFusionWorkload default/fixed, which this pod reuses and which was not generated, so it is not changed',
        'tensor-fusion.ai/tflops-limit: got "10", expected "50", the spec.resources.limits.tflops of TensorFusionWorkload default/fixed, which this pod reuses and which was not generated, so it is not changed',
      ].join('\n'),
    );
  });

  it('admits its worker pods, the local half of its remote share', async () => {
    const fixed = suite.double.getObject('tensorfusionworkloads', 'fixed', 'default') as never;
    const pool = {
      apiVersion: API_VERSION,
      kind: 'GPUPool',
      metadata: { name: 'pool-a' },
      spec: { componentConfig: { worker: { image: 'registry.example/worker:1' } } },
    } as never;
    const worker = workerPod(fixed, pool, 0)!;
    const a = await suite.webhook.handle(review(worker as never));
    expect(a.response!.status?.message).toBeUndefined();
    expect(a.response!.allowed).toBe(true);
    expect(shareOf({ ...a, request: { uid: '', object: patched(worker as never, a) } } as AdmissionReview)).toMatchObject({
      pool: 'pool-a',
      qos: 'high',
      tflopsRequest: 50,
    });
  });

  it('admits a pod that agrees with it, saying that it is reused as it is', async () => {
    const a = await admit({ 'is-local-gpu': 'false', qos: 'high', 'tflops-request': '50.0', 'vram-request': '1024Mi', workload: 'fixed' });
    expect(a.response!.allowed).toBe(true);
    expect(a.response!.warnings).toContain(
      'tensor-fusion.ai/workload: TensorFusionWorkload default/fixed exists and was not generated, so it is reused as it is and never changed',
    );
  });
});
