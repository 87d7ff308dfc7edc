/**
 * Validation shared by the encoder (typed options) and the decoder (pod annotations): per-value checks,
 * unknown keys with a did-you-mean hint, and the rules that tie several fields together. Fields are
 * named as the user wrote them: the option name on the typed path, the full key on the annotation path.
 */
import { didYouMean, FieldIssue, fieldIssue } from '../model/errors';
import { formatBytes } from '../k8s/quantity';
import { formatTflops } from '../model/share-quantity';
import { checkLimitAtLeastRequest } from '../model/rules';
import {
  ANNOTATION,
  AnnotationSpec,
  CONTROLLER_WRITTEN_KEYS,
  ENABLED_LABEL,
  GPU_WORKLOAD_ANNOTATIONS,
  SPEC_BY_KEY,
  SPEC_BY_OPTION,
} from './reference';
import { ANNOTATION_PREFIX } from '../model/metadata-keys';
import type { GpuWorkloadOptionName, GpuWorkloadSettings } from './options';
import { booleanLiteral, checkValue, ValueSource } from './values';
import { checkUpstreamRules, UPSTREAM_IGNORED_KEYS } from './upstream';

export interface CheckedInput {
  /** Parsed values of the fields that were present and valid. */
  readonly settings: GpuWorkloadSettings;
  /** What the user wrote for each present field (valid or not), by option name. */
  readonly raw: Readonly<Partial<Record<GpuWorkloadOptionName, unknown>>>;
  readonly issues: readonly FieldIssue[];
}

// Upstream keys not acted on are known too: a typo of one still gets its did-you-mean.
const ANNOTATION_SUFFIXES = [...GPU_WORKLOAD_ANNOTATIONS.map((s) => s.key), ...UPSTREAM_IGNORED_KEYS.keys()].map((k) =>
  k.slice(ANNOTATION_PREFIX.length),
);
const OPTION_NAMES = GPU_WORKLOAD_ANNOTATIONS.map((s) => s.option);

function unknownAnnotation(key: string, value: unknown): FieldIssue {
  const known = 'a known tensor-fusion.ai annotation';
  if (key === ENABLED_LABEL) return fieldIssue(key, value, `${known}; ${ENABLED_LABEL} is a pod label, not an annotation`);
  // Compare the parts after the shared prefix, or every key would look close.
  const hint = didYouMean(key.slice(ANNOTATION_PREFIX.length), ANNOTATION_SUFFIXES);
  if (hint) return fieldIssue(key, value, `${known}; did you mean ${ANNOTATION_PREFIX}${hint}?`);
  return fieldIssue(key, value, `${known}: ${ANNOTATION_SUFFIXES.join(', ')}`);
}

function unknownOption(name: string, value: unknown): FieldIssue {
  const hint = didYouMean(name, OPTION_NAMES);
  const known = 'a known GpuWorkloadOptions field';
  return fieldIssue(name, value, hint ? `${known}; did you mean ${hint}?` : `${known}: ${OPTION_NAMES.join(', ')}`);
}

/** Renders a parsed number back the way it is written, for limit/request messages. */
export function showQuantity(kind: 'tflops' | 'vram', value: number): string {
  return kind === 'vram' ? formatBytes(value) : formatTflops(value);
}

/**
 * Rules over several fields, shared with the merge (which passes resolved values). `field` names a
 * field for the message; `raw` is what was written for it.
 */
