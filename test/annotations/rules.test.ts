/**
 * Every validation rule of the codec, with its exact message, on the typed-options path (encode) and
 * on the annotations path (decode).
 */
import { ValidationError } from '../../lib/model/errors';
import { decodeGpuAnnotations, encodeGpuWorkload, GpuWorkloadOptions } from '../../lib/annotations';
import { annotationKey as A } from '../support/annotations';

const TFLOPS = `a positive number of TFLOPS such as '10' or '0.5'`;
const VRAM = 'a positive Kubernetes quantity such as 4Gi or 512Mi';
const POOL = "a DNS-1123 label of at most 58 characters (lowercase letters, digits and '-', starting and ending with a letter or digit)";
const OBJECT =
  "a DNS-1123 subdomain name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)";
const CONTAINER = "a container name: a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)";

/** Messages of the ValidationError thrown by encode, or [] when it does not throw. */
function optionMessages(options: Record<string, unknown>, containers?: string[]): string[] {
  try {
    encodeGpuWorkload(options as GpuWorkloadOptions, { containers });
    return [];
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return e.issues.map((i) => i.message);
  }
}

function annotationMessages(annotations: Record<string, string>, containers?: string[]): string[] {
  return decodeGpuAnnotations(annotations, { containers }).issues.map((i) => i.message);
}

