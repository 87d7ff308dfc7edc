/**
 * Forecasting models for `autoScalingConfig.prediction`: given a usage series sampled at a fixed step, the
 * peak expected over the next `horizonS` seconds. The recommender never goes below what it has seen;
 * a forecast can only raise a recommendation ahead of a known pattern (the morning ramp of a
 * diurnal load, a growing trend).
 */
import type { ForecastModel } from '../api/autoscaling-formats';

/** A usage series: `values[i]` was observed at `startS + i * stepS`. */
export interface Series {
  readonly startS: number;
  readonly stepS: number;
  readonly values: readonly number[];
}

const DAY_S = 86_400;

/** The seasonal-naive forecast over (now, now + horizon]: the same window one day earlier. */
function seasonalNaive(s: Series, nowS: number, horizonS: number, stat: ForecastStat): number | undefined {
  const from = Math.ceil((nowS - DAY_S - s.startS) / s.stepS);
  const to = Math.min(Math.floor((nowS + horizonS - DAY_S - s.startS) / s.stepS), s.values.length - 1);
  if (from < 0 || from > to) return undefined;
  const window = s.values.slice(from, to + 1);
  return stat === 'peak' ? Math.max(...window) : window.reduce((a, b) => a + b, 0) / window.length;
}

/** The least-squares line over (now, now + horizon]: its peak is at an end, its mean at the middle. */
function linearTrend(s: Series, nowS: number, horizonS: number, stat: ForecastStat): number | undefined {
  const n = s.values.length;
  if (n < 2) return undefined;
  let sx = 0,
    sy = 0,
    sxx = 0,
    sxy = 0;
  for (let i = 0; i < n; i++) {
    const x = s.startS + i * s.stepS;
    sx += x;
    sy += s.values[i];
    sxx += x * x;
    sxy += x * s.values[i];
  }
  const denom = n * sxx - sx * sx;
  if (denom === 0) return undefined;
  const slope = (n * sxy - sx * sy) / denom;
  const at = (t: number) => (sy - slope * sx) / n + slope * t;
  return stat === 'peak' ? Math.max(at(nowS), at(nowS + horizonS)) : at(nowS + horizonS / 2);
}

/** `peak` for limits (cover the highest expected usage), `mean` for requests (what is used on average). */
export type ForecastStat = 'peak' | 'mean';

/**
 * The usage `model` expects over the next `horizonS` (its peak or its mean), or undefined when the
 * history is too short for the model (the recommender then uses the observed histogram alone).
 * @example forecast('seasonal-naive', series, now, 3600, 'peak')
 */
export function forecast(model: ForecastModel, series: Series, nowS: number, horizonS: number, stat: ForecastStat): number | undefined {
  return model === 'seasonal-naive' ? seasonalNaive(series, nowS, horizonS, stat) : linearTrend(series, nowS, horizonS, stat);
}
