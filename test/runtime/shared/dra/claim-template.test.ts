import { claimTemplate, indexSelector, modelSelector } from '../../../../lib/runtime/shared/dra/claim-template';
import { resolvePodSettings, shareRequest, SettingsView } from '../../../../lib/runtime/shared/resolve-pod';
import { ANNOTATION } from '../../../../lib/annotations';
import type { GPUPool, WorkloadProfile } from '../../../../lib/api';
import type { ShareRequest } from '../../../../lib/runtime/shared/share';

const GiB = 2 ** 30;
const base: ShareRequest = {
  pool: 'p',
  qos: 'medium',
  gpuCount: 1,
  tflopsRequest: 10,
  tflopsLimit: 20,
  vramRequest: 4 * GiB,
  vramLimit: 8 * GiB,
};

const pool = { apiVersion: 'tensor-fusion.ai/v1', kind: 'GPUPool', metadata: { name: 'p' }, spec: {} } as unknown as GPUPool;
const profile = {
  apiVersion: 'tensor-fusion.ai/v1',
  kind: 'WorkloadProfile',
  metadata: { name: 'prof', namespace: 'ml' },
  spec: { gpuCount: 2, gpuModel: 'L40S', resources: { requests: { tflops: '30', vram: '12Gi' }, limits: { tflops: '60', vram: '12Gi' } } },
} as unknown as WorkloadProfile;
const view: SettingsView = {
  pool: (n) => (n === 'p' ? pool : undefined),
  poolNames: () => ['p'],
  defaultPool: () => 'p',
  profile: (ns, n) => (ns === 'ml' && n === 'prof' ? profile : undefined),
};

/** The template a pod's annotations become, through the webhook's own resolution. */
async function fromAnnotations(annotations: Record<string, string>): Promise<ReturnType<typeof claimTemplate>> {
  const r = await resolvePodSettings(annotations, 'ml', view);
  if (Array.isArray(r)) throw new Error(JSON.stringify(r));
  return claimTemplate('ml', shareRequest(r));
}

const request = (t: ReturnType<typeof claimTemplate>) => t.spec.spec.devices.requests[0].exactly;

describe('claimTemplate', () => {
  it('is the ResourceClaimTemplate the probe ran: one ExactCount request of our class with capacity requests', () => {
    expect(claimTemplate('ml', base)).toEqual({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: expect.stringMatching(/^tf-[0-9a-f]{12}$/), namespace: 'ml' },
      spec: {
        spec: {
          devices: {
            requests: [
              {
                name: 'gpu',
                exactly: {
                  deviceClassName: 'gpu.tensor-fusion.ai',
                  allocationMode: 'ExactCount',
                  count: 1,
                  capacity: { requests: { tflops: '10', memory: '4Gi' } },
                },
              },
            ],
          },
        },
      },
    });
  });

  it('is named by its spec alone: equal shapes share one name, QoS and limits do not change it, any request field does', () => {
    const name = (s: Partial<ShareRequest>) => claimTemplate('ml', { ...base, ...s }).metadata.name;
    expect(name({})).toBe(claimTemplate('other', base).metadata.name);
    expect(name({ qos: 'critical', tflopsLimit: 99, vramLimit: 70 * GiB, containers: 3, pool: 'q' })).toBe(name({}));
    const variants = [{ gpuCount: 2 }, { tflopsRequest: 11 }, { vramRequest: 5 * GiB }, { gpuModel: 'A100' }, { gpuIndices: [1] }];
    const names = new Set([name({}), ...variants.map(name)]);
    expect(names.size).toBe(variants.length + 1);
  });

  it('asks several GPUs as one request of that count on distinct devices (one device may be allocated many times)', () => {
    const d = claimTemplate('ml', { ...base, gpuCount: 3 }).spec.spec.devices;
    expect(d.requests[0].exactly.count).toBe(3);
    expect(d.constraints).toEqual([{ requests: ['gpu'], distinctAttribute: 'gpu.tensor-fusion.ai/uuid' }]);
    expect(claimTemplate('ml', base).spec.spec.devices.constraints).toBeUndefined();
  });

  it('names no capacity it asks none of (the request policy default applies, where a zero would make no device eligible)', () => {
    expect(request(claimTemplate('ml', { ...base, tflopsRequest: 0 })).capacity).toEqual({ requests: { memory: '4Gi' } });
    expect(request(claimTemplate('ml', { ...base, tflopsRequest: 0, vramRequest: 0 })).capacity).toBeUndefined();
    expect(request(claimTemplate('ml', { ...base, tflopsRequest: 2.5, vramRequest: 4500 * 2 ** 20 })).capacity).toEqual({
      requests: { tflops: '2.5', memory: '4500Mi' },
    });
    expect(request(claimTemplate('ml', { ...base, vramRequest: 1000.2 })).capacity?.requests.memory).toBe('1001');
  });

  it('selects the GPU model by the allocator rule: family, alias, and unknown models by their upper-case tokens', () => {
    expect(modelSelector('H100')).toBe(
      'device.attributes["gpu.tensor-fusion.ai"].model in ["H100-PCIe", "H100-NVL", "H100"] || ' +
        'device.attributes["gpu.tensor-fusion.ai"].model.startsWith("H100-")',
    );
    expect(modelSelector('A100_SXM_80G')).toBe(
      'device.attributes["gpu.tensor-fusion.ai"].model in ["A100", "A100-SXM-80G"] || ' +
        'device.attributes["gpu.tensor-fusion.ai"].model.startsWith("A100-SXM-80G-")',
    );
    expect(modelSelector('l40')).toContain('in ["L40"] ||');
  });

  it('selects device indices, sorted and once each', () => {
    expect(indexSelector([3, 1, 3])).toBe('device.attributes["gpu.tensor-fusion.ai"].index in [1, 3]');
  });
});

