/**
 * Kubernetes name rules: DNS-1123 object names, label values, a Service's DNS names. Hand-written: the
 * rules are regular expressions and lengths, and @kubernetes/client-node ships no validators.
 */
import { createHash } from 'node:crypto';

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

/**
 * The object name `<base><suffix>` for an object named after another (`base`, itself a DNS-1123
 * subdomain such as a node's name): as is where it fits in {@link DNS_SUBDOMAIN_MAX}, else `base` cut
 * short and marked with a hash of all of it, so that two long bases sharing a prefix still differ.
 * `suffix` must start with '-' and end with a letter or digit.
 * @example boundedName('node-1', '-gpu-0') // 'node-1-gpu-0'
 */
export function boundedName(base: string, suffix: string): string {
  if (base.length + suffix.length <= DNS_SUBDOMAIN_MAX) return base + suffix;
  const mark = `-${createHash('sha256').update(base).digest('hex').slice(0, 10)}`;
  const cut = base.slice(0, DNS_SUBDOMAIN_MAX - suffix.length - mark.length).replace(/[-.]+$/, '');
  return cut + mark + suffix;
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** A label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit. */
export function isLabelValue(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 63 && LABEL_VALUE.test(value);
}

/** The DNS names a Service is reached by from inside the cluster (what a serving certificate covers). */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

/**
 * An extended resource name: `<DNS subdomain>/<name>` outside the `kubernetes.io` domains, the name
 * part a label value of at least one character (what a device plugin may advertise).
 */
export function isExtendedResourceName(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const slash = value.indexOf('/');
  const [domain, name] = [value.slice(0, slash), value.slice(slash + 1)];
  return slash > 0 && isDnsSubdomain(domain) && !/(^|\.)kubernetes\.io$/.test(domain) && name !== '' && isLabelValue(name);
}
