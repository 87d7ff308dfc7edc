import type { WorkloadProfileSpec } from '../../lib/api';
import { seedWorkloadProfileSpec } from '../support/api-examples';
import { decodeGpuAnnotations, resolveWorkloadSettings } from '../../lib/annotations';

const GiB = 2 ** 30;

// Seed 002's example WorkloadProfile (pool default-pool, tflops 5/15, vram 3Gi/3Gi, local GPU, A100).
const SEED_PROFILE: WorkloadProfileSpec = seedWorkloadProfileSpec();

const decode = (annotations: Record<string, string>) => {
  const { settings, issues } = decodeGpuAnnotations(annotations);
  expect(issues).toEqual([]);
  return settings;
};

describe('resolveWorkloadSettings: defaults', () => {
  it('fills qos, gpu count, local GPU, workload generation and worker mode', () => {
    const { settings, issues } = resolveWorkloadSettings({});
    expect(issues).toEqual([]);
    expect(settings).toEqual({
      qos: 'medium',
      isLocalGpu: false,
      gpuCount: 1,
      generateWorkload: true,
      noStandaloneWorkerMode: false,
      sources: {
        qos: 'default',
        isLocalGpu: 'default',
        gpuCount: 'default',
        generateWorkload: 'default',
        noStandaloneWorkerMode: 'default',
      },
    });
  });

  it('copies a lone limit to the request and a lone request to the limit', () => {
    const { settings } = resolveWorkloadSettings(decode({ 'tensor-fusion.ai/tflops-limit': '20', 'tensor-fusion.ai/vram-request': '4Gi' }));
    expect([settings.tflopsRequest, settings.tflopsLimit, settings.vramRequest, settings.vramLimit]).toEqual([20, 20, 4 * GiB, 4 * GiB]);
    expect(settings.sources).toMatchObject({
      tflopsRequest: 'derived',
      tflopsLimit: 'annotation',
      vramRequest: 'annotation',
      vramLimit: 'derived',
    });
  });
});

describe('resolveWorkloadSettings: precedence', () => {
  it('takes every field from the profile when no annotation sets it', () => {
    const { settings, issues } = resolveWorkloadSettings({}, SEED_PROFILE);
    expect(issues).toEqual([]);
    expect(settings).toMatchObject({
      pool: 'default-pool',
      qos: 'medium',
      isLocalGpu: true,
      gpuCount: 1,
      gpuModel: 'A100',
      replicas: 1,
      tflopsRequest: 5,
      tflopsLimit: 15,
      vramRequest: 3 * GiB,
      vramLimit: 3 * GiB,
      autoScalingConfig: {},
    });
    expect(settings.sources).toMatchObject({ pool: 'profile', qos: 'profile', isLocalGpu: 'profile', tflopsLimit: 'profile' });
  });

  it('lets annotations win over the profile, field by field', () => {
    const annotations = decode({
      'tensor-fusion.ai/gpupool': 'fast-pool',
      'tensor-fusion.ai/qos': 'high',
      'tensor-fusion.ai/is-local-gpu': 'false',
      'tensor-fusion.ai/gpu-count': '2',
      'tensor-fusion.ai/gpu-model': 'H100',
      'tensor-fusion.ai/replicas': '3',
      'tensor-fusion.ai/tflops-limit': '20',
      'tensor-fusion.ai/vram-request': '2Gi',
    });
    const { settings, issues } = resolveWorkloadSettings(annotations, SEED_PROFILE);
    expect(issues).toEqual([]);
    expect(settings).toMatchObject({
      pool: 'fast-pool',
      qos: 'high',
      isLocalGpu: false,
      gpuCount: 2,
      gpuModel: 'H100',
      replicas: 3,
      tflopsRequest: 5,
      tflopsLimit: 20,
      vramRequest: 2 * GiB,
      vramLimit: 3 * GiB,
    });
    expect(settings.sources).toMatchObject({
      pool: 'annotation',
      qos: 'annotation',
      isLocalGpu: 'annotation',
      gpuCount: 'annotation',
      gpuModel: 'annotation',
      replicas: 'annotation',
      tflopsRequest: 'profile',
      tflopsLimit: 'annotation',
      vramRequest: 'annotation',
      vramLimit: 'profile',
    });
  });

  it('lets the profile win over the pool, and the pool over the defaults', () => {
    const pool = { qosConfig: { defaultQoS: 'low' as const }, defaultUsingLocalGPU: true };
    const fromPool = resolveWorkloadSettings({}, {}, pool).settings;
    expect([fromPool.qos, fromPool.isLocalGpu, fromPool.sources.qos, fromPool.sources.isLocalGpu]).toEqual(['low', true, 'pool', 'pool']);
    const fromProfile = resolveWorkloadSettings({}, { qos: 'critical', isLocalGPU: false }, pool).settings;
    expect([fromProfile.qos, fromProfile.isLocalGpu]).toEqual(['critical', false]);
    const fromAnnotation = resolveWorkloadSettings(decode({ 'tensor-fusion.ai/qos': 'medium' }), { qos: 'critical' }, pool).settings;
    expect(fromAnnotation.qos).toBe('medium');
  });

  it('auto-* annotations set enable of the matching autoScalingConfig block and keep the rest', () => {
    const profile: WorkloadProfileSpec = {
      autoScalingConfig: {
        autoSetLimits: { enable: false, maxRatioToRequests: '5.0' },
        autoSetReplicas: { enable: true, scaleUpStep: '0.2' },
      },
    };
    const annotations = decode({ 'tensor-fusion.ai/auto-limits': 'true', 'tensor-fusion.ai/auto-requests': 'true' });
    const { settings } = resolveWorkloadSettings(annotations, profile);
    expect(settings.autoScalingConfig).toEqual({
      autoSetLimits: { enable: true, maxRatioToRequests: '5.0' },
      autoSetReplicas: { enable: true, scaleUpStep: '0.2' },
      autoSetRequests: { enable: true },
    });
    expect(settings.sources).toMatchObject({ autoSetLimits: 'annotation', autoSetReplicas: 'profile', autoSetRequests: 'annotation' });
    expect(profile.autoScalingConfig?.autoSetLimits?.enable).toBe(false);
    const off = resolveWorkloadSettings(decode({ 'tensor-fusion.ai/auto-replicas': 'false' }), profile).settings;
    expect(off.autoScalingConfig?.autoSetReplicas).toEqual({ enable: false, scaleUpStep: '0.2' });
    expect(resolveWorkloadSettings({}).settings.autoScalingConfig).toBeUndefined();
  });

  it('keeps the profile node affinity', () => {
    const nodeAffinity = {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In' as const, values: ['a'] }] }],
      },
    };
    expect(resolveWorkloadSettings({}, { nodeAffinity }).settings.nodeAffinity).toEqual(nodeAffinity);
  });
});

