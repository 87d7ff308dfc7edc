/**
 * The name checks of our components and kinds, with their messages; the DNS-1123 and label-value
 * rules themselves live in lib/k8s/names.ts.
 */
import { isDnsLabel, isDnsSubdomain, isLabelValue } from '../k8s/names';
import { FieldIssue, fieldIssue } from './errors';

/** Longest pool name: `pool-<name>` must fit the 63-character name part of a node label key. */
export const POOL_NAME_MAX = 58;

const LABEL_WORDS = "lowercase letters, digits and '-', starting and ending with a letter or digit";

/** A GPUPool name (also used in the node label `tensor-fusion.ai/pool-<name>`). */
export function checkPoolName(field: string, value: unknown): FieldIssue | undefined {
  return isDnsLabel(value, POOL_NAME_MAX)
    ? undefined
    : fieldIssue(field, value, `a DNS-1123 label of at most ${POOL_NAME_MAX} characters (${LABEL_WORDS})`);
}

/** A namespaced object name such as a TensorFusionWorkload or WorkloadProfile. */
export function checkObjectName(field: string, value: unknown): FieldIssue | undefined {
  return isDnsSubdomain(value)
    ? undefined
    : fieldIssue(
        field,
        value,
        "a DNS-1123 subdomain name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)",
      );
}

/** A container name. */
export function checkContainerName(field: string, value: unknown): FieldIssue | undefined {
  return isDnsLabel(value) ? undefined : fieldIssue(field, value, `a container name: a DNS-1123 label (${LABEL_WORDS})`);
}

export function checkLabelValue(field: string, value: unknown): FieldIssue | undefined {
  return isLabelValue(value)
    ? undefined
    : fieldIssue(field, value, "a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit");
}

/** A DNS-1123 label such as a namespace name. */
export function checkDnsLabel(field: string, value: unknown): FieldIssue | undefined {
  return isDnsLabel(value) ? undefined : fieldIssue(field, value, `a DNS-1123 label of at most 63 characters (${LABEL_WORDS})`);
}
