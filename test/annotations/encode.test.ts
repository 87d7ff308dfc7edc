import { ValidationError } from '../../lib/model/errors';
import { ANNOTATION, decodeGpuAnnotations, encodeGpuWorkload, GpuWorkloadOptions } from '../../lib/annotations';
import { pytorchGpu } from '../../examples/platform';
import { SEED_002_ANNOTATIONS } from '../support/seed';

const SEED_ANNOTATIONS = SEED_002_ANNOTATIONS;

/** Seed 002's example is the example platform's: its options, TFLOPS as numbers (as decoding gives them). */
const SEED_OPTIONS: GpuWorkloadOptions = { ...pytorchGpu, tflopsLimit: 20, tflopsRequest: 10 };

describe('encodeGpuWorkload', () => {
  it("reproduces seed 002's example annotations exactly, in the seed's order", () => {
    const out = encodeGpuWorkload(SEED_OPTIONS, { containers: ['python'] });
    expect(out.labels).toEqual({ 'tensor-fusion.ai/enabled': 'true' });
    expect(out.annotations).toEqual(SEED_ANNOTATIONS);
    expect(Object.keys(out.annotations)).toEqual(Object.keys(SEED_ANNOTATIONS));
  });

  it('writes the advanced annotations as the seed does', () => {
    const out = encodeGpuWorkload({
      gpuCount: 4,
      gpuModel: 'A100',
      autoRequests: true,
      autoLimits: false,
      autoReplicas: true,
      isLocalGpu: true,
      noStandaloneWorkerMode: true,
    });
    expect(out.annotations).toEqual({
      'tensor-fusion.ai/is-local-gpu': 'true',
      'tensor-fusion.ai/gpu-count': '4',
      'tensor-fusion.ai/gpu-model': 'A100',
      'tensor-fusion.ai/auto-requests': 'true',
      'tensor-fusion.ai/auto-limits': 'false',
      'tensor-fusion.ai/auto-replicas': 'true',
      'tensor-fusion.ai/no-standalone-worker-mode': 'true',
    });
  });

  it('keeps quantity strings as written and formats numbers of bytes and TFLOPS', () => {
    const out = encodeGpuWorkload({ vramRequest: 512 * 2 ** 20, vramLimit: '4G', tflopsRequest: 0.5, tflopsLimit: '500m' });
    expect(out.annotations).toEqual({
      [ANNOTATION.tflopsLimit]: '500m',
      [ANNOTATION.tflopsRequest]: '0.5',
      [ANNOTATION.vramLimit]: '4G',
      [ANNOTATION.vramRequest]: '512Mi',
    });
  });

  it('joins inject-container names with commas', () => {
    const out = encodeGpuWorkload({ injectContainers: ['python', 'worker'] }, { containers: ['python', 'worker', 'proxy'] });
    expect(out.annotations[ANNOTATION.injectContainers]).toBe('python,worker');
  });

  it('writes only the label when no option is given', () => {
    expect(encodeGpuWorkload({})).toEqual({ labels: { 'tensor-fusion.ai/enabled': 'true' }, annotations: {} });
  });

  it('skips options that are explicitly undefined', () => {
    expect(encodeGpuWorkload({ qos: undefined, gpuCount: 2 }).annotations).toEqual({ [ANNOTATION.gpuCount]: '2' });
  });

  it('throws one ValidationError listing every issue and returns nothing', () => {
    let error: unknown;
    try {
      encodeGpuWorkload({ tflopsLimit: 'abc', gpuCount: 0, qos: 'urgent' as never });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues.map((i) => i.message)).toEqual([
      `tflopsLimit: got "abc", expected a positive number of TFLOPS such as '10' or '0.5'`,
      'gpuCount: got 0, expected an integer from 1 to 128',
      'qos: got "urgent", expected one of low, medium, high, critical',
    ]);
    expect((error as Error).message).toBe('GPU workload options: ' + (error as ValidationError).issues.map((i) => i.message).join('\n'));
  });

  it('does not modify the options it is given', () => {
    const options = { ...SEED_OPTIONS, injectContainers: ['python'] };
    const copy = JSON.parse(JSON.stringify(options));
    encodeGpuWorkload(options, { containers: ['python'] });
    expect(options).toEqual(copy);
  });

  it('decodes back to the parsed options', () => {
    const { settings, issues } = decodeGpuAnnotations(encodeGpuWorkload(SEED_OPTIONS).annotations, { containers: ['python'] });
    expect(issues).toEqual([]);
    expect(settings).toEqual({ ...SEED_OPTIONS, vramLimit: 4 * 2 ** 30, vramRequest: 4 * 2 ** 30 });
  });
});
