/**
 * Every object the components write, of a kind that exists upstream, validates against upstream
 * TensorFusion's CRD (read from the shared reference folder, never copied): each component is
 * synthesized with every optional prop left out, with each set alone, and with all set. Where
 * upstream requires a field the props leave optional, the component fills a stated default.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { crdFileName, JsonSchema, KindName } from '../../lib/api';
import type { KubeObject } from '../../lib/k8s/object';
import { GpuPool, GpuResourceQuota, TensorFusionWorkload, WorkloadProfile } from '../../components/cdk8s';
import type { GpuPoolProps } from '../../lib/render/gpu-pool';
import type { GpuResourceQuotaProps } from '../../lib/render/gpu-resource-quota';
import type { WorkloadProfileProps } from '../../lib/render/workload-profile';
import { synthChart } from '../support/cdk8s';
import { fullGpuPoolProps, fullWorkloadProfileSpec } from '../support/api-examples';

const UPSTREAM = process.env.TF_UPSTREAM_CRDS ?? resolve(__dirname, '../../../shared/upstream/tensor-fusion/crds');

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const validators = new Map<string, ReturnType<typeof ajv.compile>>();

/** Upstream's errors for `o`, as `path: message` lines; empty when it validates. */
function upstreamErrors(o: KubeObject): string[] {
  let validate = validators.get(o.kind);
  if (!validate) {
    const crd = parse(readFileSync(join(UPSTREAM, crdFileName(o.kind as KindName)), 'utf8'));
    const versions = crd.spec.versions as Array<{ storage?: boolean; schema: { openAPIV3Schema: JsonSchema } }>;
    validate = ajv.compile((versions.find((v) => v.storage) ?? versions[0]).schema.openAPIV3Schema);
    validators.set(o.kind, validate);
  }
  return validate(o) ? [] : (validate.errors ?? []).map((e) => `${o.kind} ${e.instancePath || '/'}: ${e.message}`);
}

/** The props with nothing optional, each optional prop alone, and all of them together. */
function variants<P extends object>(base: P, optional: Partial<P>): P[] {
  return [base, ...Object.entries(optional).map(([k, v]) => ({ ...base, [k]: v })), { ...base, ...optional }];
}

const POOL_OPTIONAL = fullGpuPoolProps();

/** Quotas: every bound alone (one half of a TFLOPS/VRAM pair too), and all together. */
const QUOTAS: GpuResourceQuotaProps[] = [
  ...(['requests', 'limits'] as const).flatMap((side) => [
    { namespace: 'ml', total: { [side]: { tflops: '400' } } },
    { namespace: 'ml', total: { [side]: { vram: '96Gi' } } },
  ]),
  ...(['maxRequests', 'maxLimits'] as const).flatMap((side) => [
    { namespace: 'ml', single: { [side]: { tflops: '100' } } },
    { namespace: 'ml', single: { [side]: { vram: '16Gi' } } },
  ]),
  { namespace: 'ml', total: { maxWorkers: 4 } },
  { namespace: 'ml', single: { maxGpuCount: 2 } },
  {
    namespace: 'ml',
    labels: { team: 'a' },
    total: { requests: { tflops: '400', vram: '96Gi' }, limits: { tflops: '800' }, maxWorkers: 8, alertThresholdPercent: 80 },
    single: { maxRequests: { vram: '16Gi' }, maxLimits: { tflops: '200', vram: '32Gi' }, maxGpuCount: 4 },
  },
];

const { isLocalGPU: _wire, ...FULL_PROFILE } = fullWorkloadProfileSpec();
/** Each spec field alone (resources with one side or one amount too), and all. */
const PROFILES: WorkloadProfileProps[] = [...variants<WorkloadProfileProps>({ namespace: 'ml' }, { ...FULL_PROFILE, isLocalGpu: true })];

const run = existsSync(UPSTREAM) ? describe : describe.skip;

run('objects the components write, against upstream CRDs', () => {
  test.each([
    ['GpuPool', () => variants<GpuPoolProps>({}, POOL_OPTIONAL).map((p, i) => (c: never) => new GpuPool(c, `pool-${i}`, p))],
    ['GpuResourceQuota', () => QUOTAS.map((p, i) => (c: never) => new GpuResourceQuota(c, `quota-${i}`, p))],
    ['WorkloadProfile', () => PROFILES.map((p, i) => (c: never) => new WorkloadProfile(c, `profile-${i}`, p))],
    ['TensorFusionWorkload', () => PROFILES.map((p, i) => (c: never) => new TensorFusionWorkload(c, `workload-${i}`, p))],
  ])('%s: every variant validates', (_name, builds) => {
    const objects = synthChart((chart) => builds().forEach((b) => b(chart as never)));
    expect(objects.length).toBeGreaterThan(3);
    expect(objects.flatMap(upstreamErrors)).toEqual([]);
  });

  test('a quota bound that sets one half of a TFLOPS/VRAM pair is written with the other as the most the field allows', () => {
    const [q] = synthChart(
      (c) =>
        new GpuResourceQuota(c, 'half', { namespace: 'ml', total: { requests: { vram: '96Gi' } }, single: { maxLimits: { tflops: 50 } } }),
    );
    expect(q.spec).toEqual({
      total: { requests: { tflops: '100000000', vram: '96Gi' } },
      single: { maxLimits: { tflops: 50, vram: '1Pi' } },
    });
  });

  test.each(['WorkloadProfile', 'TensorFusionWorkload'] as const)(
    '%s: resources with one side or one amount is refused, as upstream requires both sides with both amounts',
    (kind) => {
      const Component = kind === 'WorkloadProfile' ? WorkloadProfile : TensorFusionWorkload;
      expect(() =>
        synthChart((c) => new Component(c, 'half', { namespace: 'ml', resources: { requests: { tflops: '5' } } } as never)),
      ).toThrow(
        `${kind} half: spec.resources.limits: got nothing, expected an object with fields tflops, vram (required in spec.resources)\n` +
          'spec.resources.requests.vram: got nothing, expected a Kubernetes quantity such as 4Gi or 512Mi, at most 1Pi (required in spec.resources.requests)',
      );
    },
  );
});
