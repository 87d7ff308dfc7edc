/**
 * The recommender loop (leader only): for every TensorFusionWorkload whose autoScalingConfig enables a
 * block, it reads the node agent's per-pod metrics from Prometheus, feeds the pure recommender
 * (lib/autoscale/), writes the recommendation to `status.autoscaling` (an Event when it moves beyond
 * ignoredDeltaRange) and, for autoSetReplicas, scales the owner through `/scale` unless an HPA
 * targets it. Without a Prometheus URL every such workload says that autoscaling is off.
 */
import type { Logger } from 'pino';
import type { Condition, TensorFusionWorkload } from '../../api';
import { AutoscaleSettings, decodeAutoScalingConfig } from '../../api/autoscaling-settings';
import { Recommendation, ReplicaRecommender, ResourceRecommender, Resources, settle, StatusRecommendation } from '../../autoscale';
import type { FieldIssue } from '../../model/errors';
import { formatBytes, parseQuantity } from '../../k8s/quantity';
import { formatTflops } from '../../model/share-quantity';
import { AGENT_METRICS } from '../../contract/agent';
import { Cluster, K8sObject, updateWithRetry } from '../kube/cluster';
import { setCondition } from '../shared/capacity';
import { keyOf, RESOURCES } from '../kube/resources';
import { PrometheusClient, promRegexLiteral, promString, RangeSeries } from '../shared/prometheus';
import { hpaFor, ScaleClient, scaleTargetOf } from './scale';
import { oomKillsOf } from '../shared/oom';

export type Workload = TensorFusionWorkload & K8sObject;

/** Condition types the loop owns on a TensorFusionWorkload. */
export const AUTOSCALING_CONDITION = 'AutoscalingActive';
export const REPLICA_CONDITION = 'ReplicaScaling';

/** Resolution of the usage samples read from Prometheus. */
export const SAMPLE_STEP_S = 60;

export interface AutoscaleLoopOptions {
  /** Leader-fenced client: status, events, /scale. */
  readonly cluster: Cluster;
  /** Undefined: autoscaling is off (the prop `prometheusUrl` is not set). */
  readonly prometheus?: PrometheusClient;
  readonly scale: ScaleClient;
  readonly workloads: () => Workload[];
  /** Names of the workload's pods (the pods labelled with the workload). */
  readonly podNames: (workloadKey: string) => string[];
  /**
   * The workload's pods as cached (their containers' last OOM kills, see oom.ts), for the VRAM bump.
   * Without it no OOM kill is fed to the recommender.
   */
  readonly pods?: (workloadKey: string) => K8sObject[];
  /**
   * Upper bound of replicas for autoSetReplicas: what the workload's pool can still hold. The lower
   * bound is 1 (autoscaling never scales an owner to zero).
   */
  readonly maxReplicas: (workload: Workload, current: number) => number;
  readonly nowS: () => number;
  readonly logger?: Logger;
  /** Resolution of the samples read. @default {@link SAMPLE_STEP_S} */
  readonly stepS?: number;
}

interface State {
  readonly configKey: string;
  readonly resources: ResourceRecommender;
  readonly replicas: ReplicaRecommender;
  lastSampleS: number;
  /** Requests and limits the recommendation started from (the spec), then what was recommended. */
  current: Resources;
  /** OOM kills already fed, by pod UID, container and time. */
  readonly ooms: Set<string>;
}

/** Window before an OOM kill whose VRAM peak is taken as the usage at the kill. */
const OOM_LOOKBACK_STEPS = 5;

type ConditionUpdate = Omit<Condition, 'lastTransitionTime'>;

const toIso = (s: number) => new Date(s * 1000).toISOString();

/** Seconds of history read on the first tick: the requests' evaluationPeriod, or a longer enabled prediction's. */
function historyOf(s: ReturnType<typeof decodeAutoScalingConfig>['settings']): number {
  const predictions = [s.requests.prediction, s.limits.prediction].filter((p) => p.enable).map((p) => p.historyS);
  return Math.max(s.requests.historyS, ...predictions);
}

/** Requests and limits of a spec (per GPU), when complete. */
function specResources(wl: Workload): Resources | undefined {
  const r = wl.spec?.resources;
  const n = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? parseQuantity(v) : undefined);
  const out = {
    tflopsRequest: n(r?.requests.tflops),
    tflopsLimit: n(r?.limits.tflops),
    vramRequest: n(r?.requests.vram),
    vramLimit: n(r?.limits.vram),
  };
  return Object.values(out).every((v) => v !== undefined) ? (out as Resources) : undefined;
}

