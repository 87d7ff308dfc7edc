/**
 * A minimal client of the Prometheus HTTP API (`/api/v1/query`, `/api/v1/query_range`), over Node's
 * fetch. Hand-written: the npm clients of the Prometheus *query* API are unmaintained or pull in a
 * browser HTTP stack, and two GET endpoints with a documented JSON shape need no more than this.
 */

/** One series of a range query: its labels and [unix seconds, value] points. */
export interface RangeSeries {
  readonly metric: Record<string, string>;
  readonly values: ReadonlyArray<readonly [number, number]>;
}

/** One sample of an instant query. */
export interface InstantSample {
  readonly metric: Record<string, string>;
  readonly value: number;
}

/** A failed query, with Prometheus' own error type and text when it answered. */
export class PrometheusError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PrometheusError';
  }
}

interface ApiAnswer {
  status: 'success' | 'error';
  errorType?: string;
  error?: string;
  data?: { resultType: string; result: Array<{ metric: Record<string, string>; values?: [number, string][]; value?: [number, string] }> };
}

/** Prometheus returns at most 11,000 points per series; steps are widened to stay under it. */
export const MAX_POINTS = 11_000;

export class PrometheusClient {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs = 10_000,
  ) {}

  private async get(path: string, params: Record<string, string>): Promise<ApiAnswer['data']> {
    const url = new URL(path, this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw new PrometheusError(`prometheus ${url.origin}: ${(err as Error).message}`);
    }
    const body = (await res.json().catch(() => undefined)) as ApiAnswer | undefined;
    if (!body || body.status !== 'success') {
      throw new PrometheusError(`prometheus ${url.origin}: HTTP ${res.status}${body?.error ? ` ${body.errorType}: ${body.error}` : ''}`);
    }
    return body.data;
  }

  /** Range query; `stepS` is widened when the range would exceed {@link MAX_POINTS}. */
  async queryRange(query: string, startS: number, endS: number, stepS: number): Promise<RangeSeries[]> {
    const step = Math.max(stepS, Math.ceil((endS - startS) / (MAX_POINTS - 1)));
    // Points fall on start + k*step; aligning on the end makes the freshest one always part of the answer.
    const start = endS - Math.floor((endS - startS) / step) * step;
    const data = await this.get('api/v1/query_range', { query, start: String(start), end: String(endS), step: String(step) });
    return (data?.result ?? []).map((r) => ({ metric: r.metric, values: (r.values ?? []).map(([t, v]) => [t, Number(v)] as const) }));
  }

  async query(query: string, timeS: number): Promise<InstantSample[]> {
    const data = await this.get('api/v1/query', { query, time: String(timeS) });
    return (data?.result ?? []).map((r) => ({ metric: r.metric, value: Number(r.value?.[1]) }));
  }
}

/** Escapes a label value for a PromQL string literal. */
export function promString(value: string): string {
  return JSON.stringify(value);
}

/** Escapes a literal for a PromQL (RE2) regular expression. */
export function promRegexLiteral(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
