/** GPUResourceQuota: the schema (kind, CRD, printer columns, status) and every validation message of its spec. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  assertGpuResourceQuotaSpec,
  crdFileName,
  DEFAULT_QUOTA_ALERT_THRESHOLD_PERCENT,
  DEFAULT_QUOTA_MAX_WORKERS,
  KINDS,
  QUOTA_CONDITION_TYPES,
  validateObject,
  validateSpec,
  validateStatus,
} from '../../lib/api';
import { isClusterScoped } from '../../lib/model/kind-scope';
import { exampleGpuResourceQuota } from '../support/api-examples';
import { issueMessages } from '../support/validation';

const messages = (spec: unknown) => validateSpec('GPUResourceQuota', spec).map((i) => i.message);
const amounts = (tflops?: unknown, vram?: unknown) => ({
  ...(tflops !== undefined ? { tflops } : {}),
  ...(vram !== undefined ? { vram } : {}),
});
const EMPTY =
  'at least one bound: spec.total.requests, spec.total.limits (tflops, vram) or spec.total.maxWorkers for the namespace, ' +
  'or spec.single.maxRequests, spec.single.maxLimits (tflops, vram) or spec.single.maxGPUCount for each pod';

describe('the GPUResourceQuota kind', () => {
  it('is namespaced, named as upstream, with a status subresource', () => {
    const info = KINDS.GPUResourceQuota;
    expect([info.plural, info.singular, info.listKind, info.scope, info.shortNames]).toEqual([
      'gpuresourcequotas',
      'gpuresourcequota',
      'GPUResourceQuotaList',
      'Namespaced',
      ['gpuquota'],
    ]);
    expect(isClusterScoped('tensor-fusion.ai/v1', 'GPUResourceQuota')).toBe(false);
    const crd = parse(readFileSync(join(__dirname, '../../crds', crdFileName('GPUResourceQuota')), 'utf8'));
    expect(crd.metadata.name).toBe('gpuresourcequotas.tensor-fusion.ai');
    expect(crd.spec.versions[0].subresources).toEqual({ status: {} });
  });

  it('prints used and total request TFLOPS and VRAM, workers and the alert threshold, from where the values are', () => {
    expect(KINDS.GPUResourceQuota.printerColumns.map((c) => [c.name, c.type, c.jsonPath, c.priority ?? 0])).toEqual([
      ['TFLOPS Used', 'string', '.status.used.requests.tflops', 0],
      ['TFLOPS Total', 'string', '.spec.total.requests.tflops', 0],
      ['VRAM Used', 'string', '.status.used.requests.vram', 0],
      ['VRAM Total', 'string', '.spec.total.requests.vram', 0],
      ['Workers', 'integer', '.status.used.workers', 0],
      ['Max Workers', 'integer', '.spec.total.maxWorkers', 1],
      ['Alert %', 'integer', '.spec.total.alertThresholdPercent', 0],
      ['Age', 'date', '.metadata.creationTimestamp', 0],
    ]);
  });

  it("keeps upstream's defaults in the CRD: maxWorkers 32768, alertThresholdPercent 95", () => {
    const total = (
      KINDS.GPUResourceQuota.spec as unknown as { properties: { total: { properties: Record<string, { default?: number }> } } }
    ).properties.total.properties;
    expect([total.maxWorkers.default, total.alertThresholdPercent.default]).toEqual([32768, 95]);
    expect([DEFAULT_QUOTA_MAX_WORKERS, DEFAULT_QUOTA_ALERT_THRESHOLD_PERCENT]).toEqual([32768, 95]);
    expect(QUOTA_CONDITION_TYPES).toEqual(['Ready', 'AlertThresholdReached']);
  });

  it('accepts the sample object (every field, with the status the controller writes)', () => {
    expect(validateObject(exampleGpuResourceQuota())).toEqual([]);
  });

  it('accepts each bound alone', () => {
    for (const spec of [
      { total: { requests: amounts('100') } },
      { total: { requests: amounts(undefined, '10Gi') } },
      { total: { limits: amounts('100') } },
      { total: { maxWorkers: 0 } },
      { single: { maxRequests: amounts('0.5') } },
      { single: { maxLimits: amounts(undefined, '512Mi') } },
      { single: { maxGPUCount: 1 } },
    ]) {
      expect([spec, messages(spec)]).toEqual([spec, []]);
    }
  });

  it('accepts a status with percents below zero (a lowered quota under what is bound) and without the unbounded ones', () => {
    const used = { requests: amounts('420', '96Gi'), limits: amounts('840', '96Gi'), workers: 6 };
    expect(validateStatus('GPUResourceQuota', { used, availablePercent: { requests: { tflops: '-12.5' } } })).toEqual([]);
    expect(
      validateStatus('GPUResourceQuota', { used: { ...used, workers: -1 }, availablePercent: { workers: '12.5%' } }).map((i) => i.message),
    ).toEqual([
      'status.used.workers: got -1, expected a non-negative integer',
      'status.availablePercent.workers: got "12.5%", expected a string matching ^-?[0-9]+(\\.[0-9]+)?$',
    ]);
  });
});

describe('GPUResourceQuota spec rules', () => {
  it('refuses an empty spec, or one without a bound, saying what to set', () => {
    expect(messages({})).toEqual([`spec: got {}, expected ${EMPTY}`]);
    expect(messages({ total: { alertThresholdPercent: 80 }, single: { maxRequests: {} } })).toEqual([
      `spec: got {"total":{"alertThresholdPercent":80},"single":{"maxRequests":{}}}, expected ${EMPTY}`,
    ]);
  });

  it('refuses total limits below total requests, per resource', () => {
    expect(messages({ total: { requests: amounts('100', '10Gi'), limits: amounts('50', '5Gi') } })).toEqual([
      'spec.total.limits.tflops: got "50", expected at least spec.total.requests.tflops (100)',
      'spec.total.limits.vram: got "5Gi", expected at least spec.total.requests.vram (10Gi)',
    ]);
    expect(messages({ total: { requests: amounts('100'), limits: amounts(undefined, '1Gi') } })).toEqual([]);
  });

  it('refuses single maxLimits below single maxRequests, per resource', () => {
    expect(messages({ single: { maxRequests: amounts(10, '4Gi'), maxLimits: amounts(5, '2Gi') } })).toEqual([
      'spec.single.maxLimits.tflops: got 5, expected at least spec.single.maxRequests.tflops (10)',
      'spec.single.maxLimits.vram: got "2Gi", expected at least spec.single.maxRequests.vram (4Gi)',
    ]);
  });

  it('checks TFLOPS and VRAM as every TFLOPS and VRAM field, the totals bounded per namespace (a fleet, not a GPU)', () => {
    expect(messages({ total: { requests: amounts(0, '4'), limits: amounts('200000000', '2Ei') } })).toEqual([
      "spec.total.requests.tflops: got 0, expected a positive number of TFLOPS such as '10' or '0.5'",
      'spec.total.limits.tflops: got "200000000", expected at most 100000000 TFLOPS per namespace',
      'spec.total.requests.vram: got "4", expected at least 1Mi of VRAM (a number or a quantity without a unit is bytes): did you mean "4Gi"?',
      'spec.total.limits.vram: got "2Ei", expected at most 1Ei of VRAM per namespace',
    ]);
    // What a share per GPU may not take, a namespace may.
    expect(messages({ total: { requests: amounts('5000000', '200Ti') } })).toEqual([]);
    expect(messages({ single: { maxRequests: amounts('-1', '1048576.5'), maxLimits: amounts('100001', '4GB') } })).toEqual([
      'spec.single.maxLimits.vram: got "4GB", expected a Kubernetes quantity such as 4Gi or 512Mi, at most 1Pi',
      "spec.single.maxRequests.tflops: got \"-1\", expected a positive number of TFLOPS such as '10' or '0.5'",
      'spec.single.maxLimits.tflops: got "100001", expected at most 100000 TFLOPS per GPU',
      'spec.single.maxRequests.vram: got "1048576.5", expected a whole number of bytes: did you mean "2Mi"?',
    ]);
    expect(messages({ single: { maxRequests: amounts(100001) } })).toEqual([
      "spec.single.maxRequests.tflops: got 100001, expected a Kubernetes quantity such as '10', '0.5' or 500m (fractions as strings), at most 100000",
    ]);
  });

  it('bounds maxWorkers, alertThresholdPercent and maxGPUCount', () => {
    expect(messages({ total: { maxWorkers: -1, alertThresholdPercent: 101 }, single: { maxGPUCount: 0 } })).toEqual([
      'spec.total.maxWorkers: got -1, expected a non-negative integer',
      'spec.total.alertThresholdPercent: got 101, expected an integer from 0 to 100',
      'spec.single.maxGPUCount: got 0, expected an integer from 1 to 128',
    ]);
    expect(messages({ total: { maxWorkers: 1.5, alertThresholdPercent: -1 }, single: { maxGPUCount: 129 } })).toEqual([
      'spec.total.maxWorkers: got 1.5, expected a non-negative integer',
      'spec.total.alertThresholdPercent: got -1, expected an integer from 0 to 100',
      'spec.single.maxGPUCount: got 129, expected an integer from 1 to 128',
    ]);
  });

  it("refuses upstream's compute, anywhere, suggesting tflops", () => {
    expect(
      messages({
        total: { requests: { compute: '50' }, limits: { tflops: '10', compute: 60 } },
        single: { maxRequests: { compute: '10' }, maxLimits: { compute: '20' } },
      }),
    ).toEqual([
      `spec.total.requests.compute: got "50", expected spec.total.requests.tflops instead: compute (upstream's percent of one GPU) is not provided by this runtime's quotas`,
      `spec.total.limits.compute: got 60, expected spec.total.limits.tflops instead: compute (upstream's percent of one GPU) is not provided by this runtime's quotas`,
      `spec.single.maxRequests.compute: got "10", expected spec.single.maxRequests.tflops instead: compute (upstream's percent of one GPU) is not provided by this runtime's quotas`,
      `spec.single.maxLimits.compute: got "20", expected spec.single.maxLimits.tflops instead: compute (upstream's percent of one GPU) is not provided by this runtime's quotas`,
    ]);
  });

  it("refuses upstream's single.defaultRequests and defaultLimits: this runtime fills no defaults from quotas", () => {
    expect(messages({ single: { maxGPUCount: 2, defaultRequests: amounts('1', '1Gi'), defaultLimits: amounts('2', '1Gi') } })).toEqual([
      `spec.single.defaultRequests: got {"tflops":"1","vram":"1Gi"}, expected nothing: this runtime does not fill defaults from quotas (upstream's single.defaultRequests); set requests on the pods (the tensor-fusion.ai/tflops-request and vram-request annotations) or their WorkloadProfile`,
      `spec.single.defaultLimits: got {"tflops":"2","vram":"1Gi"}, expected nothing: this runtime does not fill defaults from quotas (upstream's single.defaultLimits); set limits on the pods (the tensor-fusion.ai/tflops-limit and vram-limit annotations) or their WorkloadProfile`,
    ]);
  });

  it('refuses other unknown fields with the known ones (compute and defaults are not known elsewhere)', () => {
    expect(messages({ total: { maxWorkers: 1, defaultRequests: {}, compute: 1 }, totals: {} })).toEqual([
      'spec.totals: got {}, expected a known field of spec (did you mean total?)',
      'spec.total.defaultRequests: got {}, expected a known field of spec.total: requests, limits, maxWorkers, alertThresholdPercent',
      'spec.total.compute: got 1, expected a known field of spec.total: requests, limits, maxWorkers, alertThresholdPercent',
    ]);
  });

  it('throws them all at once from assertGpuResourceQuotaSpec, and nothing for a valid spec', () => {
    expect(issueMessages(() => assertGpuResourceQuotaSpec({ total: { maxWorkers: -1 }, single: { maxGPUCount: 0 } }, 'quota'))).toEqual([
      'quota.total.maxWorkers: got -1, expected a non-negative integer',
      'quota.single.maxGPUCount: got 0, expected an integer from 1 to 128',
    ]);
    expect(issueMessages(() => assertGpuResourceQuotaSpec(exampleGpuResourceQuota().spec))).toEqual([]);
  });
});