function changedBeyond(prev: StatusRecommendation | undefined, next: Resources, delta: number): boolean {
  if (!prev) return true;
  const q = (v: string | number) => parseQuantity(v) ?? 0;
  const was: Resources = {
    tflopsRequest: q(prev.requests.tflops),
    tflopsLimit: q(prev.limits.tflops),
    vramRequest: q(prev.requests.vram),
    vramLimit: q(prev.limits.vram),
  };
  return (Object.keys(next) as (keyof Resources)[]).some((k) => settle(was[k], next[k], delta) !== was[k]);
}

/** As a spec's `resources` (per GPU), rounded: TFLOPS to 0.001, VRAM up to whole MiB. */
function formatRecommendation(r: Resources): StatusRecommendation {
  const t = (v: number) => formatTflops(Math.round(v * 1000) / 1000);
  const b = (v: number) => formatBytes(Math.ceil(v / 2 ** 20) * 2 ** 20);
  return { requests: { tflops: t(r.tflopsRequest), vram: b(r.vramRequest) }, limits: { tflops: t(r.tflopsLimit), vram: b(r.vramLimit) } };
}

const isEnabled = (s: AutoscaleSettings): boolean => s.requests.enable || s.limits.enable || s.replicas.enable;

/** Why an enabled workload cannot be recommended for: an invalid config or no Prometheus. */
function blockedCondition(issues: readonly FieldIssue[], hasPrometheus: boolean): ConditionUpdate | undefined {
  if (issues.length) {
    return { type: AUTOSCALING_CONDITION, status: 'False', reason: 'InvalidConfig', message: issues.map((i) => i.message).join('; ') };
  }
  if (!hasPrometheus) {
    return {
      type: AUTOSCALING_CONDITION,
      status: 'False',
      reason: 'PrometheusNotConfigured',
      message: 'autoscaling is off: set the prometheusUrl prop of TensorFusionController to the Prometheus that scrapes the node agent',
    };
  }
  return undefined;
}

const NO_RESOURCES: ConditionUpdate = {
  type: AUTOSCALING_CONDITION,
  status: 'False',
  reason: 'NoResources',
  message: 'spec.resources (requests and limits) is needed as the starting point',
};

/** The recommendation where it moved beyond `delta` from `current`, else `current`; VRAM (incompressible) always rises. */
function settleResources(current: Resources, recommended: Resources, delta: number): Resources {
  return {
    tflopsRequest: settle(current.tflopsRequest, recommended.tflopsRequest, delta),
    tflopsLimit: settle(current.tflopsLimit, recommended.tflopsLimit, delta),
    vramRequest: settle(current.vramRequest, recommended.vramRequest, delta, true),
    vramLimit: settle(current.vramLimit, recommended.vramLimit, delta, true),
  };
}

function recommendingCondition(podCount: number, rec: Recommendation): ConditionUpdate {
  return {
    type: AUTOSCALING_CONDITION,
    status: 'True',
    reason: 'Recommending',
    message: `from ${podCount} pod(s), confidence ${rec.confidence.toFixed(2)} aggregation periods${rec.oomBump ? ', VRAM raised after an OOM kill' : ''}`,
  };
}

export class AutoscaleLoop {
  private readonly states = new Map<string, State>();

  constructor(private readonly opts: AutoscaleLoopOptions) {}

  /** One pass over every workload; a failure in one workload is logged and does not stop the others. */
  async tick(): Promise<void> {
    const seen = new Set<string>();
    for (const wl of this.opts.workloads()) {
      const key = keyOf(wl.metadata);
      seen.add(key);
      try {
        await this.reconcile(key, wl);
      } catch (err) {
        this.opts.logger?.warn({ workload: key, err: String(err) }, 'autoscaling failed; retrying next tick');
      }
    }
    for (const key of this.states.keys()) if (!seen.has(key)) this.states.delete(key);
  }