export function checkCrossRules(
  settings: GpuWorkloadSettings,
  raw: Partial<Record<GpuWorkloadOptionName, unknown>>,
  field: (option: GpuWorkloadOptionName) => string,
  source: ValueSource,
  containers?: readonly string[],
): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const push = (issue: FieldIssue | undefined) => issue && issues.push(issue);
  push(
    checkLimitAtLeastRequest(
      field('tflopsLimit'),
      settings.tflopsLimit,
      raw.tflopsLimit,
      field('tflopsRequest'),
      settings.tflopsRequest,
      raw.tflopsRequest,
    ),
  );
  push(
    checkLimitAtLeastRequest(
      field('vramLimit'),
      settings.vramLimit,
      raw.vramLimit,
      field('vramRequest'),
      settings.vramRequest,
      raw.vramRequest,
    ),
  );
  if (settings.generateWorkload === false && raw.workload === undefined) {
    issues.push(
      fieldIssue(
        field('workload'),
        undefined,
        `the name of an existing TensorFusionWorkload, since ${field('generateWorkload')} is ${booleanLiteral(false, source)}`,
      ),
    );
  }
  // An invalid is-local-gpu is already reported; do not pile a second message on it.
  const localKnown = settings.isLocalGpu !== undefined || raw.isLocalGpu === undefined;
  if (settings.noStandaloneWorkerMode === true && settings.isLocalGpu !== true && localKnown) {
    issues.push(
      fieldIssue(
        field('noStandaloneWorkerMode'),
        raw.noStandaloneWorkerMode,
        `${booleanLiteral(false, source)} or nothing, unless ${field('isLocalGpu')} is ${booleanLiteral(true, source)}`,
      ),
    );
  }
  issues.push(...checkUpstreamRules(settings, raw, field, source));
  if (containers && containers.length > 1 && raw.injectContainers === undefined) {
    const list = source === 'annotation' ? 'a comma-separated list of container names' : 'a list of container names';
    issues.push(
      fieldIssue(
        field('injectContainers'),
        undefined,
        `${list}, required because the pod template has ${containers.length} containers (${containers.join(', ')})`,
      ),
    );
  }
  return issues;
}

/** Each field on its own: known key, valid value. The rules over several fields are left out. */
function checkEachValue(source: ValueSource, input: unknown, names: readonly string[] | undefined): CheckedInput {
  const settings: Record<string, unknown> = {};
  const raw: Partial<Record<GpuWorkloadOptionName, unknown>> = {};
  const issues: FieldIssue[] = [];
  if (input === null || typeof input !== 'object') return { settings: {}, raw, issues };
  const map = input as Record<string, unknown>;
  for (const name of Object.keys(map)) {
    const value = map[name];
    let spec: AnnotationSpec | undefined;
    if (source === 'annotation') {
      // Upstream keys not acted on are admitted; the webhook warns about them (upstream.ts).
      if (!name.startsWith(ANNOTATION_PREFIX) || CONTROLLER_WRITTEN_KEYS.has(name) || UPSTREAM_IGNORED_KEYS.has(name)) continue;
      spec = SPEC_BY_KEY.get(name);
      if (!spec) {
        issues.push(unknownAnnotation(name, value));
        continue;
      }
    } else {
      if (value === undefined) continue;
      spec = SPEC_BY_OPTION.get(name);
      if (!spec) {
        issues.push(unknownOption(name, value));
        continue;
      }
    }
    raw[spec.option] = value;
    const checked = checkValue(spec.kind, name, value, { source, containers: names });
    issues.push(...checked.issues);
    if (checked.issues.length === 0) settings[spec.option] = checked.value;
  }
  return { settings: settings as GpuWorkloadSettings, raw, issues };
}

/**
 * Checks typed options field by field, without the rules over several fields: for options of which
 * only some are known yet (the others held in Pulumi Outputs), whose rules are checked once all are.
 */
export function checkGpuWorkloadOptionValues(options: object): readonly FieldIssue[] {
  return checkEachValue('option', options, undefined).issues;
}

/**
 * Checks pod annotations (`source: 'annotation'`; keys outside tensor-fusion.ai/ are ignored) or typed
 * options (`source: 'option'`). Never throws, whatever the input.
 */
export function checkGpuWorkloadInput(source: ValueSource, input: unknown, containers?: readonly string[]): CheckedInput {
  const names = Array.isArray(containers) ? containers.filter((c): c is string => typeof c === 'string') : undefined;
  const { settings, raw, issues } = checkEachValue(source, input, names);
  const field = source === 'annotation' ? (o: GpuWorkloadOptionName) => ANNOTATION[o] : (o: GpuWorkloadOptionName) => o;
  return { settings, raw, issues: [...issues, ...checkCrossRules(settings, raw, field, source, names)] };
}
