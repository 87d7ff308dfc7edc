/**
 * Taints and tolerations (core/v1 `Node.spec.taints[]`, `Pod.spec.tolerations[]`) and the Kubernetes
 * rule that matches one to the other.
 */

/** A node taint, as `Node.spec.taints[]` holds it. */
export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

/**
 * A pod toleration, as `Pod.spec.tolerations[]` holds it. Fields are plain strings so that the
 * toleration types of kubernetes-models, cdk8s and Pulumi all fit.
 */
export interface Toleration {
  key?: string;
  /** @default Equal */
  operator?: string;
  value?: string;
  /** Matches every effect when omitted. */
  effect?: string;
  tolerationSeconds?: number;
}

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
