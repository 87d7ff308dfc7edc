import fc from 'fast-check';
import type { QosLevel } from '../../lib/model/rules';
import { ALLOCATION_ANNOTATION } from '../../lib/model/metadata-keys';
import {
  CONTROLLER_WRITTEN_KEYS,
  decodeGpuAnnotations,
  encodeGpuWorkload,
  GPU_WORKLOAD_ANNOTATIONS,
  GpuWorkloadOptions,
} from '../../lib/annotations';
import { annotationKey } from '../support/annotations';

describe('decodeGpuAnnotations', () => {
  it('parses TFLOPS to numbers, VRAM to bytes, booleans, integers and lists', () => {
    const { settings, issues } = decodeGpuAnnotations({
      'tensor-fusion.ai/tflops-request': '500m',
      'tensor-fusion.ai/vram-limit': '1.5Gi',
      'tensor-fusion.ai/auto-limits': 'false',
      'tensor-fusion.ai/replicas': '0',
      'tensor-fusion.ai/inject-container': 'a, b',
    });
    expect(issues).toEqual([]);
    expect(settings).toEqual({
      tflopsRequest: 0.5,
      vramLimit: 1.5 * 2 ** 30,
      autoLimits: false,
      replicas: 0,
      injectContainers: ['a', 'b'],
    });
  });

  it('ignores keys outside tensor-fusion.ai/', () => {
    const { settings, issues } = decodeGpuAnnotations({ 'app/qos': 'bogus', 'tensor-fusion.io/qos': 'x', 'nvidia.com/gpu': '1' });
    expect([settings, issues]).toEqual([{}, []]);
  });

  it('accepts the keys the controller writes', () => {
    expect(CONTROLLER_WRITTEN_KEYS.has(ALLOCATION_ANNOTATION)).toBe(true);
    expect(ALLOCATION_ANNOTATION).toBe('tensor-fusion.ai/allocation');
    const { settings, issues } = decodeGpuAnnotations({ [ALLOCATION_ANNOTATION]: '{"gpus":["gpu-0"]}', 'tensor-fusion.ai/qos': 'low' });
    expect([settings, issues]).toEqual([{ qos: 'low' }, []]);
  });

  it('accepts the share the webhook records and the placement values written at bind, so a copied pod decodes', () => {
    const written = ['share', 'gpu-ids', 'allocation-id', 'visible-devices', 'mps-memory-limit', 'mps-thread-percentage'].map(
      annotationKey,
    );
    expect(written.every((k) => CONTROLLER_WRITTEN_KEYS.has(k))).toBe(true);
    const { settings, issues } = decodeGpuAnnotations({
      ...Object.fromEntries(written.map((k) => [k, 'x'])),
      'tensor-fusion.ai/qos': 'high',
    });
    expect([settings, issues]).toEqual([{ qos: 'high' }, []]);
  });

  it('knows exactly the 18 annotations of seed 002 and the 6 upstream keys acted on', () => {
    expect(GPU_WORKLOAD_ANNOTATIONS.map((s) => s.key.replace('tensor-fusion.ai/', '')).sort()).toEqual([
      'auto-limits',
      'auto-replicas',
      'auto-requests',
      'compute-percent-limit',
      'compute-percent-request',
      'dedicated-gpu',
      'eviction-protection',
      'generate-workload',
      'gpu-count',
      'gpu-indices',
      'gpu-model',
      'gpupool',
      'inject-container',
      'is-local-gpu',
      'no-standalone-worker-mode',
      'qos',
      'replicas',
      'tflops-limit',
      'tflops-request',
      'vendor',
      'vram-limit',
      'vram-request',
      'workload',
      'workload-profile',
    ]);
  });

  it('returns nothing for input that is not a map', () => {
    for (const input of [undefined, null, 'x', 42, true]) {
      expect(decodeGpuAnnotations(input)).toEqual({ settings: {}, issues: [] });
    }
  });

  it('never throws, and every issue names a tensor-fusion.ai key, on arbitrary string maps', () => {
    const keys = fc.oneof(fc.string(), fc.constantFrom(...GPU_WORKLOAD_ANNOTATIONS.map((s) => s.key)), fc.string().map(annotationKey));
    const values = fc.oneof(fc.string(), fc.constantFrom('true', 'false', '0', '-1', '4Gi', '1e400', 'NaN', ' 10', 'a,,b'));
    const containers = fc.option(fc.array(fc.string(), { maxLength: 3 }), { nil: undefined });
    fc.assert(
      fc.property(fc.dictionary(keys, values), containers, (annotations, names) => {
        const { issues } = decodeGpuAnnotations(annotations, { containers: names });
        for (const issue of issues) {
          expect(issue.field.startsWith('tensor-fusion.ai/')).toBe(true);
          expect(issue.message.startsWith(`${issue.field}: got `)).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws on maps of arbitrary values', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...GPU_WORKLOAD_ANNOTATIONS.map((s) => s.key)), fc.anything()), (annotations) => {
        decodeGpuAnnotations(annotations, { containers: ['a', 'b'] });
      }),
      { numRuns: 500 },
    );
  });

  it('decodes whatever encode writes back to the same values', () => {
    const options: fc.Arbitrary<GpuWorkloadOptions> = fc.record(
      {
        pool: fc.constantFrom('default-pool', 'p1'),
        replicas: fc.nat(100),
        tflopsRequest: fc.integer({ min: 1, max: 50 }),
        vramRequest: fc.integer({ min: 1, max: 64 }).map((g) => g * 2 ** 30),
        qos: fc.constantFrom<QosLevel[]>('low', 'medium', 'high', 'critical'),
        isLocalGpu: fc.boolean(),
        gpuCount: fc.integer({ min: 1, max: 128 }),
        gpuModel: fc.constantFrom('A100', 'H100', 'L40s'),
        autoLimits: fc.boolean(),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(options, (o) => {
        const { settings, issues } = decodeGpuAnnotations(encodeGpuWorkload(o).annotations);
        expect(issues).toEqual([]);
        expect(settings).toEqual(o);
      }),
    );
  });
});
