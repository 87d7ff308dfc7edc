/**
 * String formats of the WorkloadProfile's `autoScalingConfig` fields (upstream writes every number and
 * duration as a string). Each format is one regular expression, used as the CRD/JSON-Schema
 * `pattern` (so the API server enforces it too) and by the parsers below, plus the words that
 * validation messages print. Ranges that a pattern expresses cheaply are in the pattern; the rest
 * (non-zero periods and steps) are checked by the codec (autoscaling-settings.ts).
 */
import { FieldIssue, fieldIssue } from '../model/errors';
import { oneOf } from '../model/rules';

/** A duration: one or more `<integer><unit>` parts, units s, m, h, d (as Prometheus writes them). */
export const DURATION_PATTERN = '^([0-9]+(s|m|h|d))+$';
export const DURATION_EXPECTED = 'a duration such as 30s, 5m, 1h30m or 7d (units s, m, h, d)';

/** A non-negative ratio: a decimal (`0.2`, `1.5`) or a percentage (`20%`). */
export const RATIO_PATTERN = '^([0-9]+(\\.[0-9]+)?|\\.[0-9]+)%?$';
export const RATIO_EXPECTED = 'a non-negative ratio such as 0.2 or 20%';

/** A ratio from 0 to 1: a decimal (`0.8`) or a percentage up to 100% (`80%`). */
export const FRACTION_PATTERN = '^((0?\\.[0-9]+|0|1(\\.0+)?)|((100(\\.0+)?|[0-9]{1,2}(\\.[0-9]+)?)%))$';
export const FRACTION_EXPECTED = 'a ratio from 0 to 1 such as 0.8 or 80%';

/**
 * A percentile as a fraction of 1, as upstream's recommender writes them (`0.95`), or a percentage
 * (`95%`). `95` alone is refused: it would silently mean the 9500th percentile.
 */
export const PERCENTILE_PATTERN = FRACTION_PATTERN;
export const PERCENTILE_EXPECTED = 'a percentile from 0 to 1 such as 0.95, or a percentage such as 95%';

/** A multiplier of at least 1 (`5.0`, `2`). */
export const MULTIPLIER_PATTERN = '^([1-9][0-9]*(\\.[0-9]+)?)$';
export const MULTIPLIER_EXPECTED = 'a multiplier of at least 1 such as 5.0';

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86400 };
const DURATION = new RegExp(DURATION_PATTERN);
const RATIO = new RegExp(RATIO_PATTERN);
const FRACTION = new RegExp(FRACTION_PATTERN);
const MULTIPLIER = new RegExp(MULTIPLIER_PATTERN);

/** Seconds of a duration string (`1h30m` -> 5400), or undefined when it is not one. */
export function parseDuration(input: unknown): number | undefined {
  if (typeof input !== 'string' || !DURATION.test(input)) return undefined;
  let seconds = 0;
  for (const m of input.matchAll(/([0-9]+)(s|m|h|d)/g)) seconds += Number(m[1]) * UNIT_SECONDS[m[2]];
  return seconds;
}

/** Formats seconds as the largest-unit duration string that is exact (`5400` -> `90m`). */
export function formatDuration(seconds: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    const size = UNIT_SECONDS[unit];
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${Math.round(seconds)}s`;
}

function parseDecimalOrPercent(input: string): number {
  return input.endsWith('%') ? Number(input.slice(0, -1)) / 100 : Number(input);
}

/** A non-negative ratio (`0.2`, `20%` -> 0.2), or undefined. */
export function parseRatio(input: unknown): number | undefined {
  return typeof input === 'string' && RATIO.test(input) ? parseDecimalOrPercent(input) : undefined;
}

/** A ratio from 0 to 1 (`0.8`, `80%` -> 0.8), or undefined. */
export function parseFraction(input: unknown): number | undefined {
  return typeof input === 'string' && FRACTION.test(input) ? parseDecimalOrPercent(input) : undefined;
}

/** A percentile (`0.95`, `95%` -> 0.95), or undefined. */
export const parsePercentile = parseFraction;

/** A multiplier of at least 1 (`5.0` -> 5), or undefined. */
export function parseMultiplier(input: unknown): number | undefined {
  return typeof input === 'string' && MULTIPLIER.test(input) ? Number(input) : undefined;
}

/** Which resources a request or limit block tunes (`targetResource`). */
export const TARGET_RESOURCES = ['tflops', 'vram', 'all'] as const;
export type TargetResource = (typeof TARGET_RESOURCES)[number];

/**
 * `seasonal-naive`: tomorrow repeats today. The forecast for time t is the value at t minus one day;
 * needs at least one day of history. `linear-trend`: least-squares line through the history,
 * extrapolated over the horizon (for slow growth such as a memory leak or a rising user base).
 */
export const FORECAST_MODELS = ['seasonal-naive', 'linear-trend'] as const;
export type ForecastModel = (typeof FORECAST_MODELS)[number];

/** Refuses unknown model names, listing the known ones. */
export function checkForecastModel(field: string, value: unknown): FieldIssue | undefined {
  return FORECAST_MODELS.includes(value as ForecastModel) ? undefined : fieldIssue(field, value, oneOf(FORECAST_MODELS));
}
