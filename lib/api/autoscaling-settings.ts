/**
 * The codec of the WorkloadProfile's `autoScalingConfig`: strings in, typed settings with every default applied
 * out, and an issue for each value that the schema pattern cannot rule out (zero periods and steps,
 * unknown forecast models). Defaults are VPA's and HPA's where they have one (noted per field);
 * README.md in this folder maps each field onto the recommender.
 */
import type { AutoScalingConfig } from './workload-profile';
import { FieldIssue, fieldIssue } from '../model/errors';
import { checkEnum } from '../model/rules';
import { checkForecastModel, ForecastModel } from './autoscaling-formats';
import {
  TARGET_RESOURCES,
  TargetResource,
  DURATION_EXPECTED,
  FRACTION_EXPECTED,
  MULTIPLIER_EXPECTED,
  PERCENTILE_EXPECTED,
  RATIO_EXPECTED,
  parseDuration,
  parseFraction,
  parseMultiplier,
  parsePercentile,
  parseRatio,
} from './autoscaling-formats';

export interface PredictionSettings {
  readonly enable: boolean;
  /** Seconds of history the model reads. */
  readonly historyS: number;
  /** Seconds ahead the model looks. */
  readonly horizonS: number;
  readonly model: ForecastModel;
}

export interface RequestSettings {
  readonly enable: boolean;
  /** Percentile (0..1) of the decaying histogram that becomes the request. */
  readonly percentile: number;
  /** Safety margin over the percentile (VPA's 0.15 by default). */
  readonly margin: number;
  /** Half-life of the histogram and width of a VRAM peak window, seconds. */
  readonly aggregationS: number;
  /** History read from Prometheus when the recommender starts, seconds. */
  readonly historyS: number;
  readonly target: TargetResource;
  readonly prediction: PredictionSettings;
}

export interface LimitSettings {
  readonly enable: boolean;
  /** Window of recent usage checked for pressure on the limit, seconds. */
  readonly evaluationS: number;
  /** Headroom of the TFLOPS limit over the upper-bound estimate. */
  readonly tflopsBuffer: number;
  /** Relative changes below this are not applied (nor reported by an Event). */
  readonly ignoredDelta: number;
  /** The limit never exceeds this multiple of the request. */
  readonly maxRatioToRequests: number;
  /** Growth of a limit per evaluation while usage presses on it. */
  readonly scaleUpStep: number;
  readonly target: TargetResource;
  readonly prediction: PredictionSettings;
}

export interface ReplicaSettings {
  readonly enable: boolean;
  /** Usage is averaged over this window before each decision, seconds. */
  readonly evaluationS: number;
  /** Desired share of the TFLOPS limits in use (HPA's target utilisation). */
  readonly targetOfLimits: number;
  /** At most this ratio of replicas added per scale-up (at least one). */
  readonly scaleUpStep: number;
  /** At most this ratio of replicas removed per scale-down (at least one). */
  readonly scaleDownStep: number;
  readonly scaleUpCooldownS: number;
  readonly scaleDownCooldownS: number;
}

export interface AutoscaleSettings {
  readonly requests: RequestSettings;
  readonly limits: LimitSettings;
  readonly replicas: ReplicaSettings;
}

/** Defaults of every field, as the strings a user would write. */
export const AUTOSCALE_DEFAULTS = {
  prediction: { historyDataPeriod: '7d', predictionPeriod: '1h', model: 'seasonal-naive' as ForecastModel },
  autoSetRequests: {
    // VPA: target percentile 0.9, safety margin 0.15, half-life and memory peak window 24h, 8 days of history.
    percentileForAutoRequests: '0.9',
    extraBufferRatio: '0.15',
    aggregationPeriod: '24h',
    evaluationPeriod: '8d',
    targetResource: 'all' as TargetResource,
  },
  autoSetLimits: {
    evaluationPeriod: '30s',
    extraTFlopsBufferRatio: '0.1',
    // upstream TensorFusion's updateThreshold
    ignoredDeltaRange: '0.1',
    maxRatioToRequests: '5.0',
    scaleUpStep: '0.2',
    targetResource: 'all' as TargetResource,
  },
  autoSetReplicas: {
    evaluationPeriod: '1m',
    targetTFlopsOfLimits: '0.8',
    // HPA: scale up by up to 100 % at once, no up cooldown beyond the evaluation; scale down after a 5m window.
    scaleUpStep: '1.0',
    scaleDownStep: '0.5',
    scaleUpCoolDownTime: '1m',
    scaleDownCoolDownTime: '5m',
  },
} as const;

