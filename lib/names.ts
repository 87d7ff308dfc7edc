/** Kubernetes name and label syntax, checked before anything is synthesized. */
import { FieldIssue, fieldIssue } from './errors';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Object names (pods, pools, nodes, profiles): a DNS-1123 subdomain. */
export function checkObjectName(field: string, value: unknown): FieldIssue | undefined {
  return typeof value === 'string' && value.length <= 253 && DNS1123_SUBDOMAIN.test(value)
    ? undefined
    : fieldIssue(field, value, 'a DNS-1123 name: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit, at most 253 characters');
}

/** Names that become part of a label key or a DNS label (namespaces, pool names): a DNS-1123 label. */
export function checkDnsLabel(field: string, value: unknown): FieldIssue | undefined {
  return typeof value === 'string' && value.length <= 63 && DNS1123_LABEL.test(value)
    ? undefined
    : fieldIssue(field, value, 'a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit, at most 63 characters');
}

/** Label values: at most 63 characters of letters, digits, "-", "_" and ".". */
export function checkLabelValue(field: string, value: unknown): FieldIssue | undefined {
  return typeof value === 'string' && value.length <= 63 && LABEL_VALUE.test(value)
    ? undefined
    : fieldIssue(field, value, 'a label value: at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit');
}
