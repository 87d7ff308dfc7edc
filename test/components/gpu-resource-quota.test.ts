/** GpuResourceQuota in cdk8s and Pulumi: the same object from the same props, every field, maxGpuCount as maxGPUCount. */
import * as pulumi from '@pulumi/pulumi';
import { GpuResourceQuota as Cdk8sGpuResourceQuota, GpuResourceQuotaProps } from '../../components/cdk8s';
import { GpuResourceQuota as PulumiGpuResourceQuota } from '../../components/pulumi';
import { renderGpuResourceQuota } from '../../lib';
import { validateObject } from '../../lib/api';
import { synthChart } from '../support/cdk8s';
import { valueOf } from '../support/pulumi-mocks';
import { validateAll } from '../support/validate-k8s';
import { sameInBoth } from './frameworks';

const full: GpuResourceQuotaProps = {
  name: 'ml-quota',
  namespace: 'ml',
  labels: { team: 'nlp' },
  annotations: { note: 'x' },
  total: {
    requests: { tflops: '400', vram: '160Gi' },
    limits: { tflops: '800', vram: '160Gi' },
    maxWorkers: 20,
    alertThresholdPercent: 90,
  },
  single: { maxRequests: { tflops: '100', vram: '40Gi' }, maxLimits: { tflops: '200', vram: '40Gi' }, maxGpuCount: 2 },
};

describe('GpuResourceQuota', () => {
  it('renders every field in both frameworks, single.maxGpuCount as the spec field maxGPUCount', async () => {
    const [quota] = await sameInBoth(
      (chart) => new Cdk8sGpuResourceQuota(chart, 'q', full),
      () => void new PulumiGpuResourceQuota('q', full),
    );
    expect(quota).toEqual({
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'GPUResourceQuota',
      metadata: { name: 'ml-quota', namespace: 'ml', labels: { team: 'nlp' }, annotations: { note: 'x' } },
      spec: {
        total: full.total,
        single: { maxRequests: { tflops: '100', vram: '40Gi' }, maxLimits: { tflops: '200', vram: '40Gi' }, maxGPUCount: 2 },
      },
    });
    validateAll([quota]);
    expect(validateObject(quota)).toEqual([]);
  });

  it('writes only what is set: one bound alone, named after the id', async () => {
    const [quota] = await sameInBoth(
      (chart) => new Cdk8sGpuResourceQuota(chart, 'team-a', { namespace: 'team-a', single: { maxGpuCount: 1 } }),
      () => void new PulumiGpuResourceQuota('team-a', { namespace: 'team-a', single: { maxGpuCount: 1 } }),
    );
    expect(quota).toEqual({
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'GPUResourceQuota',
      metadata: { name: 'team-a', namespace: 'team-a' },
      spec: { single: { maxGPUCount: 1 } },
    });
  });

  it('keeps its own namespace in a cdk8s chart of another namespace', () => {
    const [quota] = synthChart((chart) => new Cdk8sGpuResourceQuota(chart, 'q', { namespace: 'team-b', total: { maxWorkers: 3 } }), {
      namespace: 'ml',
    });
    expect(quota.metadata).toEqual({ name: 'q', namespace: 'team-b' });
  });

  it('takes Outputs in Pulumi and exposes the quota name in both', async () => {
    synthChart((chart) => {
      expect(new Cdk8sGpuResourceQuota(chart, 'q', { name: 'named', namespace: 'ml', total: { maxWorkers: 1 } }).quotaName).toBe('named');
    });
    const quota = new PulumiGpuResourceQuota('q2', { namespace: pulumi.output('ml'), total: { requests: { vram: pulumi.output('8Gi') } } });
    expect(await valueOf(quota.quotaName)).toBe('q2');
  });

  it('does not keep references to the props (later changes to them do not leak in)', () => {
    const total = { requests: { tflops: '1' } };
    const single = { maxRequests: { vram: '1Gi' } };
    const [quota] = synthChart((chart) => {
      new Cdk8sGpuResourceQuota(chart, 'q', { namespace: 'ml', total, single });
      total.requests.tflops = '2';
      single.maxRequests.vram = '2Gi';
    });
    // The other half of each pair is the most the field allows (upstream requires both).
    expect(quota.spec).toEqual({
      total: { requests: { tflops: '1', vram: '1Ei' } },
      single: { maxRequests: { tflops: '100000', vram: '1Gi' } },
    });
  });

  it('renders the same object from the framework-free renderer', () => {
    expect(renderGpuResourceQuota('q', { namespace: 'ml', total: { maxWorkers: 0 } })).toEqual({
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'GPUResourceQuota',
      metadata: { name: 'q', namespace: 'ml' },
      spec: { total: { maxWorkers: 0 } },
    });
  });
});
