/**
 * Replica recommendations, HPA-like: desired = ceil(current * usage / (targetTFlopsOfLimits * limits)),
 * with HPA's 10 % tolerance, per-step bounds from scaleUpStep / scaleDownStep (at least one replica per
 * step), cooldowns after each change, and a scale-down stabilisation window (the highest desire over
 * the last scaleDownCoolDownTime wins, so a short dip never removes replicas). Missing or zero usage
 * holds the count. Pure: time is passed in.
 */
import type { ReplicaSettings } from '../api/autoscaling-settings';

/** HPA's default tolerance: no change while usage is within 10 % of the target. */
export const REPLICA_TOLERANCE = 0.1;

/** What one decision reads. */
export interface ReplicaInput {
  readonly nowS: number;
  readonly current: number;
  /** TFLOPS in use by all replicas, averaged over evaluationPeriod; undefined when nothing measured them. */
  readonly usageTflops: number | undefined;
  /** TFLOPS limit of one replica (all its GPUs). */
  readonly limitPerReplica: number;
  /** Bounds (see README: which fields give them). */
  readonly min: number;
  readonly max: number;
}

export interface ReplicaDecision {
  readonly replicas: number;
  /** Why `replicas` differs from the raw desire, or why nothing changed. */
  readonly reason: 'scale-up' | 'scale-down' | 'within-tolerance' | 'cooldown' | 'stabilising' | 'at-bound' | 'steady' | 'no-compute-data';
  /** The unbounded desire, for status. */
  readonly desired: number;
}

export class ReplicaRecommender {
  private lastChangeS = -Infinity;
  private lastDirection: 'up' | 'down' | undefined;
  private readonly desires: { t: number; d: number }[] = [];

  constructor(private readonly settings: ReplicaSettings) {}

  /** Decides the replica count now; call it once per evaluation and apply the result. */
  decide(input: ReplicaInput): ReplicaDecision {
    const s = this.settings;
    const { current, nowS } = input;
    // Missing or zero usage (a share whose daemon or pmon gave no figure; a broken probe reads 0) is no
    // evidence of idleness: the count stays, within the bounds, and the window learns nothing.
    if (input.usageTflops === undefined || input.usageTflops <= 0) {
      return { replicas: clamp(current, input.min, input.max), reason: 'no-compute-data', desired: current };
    }
    const capacity = current * input.limitPerReplica * s.targetOfLimits;
    const ratio = capacity > 0 ? input.usageTflops / capacity : 1;
    const raw = Math.abs(ratio - 1) <= REPLICA_TOLERANCE ? current : Math.ceil(current * ratio);
    const desired = clamp(raw, input.min, input.max);
    this.desires.push({ t: nowS, d: desired });
    while (this.desires.length && this.desires[0].t <= nowS - s.scaleDownCooldownS) this.desires.shift();
    if (Math.abs(ratio - 1) <= REPLICA_TOLERANCE && clamp(current, input.min, input.max) === current) {
      return { replicas: current, reason: 'within-tolerance', desired };
    }
    if (desired > current) {
      if (nowS - this.lastChangeS < s.scaleUpCooldownS) return { replicas: current, reason: 'cooldown', desired };
      const step = Math.max(1, Math.ceil(current * s.scaleUpStep));
      return this.change(nowS, Math.min(desired, current + step), 'up', desired);
    }
    if (desired < current) {
      // Scale-down waits a full cooldown after any change, and for the window's highest desire.
      if (nowS - this.lastChangeS < s.scaleDownCooldownS) return { replicas: current, reason: 'cooldown', desired };
      const stable = Math.max(...this.desires.map((x) => x.d));
      if (stable >= current) return { replicas: current, reason: 'stabilising', desired };
      const step = Math.max(1, Math.floor(current * s.scaleDownStep));
      return this.change(nowS, Math.max(stable, current - step), 'down', desired);
    }
    return { replicas: current, reason: desired === raw ? 'steady' : 'at-bound', desired };
  }

  private change(nowS: number, replicas: number, direction: 'up' | 'down', desired: number): ReplicaDecision {
    this.lastChangeS = nowS;
    this.lastDirection = direction;
    return { replicas, reason: direction === 'up' ? 'scale-up' : 'scale-down', desired };
  }

  /** Direction of the last change, for flap counting. */
  get direction(): 'up' | 'down' | undefined {
    return this.lastDirection;
  }
}

function clamp(n: number, min: number, max: number): number {
  return Math.min(Math.max(n, min), max);
}