describe('value rules', () => {
  it.each([
    // [rule, option input, option message, annotation input, annotation message]
    [
      'tflops must be a number',
      { tflopsLimit: 'abc' },
      `tflopsLimit: got "abc", expected ${TFLOPS}`,
      { [A('tflops-limit')]: 'abc' },
      `tensor-fusion.ai/tflops-limit: got "abc", expected ${TFLOPS}`,
    ],
    [
      'tflops must be positive',
      { tflopsRequest: 0 },
      `tflopsRequest: got 0, expected ${TFLOPS}`,
      { [A('tflops-request')]: '-1' },
      `tensor-fusion.ai/tflops-request: got "-1", expected ${TFLOPS}`,
    ],
    [
      'vram must be a quantity',
      { vramRequest: '4GB' },
      `vramRequest: got "4GB", expected ${VRAM}`,
      { [A('vram-request')]: '4GB' },
      `tensor-fusion.ai/vram-request: got "4GB", expected ${VRAM}`,
    ],
    [
      'vram must be positive',
      { vramLimit: -1 },
      `vramLimit: got -1, expected ${VRAM}`,
      { [A('vram-limit')]: '0' },
      `tensor-fusion.ai/vram-limit: got "0", expected ${VRAM}`,
    ],
    [
      'qos enum',
      { qos: 'urgent' },
      'qos: got "urgent", expected one of low, medium, high, critical',
      { [A('qos')]: 'Medium' },
      'tensor-fusion.ai/qos: got "Medium", expected one of low, medium, high, critical',
    ],
    [
      'gpu-count integer',
      { gpuCount: 1.5 },
      'gpuCount: got 1.5, expected an integer from 1 to 128',
      { [A('gpu-count')]: '1.5' },
      'tensor-fusion.ai/gpu-count: got "1.5", expected an integer from 1 to 128',
    ],
    [
      'gpu-count at least 1',
      { gpuCount: 0 },
      'gpuCount: got 0, expected an integer from 1 to 128',
      { [A('gpu-count')]: '0' },
      'tensor-fusion.ai/gpu-count: got "0", expected an integer from 1 to 128',
    ],
    [
      'gpu-count at most 128',
      { gpuCount: 129 },
      'gpuCount: got 129, expected an integer from 1 to 128',
      { [A('gpu-count')]: '129' },
      'tensor-fusion.ai/gpu-count: got "129", expected an integer from 1 to 128',
    ],
    [
      'replicas non-negative',
      { replicas: -1 },
      'replicas: got -1, expected an integer from 0 to 10000',
      { [A('replicas')]: '-1' },
      'tensor-fusion.ai/replicas: got "-1", expected an integer from 0 to 10000',
    ],
    [
      'replicas integer',
      { replicas: '2' },
      'replicas: got "2", expected an integer from 0 to 10000',
      { [A('replicas')]: 'two' },
      'tensor-fusion.ai/replicas: got "two", expected an integer from 0 to 10000',
    ],
    [
      'replicas at most 10000',
      { replicas: 10001 },
      'replicas: got 10001, expected an integer from 0 to 10000',
      { [A('replicas')]: '999999999999999' },
      'tensor-fusion.ai/replicas: got "999999999999999", expected an integer from 0 to 10000',
    ],
    [
      'booleans',
      { isLocalGpu: 'true' },
      'isLocalGpu: got "true", expected true or false',
      { [A('is-local-gpu')]: 'True' },
      'tensor-fusion.ai/is-local-gpu: got "True", expected "true" or "false"',
    ],
    [
      'generate-workload boolean',
      { generateWorkload: 1 },
      'generateWorkload: got 1, expected true or false',
      { [A('generate-workload')]: 'yes' },
      'tensor-fusion.ai/generate-workload: got "yes", expected "true" or "false"',
    ],
    [
      'auto-requests boolean',
      { autoRequests: 'on' },
      'autoRequests: got "on", expected true or false',
      { [A('auto-requests')]: 'on' },
      'tensor-fusion.ai/auto-requests: got "on", expected "true" or "false"',
    ],
    [
      'auto-limits boolean',
      { autoLimits: null },
      'autoLimits: got null, expected true or false',
      { [A('auto-limits')]: '1' },
      'tensor-fusion.ai/auto-limits: got "1", expected "true" or "false"',
    ],
    [
      'auto-replicas boolean',
      { autoReplicas: 0 },
      'autoReplicas: got 0, expected true or false',
      { [A('auto-replicas')]: '' },
      'tensor-fusion.ai/auto-replicas: got "", expected "true" or "false"',
    ],
    [
      'pool name',
      { pool: 'Default_Pool' },
      `pool: got "Default_Pool", expected ${POOL}`,
      { [A('gpupool')]: 'pool.a' },
      `tensor-fusion.ai/gpupool: got "pool.a", expected ${POOL}`,
    ],
    [
      'pool name length',
      { pool: 'p'.repeat(59) },
      `pool: got "${'p'.repeat(59)}", expected ${POOL}`,
      { [A('gpupool')]: '-pool' },
      `tensor-fusion.ai/gpupool: got "-pool", expected ${POOL}`,
    ],
    [
      'workload name',
      { workload: 'My Workload' },
      `workload: got "My Workload", expected ${OBJECT}`,
      { [A('workload')]: 'x_y' },
      `tensor-fusion.ai/workload: got "x_y", expected ${OBJECT}`,
    ],
    [
      'profile name',
      { workloadProfile: '' },
      `workloadProfile: got "", expected ${OBJECT}`,
      { [A('workload-profile')]: 'Profile' },
      `tensor-fusion.ai/workload-profile: got "Profile", expected ${OBJECT}`,
    ],
    [
      'gpu model',
      { gpuModel: ' A100' },
      'gpuModel: got " A100", expected "A100", without surrounding spaces',
      { [A('gpu-model')]: '' },
      'tensor-fusion.ai/gpu-model: got "", expected a GPU model name such as A100 or H100, without surrounding spaces',
    ],
    [
      'container name syntax',
      { injectContainers: ['Python'] },
      `injectContainers: got "Python", expected ${CONTAINER}`,
      { [A('inject-container')]: 'python,' },
      `tensor-fusion.ai/inject-container: got "", expected ${CONTAINER}`,
    ],
    [
      'container list not empty',
      { injectContainers: [] },
      'injectContainers: got [], expected at least one container name',
      { [A('inject-container')]: '' },
      'tensor-fusion.ai/inject-container: got "", expected at least one container name',
    ],
    [
      'container list type',
      { injectContainers: 'python' },
      'injectContainers: got "python", expected a list of container names',
      { [A('inject-container')]: 'python' },
      undefined,
    ],
  ])('%s', (_rule, options, optionMessage, annotations, annotationMessage) => {
    expect(optionMessages(options)).toEqual([optionMessage]);
    expect(annotationMessages(annotations as Record<string, string>)).toEqual(annotationMessage ? [annotationMessage] : []);
  });
});

