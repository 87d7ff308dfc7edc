import { gpuWorkloadPodTemplate } from '../../lib/render/gpu-workload';
import { issueMessages } from '../support/validation';

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

const template = () => ({
  metadata: { labels: { app: 'pytorch' }, annotations: { 'prometheus.io/scrape': 'true' } },
  spec: { containers: [{ name: 'python', image: 'pytorch/pytorch' }] },
});

describe('gpuWorkloadPodTemplate', () => {
  it('merges the label and annotations and keeps unrelated ones, without touching the input', () => {
    const input = deepFreeze(template());
    const out = gpuWorkloadPodTemplate(input, { pool: 'default-pool', tflopsRequest: 10, tflopsLimit: '20', vramRequest: '4Gi' });
    expect(out).toEqual({
      metadata: {
        labels: { app: 'pytorch', 'tensor-fusion.ai/enabled': 'true' },
        annotations: {
          'prometheus.io/scrape': 'true',
          'tensor-fusion.ai/gpupool': 'default-pool',
          'tensor-fusion.ai/tflops-limit': '20',
          'tensor-fusion.ai/tflops-request': '10',
          'tensor-fusion.ai/vram-request': '4Gi',
        },
      },
      spec: input.spec,
    });
    expect(input).toEqual(template());
  });

  it('works on a template without metadata', () => {
    const out = gpuWorkloadPodTemplate({ spec: { containers: [{ name: 'app' }] } }, { qos: 'high' });
    expect(out.metadata).toEqual({ labels: { 'tensor-fusion.ai/enabled': 'true' }, annotations: { 'tensor-fusion.ai/qos': 'high' } });
  });

  it('replaces an annotation the template already had under the same key', () => {
    const base = { ...template(), metadata: { annotations: { 'tensor-fusion.ai/qos': 'low' } } };
    expect(gpuWorkloadPodTemplate(base, { qos: 'critical' }).metadata.annotations).toEqual({ 'tensor-fusion.ai/qos': 'critical' });
  });

  it("checks inject-container against the template's containers", () => {
    const two = { spec: { containers: [{ name: 'python' }, { name: 'proxy' }] } };
    expect(issueMessages(() => gpuWorkloadPodTemplate(two, { tflopsRequest: 1 }))).toEqual([
      'injectContainers: got nothing, expected a list of container names, required because the pod template has 2 containers (python, proxy)',
    ]);
    expect(issueMessages(() => gpuWorkloadPodTemplate(two, { injectContainers: ['cuda'] }))).toEqual([
      'injectContainers: got "cuda", expected a container of the pod template: one of python, proxy',
    ]);
    expect(gpuWorkloadPodTemplate(two, { injectContainers: ['python'] }).metadata.annotations).toEqual({
      'tensor-fusion.ai/inject-container': 'python',
    });
  });

  it('accepts an inject-container annotation already on the template, and checks its names', () => {
    const two = (inject: string) => ({
      metadata: { annotations: { 'tensor-fusion.ai/inject-container': inject } },
      spec: { containers: [{ name: 'python' }, { name: 'proxy' }] },
    });
    expect(issueMessages(() => gpuWorkloadPodTemplate(two('python'), { tflopsRequest: 1 }))).toEqual([]);
    expect(issueMessages(() => gpuWorkloadPodTemplate(two('pyhton'), { tflopsRequest: 1 }))).toEqual([
      'tensor-fusion.ai/inject-container: got "pyhton", expected a container of the pod template: one of python, proxy',
    ]);
  });

  it('reports tensor-fusion.ai annotations already on the template that conflict or are unknown', () => {
    const base = {
      metadata: { annotations: { 'tensor-fusion.ai/tflops-limit': '5', 'tensor-fusion.ai/vram-limt': '4Gi' } },
      spec: { containers: [{ name: 'python' }] },
    };
    expect(issueMessages(() => gpuWorkloadPodTemplate(base, { tflopsRequest: 10 }))).toEqual([
      'tensor-fusion.ai/vram-limt: got "4Gi", expected a known tensor-fusion.ai annotation; did you mean tensor-fusion.ai/vram-limit?',
      'tensor-fusion.ai/tflops-limit: got "5", expected at least tensor-fusion.ai/tflops-request (10)',
    ]);
  });

  it('throws on bad options with the option names, changing nothing', () => {
    const input = deepFreeze(template());
    expect(issueMessages(() => gpuWorkloadPodTemplate(input, { gpuCount: 200, vramLimit: 'lots' }))).toEqual([
      'gpuCount: got 200, expected an integer from 1 to 128',
      'vramLimit: got "lots", expected a positive Kubernetes quantity such as 4Gi or 512Mi',
    ]);
  });
});
