/**
 * Taints and tolerations (core/v1 `Node.spec.taints[]`, `Pod.spec.tolerations[]`) and the Kubernetes
 * rule that matches one to the other.
 */

/** A node taint, as `Node.spec.taints[]` holds it. */
export interface Taint {
  /** Taint key. */
  key: string;
  /** Taint value; unset for a key-only taint. */
  value?: string;
  /** `NoSchedule`, `PreferNoSchedule` or `NoExecute`. */
  effect: string;
}

/**
 * A pod toleration, as `Pod.spec.tolerations[]` holds it. Fields are plain strings so that the
 * toleration types of kubernetes-models, cdk8s and Pulumi all fit.
 */
export interface Toleration {
  /** Taint key to tolerate; with `operator: Exists` and no key, every taint. @default every key */
  key?: string;
  /** `Equal` matches the taint's value, `Exists` any value (see {@link TOLERATION_OPERATORS}). @default Equal */
  operator?: string;
  /** Taint value to match with `operator: Equal`. @default '' */
  value?: string;
  /** Matches every effect when omitted (see {@link TAINT_EFFECTS}). */
  effect?: string;
  /** How long a `NoExecute` taint is tolerated before eviction. @default forever */
  tolerationSeconds?: number;
}

/** The operators a toleration may use. */
export const TOLERATION_OPERATORS = ['Exists', 'Equal'] as const;

/** The effects of a taint (and of a toleration that names one). */
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;

/**
 * Whether `toleration` tolerates `taint`, by the Kubernetes rules (empty key with Exists matches every
 * taint, empty effect matches every effect, operator defaults to Equal). Written here because no npm
 * package exposes the scheduler's matching; @kubernetes/client-node only has the types.
 */
export function tolerates(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  const operator = toleration.operator ?? 'Equal';
  if (!toleration.key) return operator === 'Exists';
  if (toleration.key !== taint.key) return false;
  return operator === 'Exists' || (toleration.value ?? '') === (taint.value ?? '');
}

/** The toleration that matches exactly `taint`. */
export function tolerationFor(taint: Taint): Toleration {
  return { key: taint.key, operator: 'Equal', value: taint.value ?? '', effect: taint.effect };
}