describe('rules over several fields', () => {
  it('tflops limit must be at least the request', () => {
    expect(optionMessages({ tflopsRequest: 10, tflopsLimit: '5' })).toEqual(['tflopsLimit: got "5", expected at least tflopsRequest (10)']);
    expect(annotationMessages({ [A('tflops-request')]: '10', [A('tflops-limit')]: '5' })).toEqual([
      'tensor-fusion.ai/tflops-limit: got "5", expected at least tensor-fusion.ai/tflops-request (10)',
    ]);
  });

  it('vram limit must be at least the request, across units', () => {
    expect(optionMessages({ vramRequest: '4Gi', vramLimit: '4G' })).toEqual(['vramLimit: got "4G", expected at least vramRequest (4Gi)']);
    expect(annotationMessages({ [A('vram-request')]: '4Gi', [A('vram-limit')]: '2048Mi' })).toEqual([
      'tensor-fusion.ai/vram-limit: got "2048Mi", expected at least tensor-fusion.ai/vram-request (4Gi)',
    ]);
    expect(optionMessages({ vramRequest: '4Gi', vramLimit: 4 * 2 ** 30 })).toEqual([]);
  });

  it('limit = request is fine, and an invalid side is reported once', () => {
    expect(annotationMessages({ [A('tflops-request')]: '10', [A('tflops-limit')]: '10' })).toEqual([]);
    expect(annotationMessages({ [A('tflops-request')]: 'x', [A('tflops-limit')]: '5' })).toEqual([
      `tensor-fusion.ai/tflops-request: got "x", expected ${TFLOPS}`,
    ]);
  });

  it("generate-workload 'false' requires workload", () => {
    expect(optionMessages({ generateWorkload: false })).toEqual([
      'workload: got nothing, expected the name of an existing TensorFusionWorkload, since generateWorkload is false',
    ]);
    expect(annotationMessages({ [A('generate-workload')]: 'false' })).toEqual([
      'tensor-fusion.ai/workload: got nothing, expected the name of an existing TensorFusionWorkload, since tensor-fusion.ai/generate-workload is "false"',
    ]);
    expect(annotationMessages({ [A('generate-workload')]: 'false', [A('workload')]: 'shared' })).toEqual([]);
    expect(annotationMessages({ [A('generate-workload')]: 'true' })).toEqual([]);
  });

  it("no-standalone-worker-mode only with is-local-gpu 'true'", () => {
    expect(optionMessages({ noStandaloneWorkerMode: true })).toEqual([
      'noStandaloneWorkerMode: got true, expected false or nothing, unless isLocalGpu is true',
    ]);
    expect(optionMessages({ noStandaloneWorkerMode: true, isLocalGpu: false })).toEqual([
      'noStandaloneWorkerMode: got true, expected false or nothing, unless isLocalGpu is true',
    ]);
    expect(annotationMessages({ [A('no-standalone-worker-mode')]: 'true', [A('is-local-gpu')]: 'false' })).toEqual([
      'tensor-fusion.ai/no-standalone-worker-mode: got "true", expected "false" or nothing, unless tensor-fusion.ai/is-local-gpu is "true"',
    ]);
    expect(optionMessages({ noStandaloneWorkerMode: true, isLocalGpu: true })).toEqual([]);
    expect(optionMessages({ noStandaloneWorkerMode: false })).toEqual([]);
    // A bad is-local-gpu is reported once, not twice.
    expect(annotationMessages({ [A('no-standalone-worker-mode')]: 'true', [A('is-local-gpu')]: 'yes' })).toEqual([
      'tensor-fusion.ai/is-local-gpu: got "yes", expected "true" or "false"',
    ]);
  });

  it('inject-container names must exist in the pod template', () => {
    expect(optionMessages({ injectContainers: ['python', 'cuda'] }, ['python', 'proxy'])).toEqual([
      'injectContainers: got "cuda", expected a container of the pod template: one of python, proxy',
    ]);
    expect(annotationMessages({ [A('inject-container')]: 'python, cuda' }, ['python', 'proxy'])).toEqual([
      'tensor-fusion.ai/inject-container: got "cuda", expected a container of the pod template: one of python, proxy',
    ]);
    expect(annotationMessages({ [A('inject-container')]: 'python,proxy' }, ['python', 'proxy'])).toEqual([]);
  });

  it('inject-container is required when the pod template has more than one container', () => {
    expect(optionMessages({ tflopsRequest: 1 }, ['python', 'proxy'])).toEqual([
      'injectContainers: got nothing, expected a list of container names, required because the pod template has 2 containers (python, proxy)',
    ]);
    expect(annotationMessages({ [A('tflops-request')]: '1' }, ['python', 'proxy'])).toEqual([
      'tensor-fusion.ai/inject-container: got nothing, expected a comma-separated list of container names, required because the pod template has 2 containers (python, proxy)',
    ]);
    expect(optionMessages({ tflopsRequest: 1 }, ['python'])).toEqual([]);
  });
});