  private async reconcile(key: string, wl: Workload): Promise<void> {
    const config = wl.spec?.autoScalingConfig;
    const { settings, issues } = decodeAutoScalingConfig(config);
    if (!isEnabled(settings)) {
      this.states.delete(key);
      return;
    }
    const now = this.opts.nowS();
    const blocked = blockedCondition(issues, this.opts.prometheus !== undefined);
    if (blocked) return this.writeStatus(wl, [blocked]);
    const start = specResources(wl);
    if (!start) return this.writeStatus(wl, [NO_RESOURCES]);
    const state = this.stateFor(key, JSON.stringify(config), settings, start, now);
    const pods = this.opts.podNames(key);
    if (pods.length === 0) return;
    const selector = `namespace=${promString(wl.metadata.namespace ?? 'default')},pod=~${promString(pods.map(promRegexLiteral).join('|'))}`;
    await this.observe(state, selector, now);
    await this.observeOoms(state, wl, key, now - historyOf(settings));

    const rec = state.resources.recommend(now);
    const delta = settings.limits.ignoredDelta;
    const next = settleResources(state.current, rec.resources, delta);
    state.current = next;
    state.resources.applied(next);
    const conditions = [recommendingCondition(pods.length, rec)];
    const prev = wl.status?.autoscaling;
    const moved = changedBeyond(prev?.recommendation, next, delta);
    const autoscaling = {
      ...prev,
      confidence: Math.round(rec.confidence * 1000) / 1000,
      ...(moved ? { recommendation: formatRecommendation(next), lastUpdateTime: toIso(now) } : {}),
    } as NonNullable<NonNullable<Workload['status']>['autoscaling']>;
    if (moved) await this.recordRecommendation(wl, next);
    if (settings.replicas.enable) conditions.push(await this.scaleReplicas(wl, state, selector, next, now, autoscaling));
    await this.writeStatus(wl, conditions, autoscaling);
  }

  /** The workload's recommender state, new when the workload is new or its config changed. */
  private stateFor(key: string, configKey: string, settings: AutoscaleSettings, start: Resources, now: number): State {
    const known = this.states.get(key);
    if (known && known.configKey === configKey) return known;
    const state: State = {
      configKey,
      current: start,
      lastSampleS: now - historyOf(settings),
      ooms: new Set(),
      resources: new ResourceRecommender(settings, start),
      replicas: new ReplicaRecommender(settings.replicas),
    };
    this.states.set(key, state);
    return state;
  }

  /** An Event for a recommendation that moved beyond ignoredDeltaRange. */
  private async recordRecommendation(wl: Workload, next: Resources): Promise<void> {
    const r = formatRecommendation(next);
    await this.opts.cluster.recordEvent(wl, {
      type: 'Normal',
      reason: 'AutoscaleRecommendation',
      message: `requests tflops ${r.requests.tflops} vram ${r.requests.vram}, limits tflops ${r.limits.tflops} vram ${r.limits.vram}`,
    });
  }

  /** Reads the samples since the last read (the whole history the first time) into the recommender. */
  private async observe(state: State, selector: string, now: number): Promise<void> {
    const prom = this.opts.prometheus!;
    const from = state.lastSampleS + 1;
    if (from > now) return;
    const [tflops, vram] = await Promise.all([
      prom.queryRange(`${AGENT_METRICS.computeUsed}{${selector}}`, from, now, this.opts.stepS ?? SAMPLE_STEP_S),
      prom.queryRange(`${AGENT_METRICS.vramUsed}{${selector}}`, from, now, this.opts.stepS ?? SAMPLE_STEP_S),
    ]);
    const seriesKey = (m: Record<string, string>) => `${m.pod}/${m.container}/${m.gpu_uuid}`;
    // One point per container, GPU and time of either series: a share the agent could not measure
    // (its daemon or pmon gave no figure) has VRAM but no TFLOPS (undefined, never read as zero).
    const at = new Map<string, { t: number; tflops?: number; vram: number }>();
    const point = (s: RangeSeries, t: number) => {
      const key = `${seriesKey(s.metric)}@${t}`;
      const p = at.get(key) ?? { t, vram: 0 };
      at.set(key, p);
      return p;
    };
    for (const s of vram) for (const [t, v] of s.values) point(s, t).vram = v;
    for (const s of tflops) for (const [t, v] of s.values) point(s, t).tflops = v;
    const points = [...at.values()].map((p): [number, number | undefined, number] => [p.t, p.tflops, p.vram]);
    points.sort((a, b) => a[0] - b[0]);
    for (const [t, tf, vr] of points) state.resources.observe(t, tf, vr);
    if (points.length) state.lastSampleS = points[points.length - 1][0];
  }

