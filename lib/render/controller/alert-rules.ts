/**
 * Alert rules for the controller and the node agent (`alertRules` prop): a prometheus-operator
 * PrometheusRule, or a ConfigMap holding a plain Prometheus rule file for a Prometheus that loads
 * rule files itself. Each rule keeps its signal (the measured value) apart from its threshold, so a
 * test can query the signal, which has data whether or not the alert fires.
 */
import { stringify } from 'yaml';
import { KubeObject } from '../../k8s/object';
import { CONTROLLER_METRICS as C } from '../../contract/metrics';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import {
  AGENT_COLLECT_AGE,
  EXTENDER_FAILURE_RATIO,
  GPU_ISOLATION_READY,
  POOL_RESERVED_RATIO,
  quantile,
  QUOTA_USE_RATIO,
  RECONCILE_FAILURE_RATIO,
  WEBHOOK_FAILURE_RATIO,
} from './promql';
import type { AlertRuleFormat, ResolvedControllerProps } from './props';

/** Key of the rule file in the ConfigMap. */
export const RULE_FILE_KEY = 'tensor-fusion.rules.yaml';

/** One alert: `expr` is `${signal} ${condition}`. */
export interface AlertRuleSpec {
  /** The alert's name. */
  readonly alert: string;
  /** PromQL of the measured value; it has data whenever the metrics exist. */
  readonly signal: string;
  /** The threshold appended to the signal, e.g. `> 0.9`. */
  readonly condition: string;
  /** How long the condition must hold. */
  readonly for: string;
  /** The `severity` label. */
  readonly severity: 'critical' | 'warning';
  /** The summary annotation. */
  readonly summary: string;
  /** The description annotation (Prometheus templates: `{{ $labels.pool }}`, `{{ $value }}`). */
  readonly description: string;
}

/** The alerts, in the order of the rule file. */
export const ALERT_RULES: readonly AlertRuleSpec[] = [
  {
    alert: 'TensorFusionWebhookFailing',
    signal: WEBHOOK_FAILURE_RATIO,
    condition: '> 0.05',
    for: '10m',
    severity: 'critical',
    summary: 'The tensor-fusion admission webhook fails reviews',
    description:
      '{{ $value | humanizePercentage }} of admission reviews failed (errors or malformed reviews) over 5 minutes; with failurePolicy Fail, GPU pods are not created.',
  },
  {
    alert: 'TensorFusionWebhookSlow',
    signal: quantile(0.99, C.webhookSeconds),
    condition: '> 0.5',
    for: '10m',
    severity: 'warning',
    summary: 'The tensor-fusion admission webhook is slow',
    description: '99th percentile of admission reviews is {{ $value | humanizeDuration }}; pod creation waits for it.',
  },
  {
    alert: 'TensorFusionExtenderFailing',
    signal: EXTENDER_FAILURE_RATIO,
    condition: '> 0.05',
    for: '10m',
    severity: 'critical',
    summary: 'The tensor-fusion scheduler extender fails calls',
    description: '{{ $value | humanizePercentage }} of {{ $labels.verb }} calls failed over 5 minutes; GPU pods are not placed.',
  },
  {
    alert: 'TensorFusionPoolTflopsNearlyFull',
    signal: POOL_RESERVED_RATIO.tflops,
    condition: '> 0.9',
    for: '15m',
    severity: 'warning',
    summary: 'A GPU pool has nearly no TFLOPS left to hand out',
    description:
      'Pool {{ $labels.pool }}: shares request {{ $value | humanizePercentage }} of the TFLOPS it may hand out (capacity × oversell ratio).',
  },
  {
    alert: 'TensorFusionPoolVramNearlyFull',
    signal: POOL_RESERVED_RATIO.vram,
    condition: '> 0.9',
    for: '15m',
    severity: 'warning',
    summary: 'A GPU pool has nearly no VRAM left to hand out',
    description: "Pool {{ $labels.pool }}: shares request {{ $value | humanizePercentage }} of its GPUs' VRAM.",
  },
  {
    alert: 'TensorFusionGpuPodsPending',
    signal: `max by (pool, reason) (${C.pendingGpuPods})`,
    condition: '> 0',
    for: '10m',
    severity: 'warning',
    summary: 'GPU pods have waited for room for 10 minutes',
    description: '{{ $value }} GPU pod(s) of pool {{ $labels.pool }} wait, turned away by the extender: {{ $labels.reason }}.',
  },
  {
    alert: 'TensorFusionQuotaNearlyExhausted',
    signal: QUOTA_USE_RATIO,
    condition: '>= 0.9',
    for: '15m',
    severity: 'warning',
    summary: 'A GPUResourceQuota is nearly used up',
    description:
      'GPUResourceQuota {{ $labels.namespace }}/{{ $labels.quota }}: {{ $labels.resource }} at {{ $value | humanizePercentage }} of its bound; pods past it wait.',
  },
  {
    alert: 'TensorFusionAgentNotCollecting',
    signal: AGENT_COLLECT_AGE,
    condition: '> 300',
    for: '5m',
    severity: 'warning',
    summary: 'A tensor-fusion node agent stopped collecting GPU usage',
    description:
      'The agent of node {{ $labels.node }} last collected {{ $value | humanizeDuration }} ago; autoscaling reads no usage from that node.',
  },
  {
    alert: 'TensorFusionGpuIsolationNotReady',
    signal: GPU_ISOLATION_READY,
    condition: '< 1',
    for: '2m',
    severity: 'critical',
    summary: "A GPU's hard isolation is not ready",
    description:
      'GPU {{ $labels.gpu_uuid }} of node {{ $labels.node }}: {{ $labels.reason }}. No new hard share is placed on it; with BackstopUnavailable, processes that bypass MPS on it go unseen.',
  },
  {
    alert: 'TensorFusionControllerNoLeader',
    signal: `max (${C.leader})`,
    condition: '< 1',
    for: '5m',
    severity: 'critical',
    summary: 'No tensor-fusion controller replica leads',
    description: 'No replica holds the leader lease: GPU nodes, pools, workloads and quotas are not reconciled.',
  },
  {
    alert: 'TensorFusionReconcileErrors',
    signal: RECONCILE_FAILURE_RATIO,
    condition: '> 0.1',
    for: '15m',
    severity: 'warning',
    summary: 'tensor-fusion reconciles keep failing',
    description: "{{ $value | humanizePercentage }} of the {{ $labels.controller }} controller's reconciles failed over 5 minutes.",
  },
];

/** A Prometheus rule group: the same in a PrometheusRule's spec and in a rule file. */
export function alertRuleGroups(): { groups: object[] } {
  return {
    groups: [
      {
        name: 'tensor-fusion',
        rules: ALERT_RULES.map((r) => ({
          alert: r.alert,
          expr: `${r.signal} ${r.condition}`,
          for: r.for,
          labels: { severity: r.severity },
          annotations: { summary: r.summary, description: r.description },
        })),
      },
    ],
  };
}

/** The alert rules in the format asked for, in the controller's namespace. */
export function renderAlertRules(props: ResolvedControllerProps, format: AlertRuleFormat, labels: Record<string, string>): KubeObject {
  const metadata = { name: CONTROLLER_NAMES.alertRules, namespace: props.namespace, labels: { ...labels, ...props.alertRuleLabels } };
  if (format === 'PrometheusRule')
    return { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata, spec: alertRuleGroups() };
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { [RULE_FILE_KEY]: stringify(alertRuleGroups()) } };
}