describe('unknown keys', () => {
  it('rejects an unknown tensor-fusion.ai annotation with a did-you-mean hint', () => {
    expect(annotationMessages({ [A('gpu-cout')]: '1' })).toEqual([
      'tensor-fusion.ai/gpu-cout: got "1", expected a known tensor-fusion.ai annotation; did you mean tensor-fusion.ai/gpu-count?',
    ]);
    expect(annotationMessages({ [A('vram-requests')]: '4Gi' })).toEqual([
      'tensor-fusion.ai/vram-requests: got "4Gi", expected a known tensor-fusion.ai annotation; did you mean tensor-fusion.ai/vram-request?',
    ]);
  });

  it('lists the known annotations when nothing is close', () => {
    expect(annotationMessages({ [A('zzzzzzzzzzzz')]: 'true' })).toEqual([
      'tensor-fusion.ai/zzzzzzzzzzzz: got "true", expected a known tensor-fusion.ai annotation: gpupool, inject-container, replicas, ' +
        'tflops-limit, tflops-request, vram-limit, vram-request, qos, workload, generate-workload, workload-profile, is-local-gpu, ' +
        'gpu-count, gpu-model, auto-requests, auto-limits, auto-replicas, no-standalone-worker-mode, compute-percent-request, ' +
        'compute-percent-limit, dedicated-gpu, gpu-indices, vendor, eviction-protection, isolation, partition-id, sidecar-worker, ' +
        'enabled-replicas, worker-pod-template, autoscale, autoscale-target, gang-enabled, gang-min-members, gang-timeout, ' +
        'disable-features, require-gpu-topology, gpu-topology-max-tier, gpu-topology-source',
    ]);
  });

  it('accepts the upstream keys it does not act on (the webhook warns about them)', () => {
    expect(annotationMessages({ [A('autoscale')]: 'true', [A('gang-enabled')]: 'true' })).toEqual([]);
  });

  it('says the enabled key is a label', () => {
    expect(annotationMessages({ [A('enabled')]: 'true' })).toEqual([
      'tensor-fusion.ai/enabled: got "true", expected a known tensor-fusion.ai annotation; tensor-fusion.ai/enabled is a pod label, not an annotation',
    ]);
  });

  it('rejects an unknown option name with a did-you-mean hint', () => {
    expect(optionMessages({ tflopsLimt: 20 })).toEqual([
      'tflopsLimt: got 20, expected a known GpuWorkloadOptions field; did you mean tflopsLimit?',
    ]);
    expect(optionMessages({ minReplicas: 1 })).toEqual([
      'minReplicas: got 1, expected a known GpuWorkloadOptions field: pool, injectContainers, replicas, tflopsLimit, tflopsRequest, ' +
        'vramLimit, vramRequest, qos, workload, generateWorkload, workloadProfile, isLocalGpu, gpuCount, gpuModel, autoRequests, ' +
        'autoLimits, autoReplicas, noStandaloneWorkerMode, computePercentRequest, computePercentLimit, dedicatedGpu, gpuIndices, vendor, ' +
        'evictionProtection',
    ]);
  });
});