  /**
   * Feeds the OOM kills not fed yet (and within the history read) to the recommender: the usage at the
   * kill is the container's VRAM peak over the minutes before it, at least the VRAM request in force
   * (VPA takes the memory request when it knows no usage).
   */
  private async observeOoms(state: State, wl: Workload, key: string, sinceS: number): Promise<void> {
    const namespace = wl.metadata.namespace ?? 'default';
    const lookback = OOM_LOOKBACK_STEPS * (this.opts.stepS ?? SAMPLE_STEP_S);
    for (const pod of this.opts.pods?.(key) ?? []) {
      for (const kill of oomKillsOf(pod)) {
        const id = `${pod.metadata.uid}/${kill.container}/${kill.atS}`;
        if (state.ooms.has(id) || kill.atS < sinceS) continue;
        const selector = `namespace=${promString(namespace)},pod=${promString(pod.metadata.name ?? '')},container=${promString(kill.container)}`;
        const [peak] = await this.opts.prometheus!.query(
          `max(max_over_time(${AGENT_METRICS.vramUsed}{${selector}}[${lookback}s]))`,
          kill.atS,
        );
        state.resources.oom(kill.atS, Math.max(peak?.value ?? 0, state.current.vramRequest));
        state.ooms.add(id);
        this.opts.logger?.info(
          { workload: key, pod: pod.metadata.name, container: kill.container, vram: peak?.value },
          'OOM kill fed to the recommender',
        );
      }
    }
  }

  private async scaleReplicas(
    wl: Workload,
    state: State,
    selector: string,
    current: Resources,
    now: number,
    autoscaling: { desiredReplicas?: number },
  ): Promise<ConditionUpdate> {
    const target = scaleTargetOf(wl);
    if (!target) {
      return {
        type: REPLICA_CONDITION,
        status: 'False',
        reason: 'NoScalableOwner',
        message: 'the workload is not owned by a Deployment or StatefulSet',
      };
    }
    const hpa = await hpaFor(this.opts.cluster, target);
    if (hpa) {
      return {
        type: REPLICA_CONDITION,
        status: 'False',
        reason: 'HorizontalPodAutoscalerPresent',
        message: `HorizontalPodAutoscaler ${hpa.metadata.name} already scales ${target.kind} ${target.name}; autoSetReplicas does not act`,
      };
    }
    const replicas = await this.opts.scale.getReplicas(target);
    if (replicas === undefined)
      return { type: REPLICA_CONDITION, status: 'False', reason: 'OwnerNotFound', message: `${target.kind} ${target.name} was not found` };
    const s = this.settingsOf(state).replicas;
    const [usage] = await this.opts.prometheus!.query(
      `sum(avg_over_time(${AGENT_METRICS.computeUsed}{${selector}}[${s.evaluationS}s]))`,
      now,
    );
    const gpuCount = wl.spec?.gpuCount ?? 1;
    const decision = state.replicas.decide({
      nowS: now,
      current: replicas,
      usageTflops: usage?.value,
      limitPerReplica: current.tflopsLimit * gpuCount,
      min: 1,
      max: Math.max(1, this.opts.maxReplicas(wl, replicas)),
    });
    autoscaling.desiredReplicas = decision.replicas;
    if (decision.replicas !== replicas) {
      await this.opts.scale.setReplicas(target, decision.replicas);
      await this.opts.cluster.recordEvent(wl, {
        type: 'Normal',
        reason: 'AutoscaleReplicas',
        message: `${target.kind} ${target.name} scaled from ${replicas} to ${decision.replicas} (${decision.reason}, usage ${(usage?.value ?? 0).toFixed(1)} TFLOPS)`,
      });
    }
    return {
      type: REPLICA_CONDITION,
      status: 'True',
      reason: 'Scaling',
      message: `${target.kind} ${target.name}: ${decision.replicas} replicas (${decision.reason})`,
    };
  }

  private settingsOf(state: State) {
    return decodeAutoScalingConfig(JSON.parse(state.configKey)).settings;
  }

  /** Sets the loop's conditions and `status.autoscaling` through /status, retrying conflicts. */
  private async writeStatus(wl: Workload, conditions: ConditionUpdate[], autoscaling?: unknown): Promise<void> {
    const now = toIso(this.opts.nowS());
    const rt = RESOURCES.tensorfusionworkloads;
    await updateWithRetry<Workload>(
      this.opts.cluster,
      rt,
      { namespace: wl.metadata.namespace, name: wl.metadata.name! },
      (cur) => {
        const status = { workerCount: 0, ...cur.status } as NonNullable<Workload['status']>;
        let conds = status.conditions;
        for (const c of conditions) conds = setCondition(conds, c, now);
        const next = { ...status, conditions: conds, ...(autoscaling ? { autoscaling } : {}) } as Workload['status'];
        // Only a change is written: conditions keep their transition time when nothing moved.
        return JSON.stringify(next) === JSON.stringify(cur.status) ? undefined : { ...cur, status: next };
      },
      (next) => this.opts.cluster.replaceStatus(rt, next),
      { cached: wl },
    );
  }
}