describe('the template a pod becomes, from its annotations and WorkloadProfile', () => {
  it('carries tflops-request and vram-request per GPU', async () => {
    const t = await fromAnnotations({ [ANNOTATION.tflopsRequest]: '25', [ANNOTATION.vramRequest]: '6Gi' });
    expect(request(t)).toMatchObject({ count: 1, capacity: { requests: { tflops: '25', memory: '6Gi' } } });
    expect(request(t).selectors).toBeUndefined();
  });

  it('carries gpu-count and gpu-model', async () => {
    const t = await fromAnnotations({
      [ANNOTATION.tflopsRequest]: '5',
      [ANNOTATION.vramRequest]: '1Gi',
      [ANNOTATION.gpuCount]: '2',
      [ANNOTATION.gpuModel]: 'A100',
    });
    expect(request(t).count).toBe(2);
    expect(request(t).selectors).toEqual([{ cel: { expression: modelSelector('A100') } }]);
  });

  it('carries gpu-indices as a selector and their count', async () => {
    const t = await fromAnnotations({ [ANNOTATION.tflopsRequest]: '5', [ANNOTATION.vramRequest]: '1Gi', [ANNOTATION.gpuIndices]: '2,0' });
    expect(request(t).count).toBe(2);
    expect(request(t).selectors).toEqual([{ cel: { expression: indexSelector([0, 2]) } }]);
  });

  it('takes what the pod leaves out from its WorkloadProfile (count, model, requests)', async () => {
    const t = await fromAnnotations({ [ANNOTATION.workloadProfile]: 'prof' });
    expect(request(t)).toMatchObject({ count: 2, capacity: { requests: { tflops: '30', memory: '12Gi' } } });
    expect(request(t).selectors).toEqual([{ cel: { expression: modelSelector('L40S') } }]);
  });

  it('is unchanged by qos, tflops-limit and vram-limit (they stay in the share record)', async () => {
    const plain = await fromAnnotations({ [ANNOTATION.tflopsRequest]: '5', [ANNOTATION.vramRequest]: '1Gi' });
    const more = await fromAnnotations({
      [ANNOTATION.tflopsRequest]: '5',
      [ANNOTATION.vramRequest]: '1Gi',
      [ANNOTATION.qos]: 'high',
      [ANNOTATION.tflopsLimit]: '50',
      [ANNOTATION.vramLimit]: '2Gi',
    });
    expect(more).toEqual(plain);
  });
});
