/**
 * Pods written for upstream TensorFusion: the annotation keys its newest webhook reads beyond the
 * documented ones. Those that map onto this package's model are ordinary annotations (see keys.ts:
 * compute-percent-request/-limit, dedicated-gpu, gpu-indices, vendor, eviction-protection) with the
 * value kinds and cross-field rules below; the others are admitted with an AdmissionReview warning
 * naming the key and why it is not acted on ({@link UPSTREAM_IGNORED_KEYS}), so that a pod moved from
 * upstream runs, and says what it loses.
 */
import { Checked, checked, FieldIssue, fieldIssue, refused } from '../model/errors';
import { ANNOTATION_PREFIX } from '../model/metadata-keys';
import { checkLimitAtLeastRequest } from '../model/rules';
import type { GpuWorkloadOptionName, GpuWorkloadSettings } from './options';
import type { UpstreamValueKind, ValueContext, ValueSource } from './value-kinds';

export type { UpstreamValueKind } from './value-kinds';

/** Value kinds of the upstream keys that this package acts on. */

const UPSTREAM_KINDS: ReadonlySet<string> = new Set<UpstreamValueKind>(['percent', 'gpuIndices', 'vendor', 'duration']);

export function isUpstreamKind(kind: string): kind is UpstreamValueKind {
  return UPSTREAM_KINDS.has(kind);
}

/** The vendor of every GPU this package manages (the capacity reconciler writes it on each GPU). */
export const MANAGED_GPU_VENDOR = 'NVIDIA';

/** At most this many indices: one per GPU of the largest gpu-count. */
const GPU_INDICES_MAX = 128;

/**
 * Upstream keys admitted but not acted on, with why. Keys are full annotation keys; the README's
 * upstream table is written from this list.
 */
export const UPSTREAM_IGNORED_KEYS: ReadonlyMap<string, string> = new Map(
  (
    [
      ['isolation', 'the isolation is always MPS limits on a shared GPU (use dedicated-gpu for a GPU of its own)'],
      ['partition-id', 'GPU partitions (MIG templates) are not managed'],
      ['sidecar-worker', 'no worker sidecar is injected in local mode (no-standalone-worker-mode injects an init container)'],
      ['enabled-replicas', 'every opted-in pod is admitted (no grey release)'],
      ['worker-pod-template', "remote-mode workers come from the GPUPool's spec.componentConfig.worker"],
      ['autoscale', 'use auto-requests and auto-limits'],
      ['autoscale-target', 'use auto-requests and auto-limits'],
      ['gang-enabled', 'there is no gang scheduling'],
      ['gang-min-members', 'there is no gang scheduling'],
      ['gang-timeout', 'there is no gang scheduling'],
      ['disable-features', 'no client library is injected whose features it could switch off'],
      ['require-gpu-topology', 'placement does not read GPU topology'],
      ['gpu-topology-max-tier', 'placement does not read GPU topology'],
      ['gpu-topology-source', 'placement does not read GPU topology'],
    ] as const
  ).map(([suffix, why]) => [`${ANNOTATION_PREFIX}${suffix}`, why]),
);

/** The AdmissionReview warning for an ignored upstream key present on a pod. */
export function ignoredKeyWarning(key: string, value: unknown): string {
  return `${key}: ${JSON.stringify(value)} is not acted on: ${UPSTREAM_IGNORED_KEYS.get(key)}`;
}

/** Warnings for every ignored upstream key among a pod's annotations, in key order. */
export function ignoredKeyWarnings(annotations: Readonly<Record<string, unknown>>): string[] {
  return Object.keys(annotations)
    .filter((k) => UPSTREAM_IGNORED_KEYS.has(k))
    .sort()
    .map((k) => ignoredKeyWarning(k, annotations[k]));
}

function checkPercent(field: string, input: unknown, source: ValueSource) {
  // Annotations are decimal numbers as upstream writes them ("50", "12.5"); options may be numbers.
  const text = typeof input === 'number' && source === 'option' ? String(input) : input;
  const n = typeof text === 'string' && /^\d{1,3}(\.\d{1,6})?$/.test(text) ? Number(text) : Number.NaN;
  return n > 0 && n <= 100
    ? checked(n)
    : refused(fieldIssue(field, input, "a percent of one GPU's compute, more than 0 and at most 100, such as 50"));
}