/** The percentiles VPA reads for its lower and upper bounds; the target is configurable. */
export const LOWER_BOUND_PERCENTILE = 0.5;
export const UPPER_BOUND_PERCENTILE = 0.95;
/** Percentile of TFLOPS usage a limit covers (upstream TensorFusion's upper bound). */
export const LIMIT_PERCENTILE = 0.99;

type Parser = (input: unknown) => number | undefined;
type Obj = Record<string, unknown>;

class Reader {
  readonly issues: FieldIssue[] = [];
  constructor(
    private readonly block: Obj | undefined,
    private readonly prefix: string,
  ) {}

  /** Parses `name` (or its default) and checks it; an issue is recorded and the default used when bad. */
  value(
    name: string,
    fallback: string,
    parse: Parser,
    expected: string,
    ok: (v: number) => boolean = () => true,
    okExpected = expected,
  ): number {
    const input = this.block?.[name];
    if (input === undefined) return parse(fallback)!;
    const v = parse(input);
    if (v === undefined) this.issues.push(fieldIssue(`${this.prefix}.${name}`, input, expected));
    else if (!ok(v)) this.issues.push(fieldIssue(`${this.prefix}.${name}`, input, okExpected));
    return v !== undefined && ok(v) ? v : parse(fallback)!;
  }

  period(name: string, fallback: string): number {
    return this.value(name, fallback, parseDuration, DURATION_EXPECTED, (v) => v > 0, `a duration above zero such as ${fallback}`);
  }

  target(): TargetResource {
    const input = this.block?.targetResource;
    if (input === undefined) return 'all';
    const issue = checkEnum(`${this.prefix}.targetResource`, input, TARGET_RESOURCES);
    if (issue) this.issues.push(issue);
    return issue ? 'all' : (input as TargetResource);
  }

  enable(): boolean {
    return this.block?.enable === true;
  }

  prediction(): PredictionSettings {
    const block = this.block?.prediction as Obj | undefined;
    const r = new Reader(block, `${this.prefix}.prediction`);
    const d = AUTOSCALE_DEFAULTS.prediction;
    const model = block?.model === undefined ? d.model : block.model;
    const modelIssue = checkForecastModel(`${this.prefix}.prediction.model`, model);
    const out: PredictionSettings = {
      enable: r.enable(),
      historyS: r.period('historyDataPeriod', d.historyDataPeriod),
      horizonS: r.period('predictionPeriod', d.predictionPeriod),
      model: modelIssue ? d.model : (model as ForecastModel),
    };
    this.issues.push(...r.issues, ...(modelIssue ? [modelIssue] : []));
    return out;
  }
}

const positive = (v: number) => v > 0;

/**
 * Typed settings of an `autoScalingConfig` (absent blocks are disabled, absent fields take
 * {@link AUTOSCALE_DEFAULTS}), with an issue for every bad field. Never throws.
 * @example decodeAutoScalingConfig({ autoSetReplicas: { enable: true, scaleUpStep: '0' } }).issues
 *   // ['spec.autoScalingConfig.autoSetReplicas.scaleUpStep: got "0", expected a ratio above 0 such as 0.5 or 50%']
 */
