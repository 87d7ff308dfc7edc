/**
 * The name checks of our components and kinds, with their messages; the DNS-1123 rules themselves
 * live in lib/k8s/names.ts.
 */
import { FieldIssue, fieldIssue } from './errors';
import { isDnsLabel, isDnsSubdomain } from './k8s/names';

export { isDnsLabel, isDnsSubdomain };

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
    : fieldIssue(field, value, "a DNS-1123 subdomain name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)");
}

/** A container name. */
export function checkContainerName(field: string, value: unknown): FieldIssue | undefined {
  return isDnsLabel(value) ? undefined : fieldIssue(field, value, `a container name: a DNS-1123 label (${LABEL_WORDS})`);
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** A label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit. */
export function isLabelValue(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 63 && LABEL_VALUE.test(value);
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

/** The DNS names a Service is reached by from inside the cluster (what a serving certificate covers). */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}