function checkGpuIndices(field: string, input: unknown, source: ValueSource) {
  const expected =
    source === 'annotation'
      ? `a comma-separated list of distinct GPU indices (integers from 0), at most ${GPU_INDICES_MAX}, such as "0,1"`
      : `a list of distinct GPU indices (integers from 0), at most ${GPU_INDICES_MAX}`;
  let items: unknown[];
  if (source === 'annotation') {
    if (typeof input !== 'string') return refused(fieldIssue(field, input, expected));
    items = input.split(',').map((s) => (/^\d{1,3}$/.test(s) ? Number(s) : Number.NaN));
  } else {
    if (!Array.isArray(input)) return refused(fieldIssue(field, input, expected));
    items = input;
  }
  const valid =
    items.length > 0 &&
    items.length <= GPU_INDICES_MAX &&
    items.every((i) => Number.isInteger(i) && (i as number) >= 0 && (i as number) < 1000);
  return valid && new Set(items).size === items.length ? checked(items as number[]) : refused(fieldIssue(field, input, expected));
}

function checkVendor(field: string, input: unknown) {
  return typeof input === 'string' && input.toUpperCase() === MANAGED_GPU_VENDOR
    ? checked(MANAGED_GPU_VENDOR)
    : refused(fieldIssue(field, input, `"${MANAGED_GPU_VENDOR}", the vendor of every GPU this package manages`));
}

// Go's time.ParseDuration syntax (upstream parses the value with it); no npm package reads exactly
// this grammar, and it is one regular expression.
const GO_DURATION = /^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$/;

function checkDuration(field: string, input: unknown) {
  return typeof input === 'string' && GO_DURATION.test(input)
    ? checked(input)
    : refused(fieldIssue(field, input, 'a duration such as "30m" or "1h30m"'));
}

/** Checks a value of an upstream kind (values.ts delegates here). */
export function checkUpstreamValue(kind: UpstreamValueKind, field: string, input: unknown, ctx: ValueContext): Checked {
  switch (kind) {
    case 'percent':
      return checkPercent(field, input, ctx.source);
    case 'gpuIndices':
      return checkGpuIndices(field, input, ctx.source);
    case 'vendor':
      return checkVendor(field, input);
    case 'duration':
      return checkDuration(field, input);
  }
}

/**
 * Rules tying the upstream fields to the others: a share is written in TFLOPS or in percent of a
 * GPU, not both; dedicated-gpu takes the whole GPU, so no amount of compute goes with it; gpu-indices
 * fixes the GPU count.
 */
export function checkUpstreamRules(
  s: GpuWorkloadSettings,
  raw: Partial<Record<GpuWorkloadOptionName, unknown>>,
  field: (option: GpuWorkloadOptionName) => string,
  source: ValueSource,
): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const push = (issue: FieldIssue | undefined) => issue && issues.push(issue);
  push(
    checkLimitAtLeastRequest(
      field('computePercentLimit'),
      s.computePercentLimit,
      raw.computePercentLimit,
      field('computePercentRequest'),
      s.computePercentRequest,
      raw.computePercentRequest,
    ),
  );
  const tflops = (['tflopsRequest', 'tflopsLimit'] as const).find((o) => raw[o] !== undefined);
  const dedicated = s.dedicatedGpu === true;
  for (const o of ['computePercentRequest', 'computePercentLimit'] as const) {
    if (raw[o] === undefined) continue;
    if (dedicated)
      issues.push(
        fieldIssue(
          field(o),
          raw[o],
          `nothing, since ${field('dedicatedGpu')} is ${source === 'annotation' ? '"true"' : 'true'} (the whole GPU)`,
        ),
      );
    else if (tflops)
      issues.push(
        fieldIssue(
          field(o),
          raw[o],
          `nothing, since ${field(tflops)} is set: a share is written in TFLOPS or in percent of a GPU, not both`,
        ),
      );
  }
  if (dedicated && tflops) {
    issues.push(
      fieldIssue(
        field(tflops),
        raw[tflops],
        `nothing, since ${field('dedicatedGpu')} is ${source === 'annotation' ? '"true"' : 'true'} (the whole GPU's TFLOPS)`,
      ),
    );
  }
  if (s.gpuIndices !== undefined && s.gpuCount !== undefined && s.gpuCount !== s.gpuIndices.length) {
    issues.push(fieldIssue(field('gpuCount'), raw.gpuCount, `${s.gpuIndices.length} (the number of ${field('gpuIndices')}) or nothing`));
  }
  return issues;
}