describe('resolveWorkloadSettings: the merged result is validated again', () => {
  it('rejects an annotation limit below the profile request', () => {
    const { issues } = resolveWorkloadSettings(decode({ 'tensor-fusion.ai/tflops-limit': '4' }), SEED_PROFILE);
    expect(issues.map((i) => i.message)).toEqual([
      'tensor-fusion.ai/tflops-limit: got "4", expected at least WorkloadProfile.spec.resources.requests.tflops (5)',
    ]);
  });

  it('rejects a profile vram limit below an annotation request', () => {
    const { issues } = resolveWorkloadSettings(decode({ 'tensor-fusion.ai/vram-request': '4Gi' }), SEED_PROFILE);
    expect(issues.map((i) => i.message)).toEqual([
      'WorkloadProfile.spec.resources.limits.vram: got "3Gi", expected at least tensor-fusion.ai/vram-request (4Gi)',
    ]);
  });

  it('rejects no-standalone-worker-mode when the resolved is-local-gpu is false', () => {
    const settings = decode({ 'tensor-fusion.ai/no-standalone-worker-mode': 'true', 'tensor-fusion.ai/is-local-gpu': 'true' });
    expect(resolveWorkloadSettings(settings).issues).toEqual([]);
    // Settings built by hand (not via decode) still meet the rule after the merge.
    expect(
      resolveWorkloadSettings({ noStandaloneWorkerMode: true }, {}, { defaultUsingLocalGPU: false }).issues.map((i) => i.message),
    ).toEqual([
      'tensor-fusion.ai/no-standalone-worker-mode: got "true", expected "false" or nothing, unless GPUPool.spec.defaultUsingLocalGPU is "true"',
    ]);
    expect(resolveWorkloadSettings({ noStandaloneWorkerMode: true }, { isLocalGPU: true }).issues).toEqual([]);
  });

  it('reports bad profile and pool values with their paths', () => {
    const profile = {
      resources: { requests: { tflops: 'lots', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } },
      qos: 'urgent',
      gpuCount: 0,
    };
    const { issues, settings } = resolveWorkloadSettings({}, profile as unknown as WorkloadProfileSpec, {
      qosConfig: { defaultQoS: 'none' as never },
    });
    expect(issues.map((i) => i.message)).toEqual([
      'WorkloadProfile.spec.qos: got "urgent", expected one of low, medium, high, critical',
      'GPUPool.spec.qosConfig.defaultQoS: got "none", expected one of low, medium, high, critical',
      'WorkloadProfile.spec.gpuCount: got 0, expected an integer from 1 to 128',
      `WorkloadProfile.spec.resources.requests.tflops: got "lots", expected a positive number of TFLOPS such as '10' or '0.5'`,
    ]);
    // Bad layers are skipped, so the result still holds usable values.
    expect([settings.qos, settings.gpuCount, settings.tflopsRequest]).toEqual(['medium', 1, 15]);
  });
});
