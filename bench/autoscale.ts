/**
 * `npm run bench:autoscale`: replays the usage traces of bench/autoscale-traces.ts (fixed seeds)
 * through the recommender twice in the same run, configured by a seed 003 autoScalingConfig and with
 * VPA's default parameters (target p90, margin 0.15, 24 h half-life, limits kept proportional to
 * requests), beside the static requests the workload was declared with; then replays a step in load
 * through the replica recommender. Prints a table per trace and ends with one JSON line.
 */
import type { AutoScalingConfig } from '../lib/api/workload-profile';
import { decodeAutoScalingConfig } from '../lib/api/autoscaling-settings';
import { ReplicaRecommender, ResourceRecommender, Resources, settle } from '../lib/autoscale';
import { replicaStep, STEP_S, Trace, TRACES } from './autoscale-traces';

/** The configuration under test: what a user would write in a WorkloadProfile. */
export const BENCH_CONFIG: AutoScalingConfig = {
  autoSetRequests: {
    enable: true,
    percentileForAutoRequests: '0.9',
    extraBufferRatio: '0.1',
    aggregationPeriod: '2h',
    evaluationPeriod: '7d',
    prediction: { enable: true, model: 'seasonal-naive', historyDataPeriod: '2d', predictionPeriod: '1h' },
  },
  autoSetLimits: {
    enable: true,
    evaluationPeriod: '5m',
    extraTFlopsBufferRatio: '0.1',
    ignoredDeltaRange: '0.05',
    maxRatioToRequests: '5.0',
    scaleUpStep: '0.2',
  },
  autoSetReplicas: {
    enable: true,
    evaluationPeriod: '5m',
    targetTFlopsOfLimits: '0.8',
    scaleUpStep: '1.0',
    scaleDownStep: '0.5',
    scaleUpCoolDownTime: '3m',
    scaleDownCoolDownTime: '10m',
  },
};

/** VPA's defaults: autoSetRequests with every default (they are VPA's), limits proportional to requests. */
const VPA_CONFIG: AutoScalingConfig = { autoSetRequests: { enable: true } };

/** How often the recommendations are recomputed and applied. */
const EVAL_S = 60;

interface TraceResult {
  trace: string;
  samples: number;
  reservedStatic: number;
  reservedVpa: number;
  reservedOurs: number;
  limitExceed: number;
  vramOverLimit: number;
  ooms: number;
  oomRecoveryS: number;
}

function decode(config: AutoScalingConfig) {
  const { settings, issues } = decodeAutoScalingConfig(config);
  if (issues.length) throw new Error(issues.map((i) => i.message).join('\n'));
  return settings;
}

function replayResources(trace: Trace): TraceResult {
  const ours = decode(BENCH_CONFIG);
  const oursRec = new ResourceRecommender(ours, trace.static);
  const vpaRec = new ResourceRecommender(decode(VPA_CONFIG), trace.static);
  let applied: Resources = trace.static;
  let vpa: Resources = trace.static;
  const r: TraceResult = {
    trace: trace.name,
    samples: trace.minutes,
    reservedStatic: 0,
    reservedVpa: 0,
    reservedOurs: 0,
    limitExceed: 0,
    vramOverLimit: 0,
    ooms: 0,
    oomRecoveryS: 0,
  };
  let startedMin = 0;
  let pendingOom: { t: number; vram: number } | undefined;
  for (let i = 0; i < trace.minutes; i++) {
    const t = i * STEP_S;
    const tflops = trace.tflops(i);
    const vram = trace.vram(i, i - startedMin);
    r.reservedStatic += trace.static.tflopsRequest;
    r.reservedOurs += applied.tflopsRequest;
    r.reservedVpa += vpa.tflopsRequest;
    if (tflops > applied.tflopsLimit) r.limitExceed++;
    if (vram > applied.vramLimit) {
      r.vramOverLimit++;
      // Incompressible: the worker is killed and restarts with its memory reset.
      r.ooms++;
      oursRec.oom(t, vram);
      pendingOom = { t, vram };
      startedMin = i;
      continue;
    }
    oursRec.observe(t, tflops, vram);
    vpaRec.observe(t, tflops, vram);
    if (t % EVAL_S === 0) {
      const next = oursRec.recommend(t).resources;
      const d = ours.limits.ignoredDelta;
      applied = {
        tflopsRequest: settle(applied.tflopsRequest, next.tflopsRequest, d),
        tflopsLimit: settle(applied.tflopsLimit, next.tflopsLimit, d, true),
        vramRequest: settle(applied.vramRequest, next.vramRequest, d, true),
        vramLimit: settle(applied.vramLimit, next.vramLimit, d, true),
      };
      oursRec.applied(applied);
      if (pendingOom && applied.vramLimit > pendingOom.vram) {
        r.oomRecoveryS = Math.max(r.oomRecoveryS, t - pendingOom.t);
        pendingOom = undefined;
      }
      const v = vpaRec.recommend(t).resources;
      // VPA keeps each limit proportional to its request.
      vpa = {
        tflopsRequest: v.tflopsRequest,
        vramRequest: v.vramRequest,
        tflopsLimit: v.tflopsRequest * (trace.static.tflopsLimit / trace.static.tflopsRequest),
        vramLimit: v.vramRequest * (trace.static.vramLimit / trace.static.vramRequest),
      };
      vpaRec.applied(vpa);
    }
  }
  return r;
}

