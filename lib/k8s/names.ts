/**
 * Kubernetes object name rules (DNS-1123). Hand-written: the rules are two regular expressions and a
 * length, and @kubernetes/client-node ships no validators.
 */

/** Longest DNS-1123 label (a namespace or Service name). */
export const DNS_LABEL_MAX = 63;
/** Longest DNS-1123 subdomain (most object names). */
export const DNS_SUBDOMAIN_MAX = 253;

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether `value` is a DNS-1123 label of at most `max` characters. */
export function isDnsLabel(value: unknown, max = DNS_LABEL_MAX): value is string {
  return typeof value === 'string' && value.length <= max && LABEL.test(value);
}

/** Whether `value` is a DNS-1123 subdomain. */
export function isDnsSubdomain(value: unknown): value is string {
  return typeof value === 'string' && value.length <= DNS_SUBDOMAIN_MAX && SUBDOMAIN.test(value);
}
