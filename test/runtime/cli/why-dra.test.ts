/** `kubectl tf why` for a DRA pod: which capacity was short, from the node's ResourceSlice and the allocated claims. */
import { draGpus, draWhyLines } from '../../../lib/runtime/cli/why-dra';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import type { ShareRequest } from '../../../lib/runtime/shared/share';

const GiB = 2 ** 30;
const policy = (value: string, unit: string) => ({ value, requestPolicy: { default: unit, validRange: { min: unit, step: unit } } });

function slice(node: string, models = ['A100', 'A100']): K8sObject {
  return {
    metadata: { name: `${node}-gpu.tensor-fusion.ai` },
    spec: {
      driver: 'gpu.tensor-fusion.ai',
      nodeName: node,
      pool: { name: node },
      devices: models.map((model, i) => ({
        name: `gpu-${i}`,
        attributes: { model: { string: model }, index: { int: i } },
        capacity: { tflops: policy('312', '1'), memory: policy('80Gi', '1Gi') },
      })),
    },
  };
}

function claim(node: string, device: string, tflops: string, memory: string, driver = 'gpu.tensor-fusion.ai'): K8sObject {
  return {
    metadata: { name: `c-${node}-${device}-${memory}` },
    status: {
      allocation: { devices: { results: [{ request: 'gpu', driver, pool: node, device, consumedCapacity: { tflops, memory } }] } },
    },
  };
}

const share = (s: Partial<ShareRequest>): ShareRequest => ({
  pool: 'dra',
  qos: 'medium',
  gpuCount: 1,
  tflopsRequest: 10,
  tflopsLimit: 10,
  vramRequest: 4 * GiB,
  vramLimit: 4 * GiB,
  ...s,
});

const nodes = new Set(['a', 'b']);
const slices = [slice('a'), slice('b'), slice('elsewhere')];
const claims = [
  claim('a', 'gpu-0', '10', '78Gi'),
  claim('a', 'gpu-1', '300', '10Gi'),
  claim('b', 'gpu-0', '10', '75Gi'),
  claim('b', 'gpu-1', '10', '76Gi'),
  claim('b', 'gpu-1', '10', '70Gi', 'other.example.com'),
];

test('counts each GPU of the pool less what the allocated claims of our driver consume', () => {
  const gpus = draGpus(slices, claims, nodes, 'dra');
  expect(gpus.map((g) => [g.node, g.device, g.freeTflops, g.freeVram / GiB])).toEqual([
    ['a', 'gpu-0', 302, 2],
    ['a', 'gpu-1', 12, 70],
    ['b', 'gpu-0', 302, 5],
    ['b', 'gpu-1', 302, 4],
  ]);
});

test('names the capacity that was short on each node, rounding the request up by the request policy', () => {
  const gpus = draGpus(slices, claims, nodes, 'dra');
  // 4500Mi rounds up to 5Gi: b's gpu-0 (5Gi free) still fits it, a's VRAM-rich gpu-1 lacks TFLOPS for 20.
  expect(draWhyLines(share({ tflopsRequest: 20, vramRequest: 4500 * 2 ** 20 }), gpus).lines).toEqual([
    'Node b has room for its claim now: kube-scheduler should allocate it at its next try.',
  ]);
  // 5Gi and a byte rounds up to 6Gi: b has no GPU left, a's GPUs are short of one thing each.
  expect(draWhyLines(share({ tflopsRequest: 20, vramRequest: 5 * GiB + 1 }), gpus).nodeReasons).toEqual({
    'no GPU has room: not enough free TFLOPS (1 GPU), not enough free VRAM (1 GPU)': 1,
    'not enough free VRAM on any GPU': 1,
  });
  expect(draWhyLines(share({ tflopsRequest: 20, vramRequest: 6 * GiB }), gpus)).toEqual({
    lines: [
      "No node of pool dra can allocate its claim (2 nodes), counting the GPUs' ResourceSlices less the allocated claims:",
      '  1 node: no GPU has room: not enough free TFLOPS (1 GPU), not enough free VRAM (1 GPU)',
      '  1 node: not enough free VRAM on any GPU',
      'The most free VRAM on one GPU is 70Gi (a/gpu-1, 12 TFLOPS free).',
    ],
    nodeReasons: {
      'no GPU has room: not enough free TFLOPS (1 GPU), not enough free VRAM (1 GPU)': 1,
      'not enough free VRAM on any GPU': 1,
    },
  });
  expect(draWhyLines(share({ tflopsRequest: 5, vramRequest: 71 * GiB }), gpus).nodeReasons).toEqual({
    'not enough free VRAM on any GPU': 2,
  });
});

test('several GPUs: how many have room of those asked; a model the pool lacks is named', () => {
  const gpus = draGpus([slice('a'), slice('b', ['H100', 'A100'])], [], nodes, 'dra');
  expect(draWhyLines(share({ gpuCount: 3 }), gpus).nodeReasons).toEqual({ '2 of 2 GPUs have room, 3 asked (the others: too few GPUs)': 2 });
  expect(draWhyLines(share({ gpuCount: 2, gpuModel: 'H100' }), gpus).nodeReasons).toEqual({
    '0 of 2 GPUs have room, 2 asked (the others: not a H100)': 1,
    '1 of 2 GPUs have room, 2 asked (the others: not a H100)': 1,
  });
  expect(draWhyLines(share({}), []).lines).toEqual([
    'Pool dra has no node publishing a ResourceSlice of gpu.tensor-fusion.ai: the node agent publishes one per node.',
  ]);
});
