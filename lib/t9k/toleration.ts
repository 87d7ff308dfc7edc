import { T9kToleration } from './pod-template';

/** A taint as `Node.spec.taints[]` holds it. */
export interface TaintLike {
  key: string;
  value?: string;
  effect: string;
}

/**
 * Whether `toleration` tolerates `taint`, by the Kubernetes rules (empty key with Exists matches every
 * taint, empty effect matches every effect, operator defaults to Equal). Written here because no npm
 * package exposes the scheduler's matching; @kubernetes/client-node only has the types.
 */
export function tolerates(toleration: T9kToleration, taint: TaintLike): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  const operator = toleration.operator ?? 'Equal';
  if (!toleration.key) return operator === 'Exists';
  if (toleration.key !== taint.key) return false;
  return operator === 'Exists' || (toleration.value ?? '') === (taint.value ?? '');
}

/** The toleration that matches exactly `taint`. */
export function tolerationFor(taint: TaintLike): T9kToleration {
  return { key: taint.key, operator: 'Equal', value: taint.value ?? '', effect: taint.effect };
}