interface ReplicaResult {
  reactionS: number;
  flaps: number;
  changes: number;
  maxReplicas: number;
}

/** Replays the step trace: usage averaged over evaluationPeriod, one decision per minute. */
function replayReplicas(): ReplicaResult {
  const s = decode(BENCH_CONFIG).replicas;
  const trace = replicaStep();
  const rec = new ReplicaRecommender(s);
  const limitPerReplica = 40;
  let replicas = 2;
  let reactionS = NaN;
  let flaps = 0;
  let changes = 0;
  let maxReplicas = replicas;
  let last: { t: number; dir: 'up' | 'down' } | undefined;
  const window: number[] = [];
  const windowMin = s.evaluationS / STEP_S;
  for (let i = 0; i < trace.minutes; i++) {
    const t = i * STEP_S;
    window.push(trace.usage(i));
    if (window.length > windowMin) window.shift();
    const avg = window.reduce((a, b) => a + b, 0) / window.length;
    const d = rec.decide({ nowS: t, current: replicas, usageTflops: avg, limitPerReplica, min: 1, max: 20 });
    if (d.replicas !== replicas) {
      const dir = d.replicas > replicas ? 'up' : 'down';
      changes++;
      if (dir === 'up' && i >= trace.stepAtMin && Number.isNaN(reactionS)) reactionS = t - trace.stepAtMin * STEP_S;
      // A flap: the direction reverses within the cooldown that guards the new direction.
      const guard = dir === 'down' ? s.scaleDownCooldownS : s.scaleUpCooldownS;
      if (last && last.dir !== dir && t - last.t < guard) flaps++;
      last = { t, dir };
      replicas = d.replicas;
      maxReplicas = Math.max(maxReplicas, replicas);
    }
  }
  return { reactionS, flaps, changes, maxReplicas };
}

function pct(part: number, whole: number): number {
  return Math.round((part / whole) * 10_000) / 100;
}

function main(): void {
  const results = TRACES.map((make) => replayResources(make()));
  console.log(
    'trace     samples  reserved static / VPA / ours (TFLOPS-min)   saved vs static  vs VPA  >limit  VRAM>limit  OOMs  OOM recovery',
  );
  for (const r of results) {
    console.log(
      `${r.trace.padEnd(9)} ${String(r.samples).padStart(7)}  ${r.reservedStatic.toFixed(0).padStart(8)} / ${r.reservedVpa.toFixed(0).padStart(7)} / ${r.reservedOurs.toFixed(0).padStart(7)}` +
        `   ${pct(r.reservedStatic - r.reservedOurs, r.reservedStatic)
          .toFixed(1)
          .padStart(13)} %  ${pct(r.reservedVpa - r.reservedOurs, r.reservedVpa)
          .toFixed(1)
          .padStart(5)} %` +
        `  ${pct(r.limitExceed, r.samples).toFixed(2).padStart(5)} %  ${String(r.vramOverLimit).padStart(10)}  ${String(r.ooms).padStart(4)}  ${r.oomRecoveryS} s`,
    );
  }
  const sum = (k: keyof TraceResult) => results.reduce((a, r) => a + (r[k] as number), 0);
  const replicas = replayReplicas();
  const s = decode(BENCH_CONFIG).replicas;
  console.log(
    `replicas: step 40 -> 120 TFLOPS (40 per replica, target 0.8): reacted after ${replicas.reactionS} s (goal <= ${s.evaluationS + s.scaleUpCooldownS} s), ${replicas.changes} changes, peak ${replicas.maxReplicas} replicas, ${replicas.flaps} flaps`,
  );
  const summary = {
    tflopsSavedVsStatic: pct(sum('reservedStatic') - sum('reservedOurs'), sum('reservedStatic')),
    tflopsSavedVsVpa: pct(sum('reservedVpa') - sum('reservedOurs'), sum('reservedVpa')),
    limitExceedPct: pct(sum('limitExceed'), sum('samples')),
    vramOverLimitSamples: results.filter((r) => r.trace !== 'leak').reduce((a, r) => a + r.vramOverLimit, 0),
    leakOomRecoveryS: results.find((r) => r.trace === 'leak')!.oomRecoveryS,
    replicaReactionS: replicas.reactionS,
    flaps: replicas.flaps,
  };
  console.log(JSON.stringify(summary));
}

main();