export function decodeAutoScalingConfig(
  config: AutoScalingConfig | undefined,
  prefix = 'spec.autoScalingConfig',
): { settings: AutoscaleSettings; issues: FieldIssue[] } {
  const rq = new Reader(config?.autoSetRequests as Obj | undefined, `${prefix}.autoSetRequests`);
  const dq = AUTOSCALE_DEFAULTS.autoSetRequests;
  const requests: RequestSettings = {
    enable: rq.enable(),
    percentile: rq.value(
      'percentileForAutoRequests',
      dq.percentileForAutoRequests,
      parsePercentile,
      PERCENTILE_EXPECTED,
      positive,
      'a percentile above 0 such as 0.95 or 95%',
    ),
    margin: rq.value('extraBufferRatio', dq.extraBufferRatio, parseRatio, RATIO_EXPECTED),
    aggregationS: rq.period('aggregationPeriod', dq.aggregationPeriod),
    historyS: rq.period('evaluationPeriod', dq.evaluationPeriod),
    target: rq.target(),
    prediction: rq.prediction(),
  };
  const rl = new Reader(config?.autoSetLimits as Obj | undefined, `${prefix}.autoSetLimits`);
  const dl = AUTOSCALE_DEFAULTS.autoSetLimits;
  const limits: LimitSettings = {
    enable: rl.enable(),
    evaluationS: rl.period('evaluationPeriod', dl.evaluationPeriod),
    tflopsBuffer: rl.value('extraTFlopsBufferRatio', dl.extraTFlopsBufferRatio, parseRatio, RATIO_EXPECTED),
    ignoredDelta: rl.value('ignoredDeltaRange', dl.ignoredDeltaRange, parseFraction, FRACTION_EXPECTED),
    maxRatioToRequests: rl.value('maxRatioToRequests', dl.maxRatioToRequests, parseMultiplier, MULTIPLIER_EXPECTED),
    scaleUpStep: rl.value('scaleUpStep', dl.scaleUpStep, parseRatio, RATIO_EXPECTED, positive, 'a ratio above 0 such as 0.2 or 20%'),
    target: rl.target(),
    prediction: rl.prediction(),
  };
  const rr = new Reader(config?.autoSetReplicas as Obj | undefined, `${prefix}.autoSetReplicas`);
  const dr = AUTOSCALE_DEFAULTS.autoSetReplicas;
  const replicas: ReplicaSettings = {
    enable: rr.enable(),
    evaluationS: rr.period('evaluationPeriod', dr.evaluationPeriod),
    targetOfLimits: rr.value(
      'targetTFlopsOfLimits',
      dr.targetTFlopsOfLimits,
      parseFraction,
      FRACTION_EXPECTED,
      positive,
      'a ratio above 0 and at most 1 such as 0.8 or 80%',
    ),
    scaleUpStep: rr.value('scaleUpStep', dr.scaleUpStep, parseRatio, RATIO_EXPECTED, positive, 'a ratio above 0 such as 0.5 or 50%'),
    scaleDownStep: rr.value(
      'scaleDownStep',
      dr.scaleDownStep,
      parseFraction,
      FRACTION_EXPECTED,
      positive,
      'a ratio above 0 and at most 1 such as 0.5 or 50%',
    ),
    scaleUpCooldownS: rr.value('scaleUpCoolDownTime', dr.scaleUpCoolDownTime, parseDuration, DURATION_EXPECTED),
    scaleDownCooldownS: rr.value('scaleDownCoolDownTime', dr.scaleDownCoolDownTime, parseDuration, DURATION_EXPECTED),
  };
  return { settings: { requests, limits, replicas }, issues: [...rq.issues, ...rl.issues, ...rr.issues] };
}

/** The issues of {@link decodeAutoScalingConfig} for a spec, for the schema validator's semantic rules. */
export function autoScalingIssues(spec: unknown, prefix: string): FieldIssue[] {
  const config = spec !== null && typeof spec === 'object' ? (spec as Obj).autoScalingConfig : undefined;
  if (config === null || typeof config !== 'object') return [];
  return decodeAutoScalingConfig(config as AutoScalingConfig, `${prefix}.autoScalingConfig`).issues;
}
