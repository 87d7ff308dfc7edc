/**
 * The Grafana dashboard (`grafanaDashboard` prop): a ConfigMap labelled for the dashboard sidecar of
 * Grafana's Helm chart (`grafana_dashboard: "1"`, its default), holding the dashboard JSON. Pools
 * (capacity, reserved, used), shares per GPU, pending GPU pods, the webhook and the extender, the
 * autoscaler's recommendations against requests, quotas, the controller and the node agents.
 */
import { KubeObject } from '../../k8s/object';
import { AGENT_METRICS as A, AGENT_NODE_LABEL } from '../../contract/agent';
import { CONTROLLER_METRICS as C } from '../../contract/metrics';
import { CONTROLLER_NAMES } from '../../contract/object-names';
import {
  AGENT_COLLECT_AGE,
  agentByPool,
  poolSeries,
  quantile,
  QUOTA_USE_RATIO,
  RATE_WINDOW,
  RECONCILE_FAILURE_RATIO,
  WEBHOOK_FAILURE_RATIO,
  EXTENDER_FAILURE_RATIO,
} from './promql';
import type { ResolvedControllerProps } from './props';

/** The label (and value) the Grafana chart's dashboard sidecar looks for by default. */
export const GRAFANA_DASHBOARD_LABEL = { grafana_dashboard: '1' } as const;
/** Key of the dashboard JSON in the ConfigMap (the sidecar writes it as that file). */
export const DASHBOARD_KEY = 'tensor-fusion.json';
/** The dashboard's uid: stable, so links and a re-import keep pointing at it. */
export const DASHBOARD_UID = 'tensor-fusion';
/** Grafana template variables in the queries, with what a test may put for "all". */
export const DASHBOARD_VARIABLES = { pool: '$pool' } as const;

/** One query of a panel. */
export interface DashboardTarget {
  /** PromQL, possibly with {@link DASHBOARD_VARIABLES}. */
  readonly expr: string;
  /** Series name in the legend. */
  readonly legendFormat: string;
}

/** One panel: a title, a unit and its queries. */
export interface DashboardPanel {
  /** The panel's title. */
  readonly title: string;
  /** Grafana's unit id (`short`, `bytes`, `s`, `percentunit`, `reqps`). */
  readonly unit: string;
  /** Its queries, refId A, B, ... in order. */
  readonly targets: readonly DashboardTarget[];
  /** What the panel shows, as Grafana's panel description. */
  readonly description: string;
}

const POOL = `{pool=~"${DASHBOARD_VARIABLES.pool}"}`;
const t = (expr: string, legendFormat: string): DashboardTarget => ({ expr, legendFormat });

/** The recommender's request per GPU of each workload against its spec's. */
function autoscalePanel(resource: string, unit: string, recommended: string, requested: string): DashboardPanel {
  const w = '{{namespace}}/{{workload}}';
  return {
    title: `Autoscaler ${resource}: recommended vs requested`,
    unit,
    description: `The recommender's ${resource} request per GPU against the workload's spec.`,
    targets: [
      t(`max by (namespace, workload) (${recommended})`, `${w} recommended`),
      t(`max by (namespace, workload) (${requested})`, `${w} requested`),
    ],
  };
}

/** A pool's capacity, what it may hand out (where oversold), what placed shares reserve and what the agents measure. */
function poolPanel(
  resource: string,
  unit: string,
  description: string,
  series: { capacity: string; allocatable?: string; reserved: string; used: string },
): DashboardPanel {
  return {
    title: `Pool ${resource}: capacity, reserved, used`,
    unit,
    description,
    targets: [
      t(poolSeries(series.capacity, POOL), '{{pool}} capacity'),
      ...(series.allocatable ? [t(poolSeries(series.allocatable, POOL), '{{pool}} allocatable')] : []),
      t(poolSeries(series.reserved, POOL), '{{pool}} reserved'),
      t(agentByPool(series.used, POOL), '{{pool}} used'),
    ],
  };
}

/** The panels by row, in order. */
export const DASHBOARD_ROWS: readonly { title: string; panels: readonly DashboardPanel[] }[] = [
  {
    title: 'GPU pools',
    panels: [
      poolPanel(
        'TFLOPS',
        'short',
        'Capacity of the GPUs, what the allocator may hand out (capacity × oversell ratio), what placed shares request, and what the node agents measure.',
        { capacity: C.poolCapacityTflops, allocatable: C.poolVirtualTflops, reserved: C.poolRequestedTflops, used: A.computeUsed },
      ),
      poolPanel('VRAM', 'bytes', "VRAM of the pool's GPUs, what placed shares request, and what the node agents measure.", {
        capacity: C.poolCapacityVram,
        reserved: C.poolRequestedVram,
        used: A.vramUsed,
      }),
      {
        title: 'Shares per GPU',
        unit: 'short',
        description: 'GPU shares (pods) placed on each GPU.',
        targets: [t(`max by (pool, node, gpu) (${C.gpuShares}${POOL})`, '{{node}} {{gpu}}')],
      },
      {
        title: 'Used TFLOPS by node',
        unit: 'short',
        description: "TFLOPS the node agents measure on each node's GPUs.",
        targets: [t(agentByPool(A.computeUsed, POOL, ['pool', AGENT_NODE_LABEL]), `{{${AGENT_NODE_LABEL}}}`)],
      },
      {
        title: 'Pending GPU pods by reason',
        unit: 'short',
        description: 'GPU pods the scheduler extender turned away that still wait, by the kind of reason.',
        targets: [t(`max by (pool, reason) (${C.pendingGpuPods}${POOL})`, '{{pool}} {{reason}}')],
      },
    ],
  },
  {
    title: 'Admission and scheduling',
    panels: [
      {
        title: 'Webhook admissions',
        unit: 'reqps',
        description: 'Admission reviews per second by outcome, and the share of failed reviews (errors, malformed reviews).',
        targets: [
          t(`sum by (outcome) (rate(${C.webhookAdmissions}[${RATE_WINDOW}]))`, '{{outcome}}'),
          t(WEBHOOK_FAILURE_RATIO, 'failed share'),
        ],
      },
      {
        title: 'Webhook latency',
        unit: 's',
        description: 'Time to answer an admission review.',
        targets: [t(quantile(0.5, C.webhookSeconds), 'p50'), t(quantile(0.99, C.webhookSeconds), 'p99')],
      },
      {
        title: 'Extender calls',
        unit: 'reqps',
        description: 'Scheduler extender calls per second by verb and outcome, and the share that failed by verb.',
        targets: [
          t(`sum by (verb, outcome) (rate(${C.extenderCalls}[${RATE_WINDOW}]))`, '{{verb}} {{outcome}}'),
          t(EXTENDER_FAILURE_RATIO, '{{verb}} failed share'),
        ],
      },
      {
        title: 'Extender latency (p99)',
        unit: 's',
        description: 'Time to answer a scheduler extender call, by verb.',
        targets: [t(quantile(0.99, C.extenderSeconds, ['verb']), '{{verb}}')],
      },
    ],
  },
  {
    title: 'Autoscaling and quotas',
    panels: [
      autoscalePanel('TFLOPS', 'short', C.autoscaleRecommendedTflops, C.autoscaleRequestedTflops),
      autoscalePanel('VRAM', 'bytes', C.autoscaleRecommendedVram, C.autoscaleRequestedVram),
      {
        title: 'Quota use',
        unit: 'percentunit',
        description: 'Each GPUResourceQuota bound: what the namespace uses over the bound.',
        targets: [t(QUOTA_USE_RATIO, '{{namespace}}/{{quota}} {{resource}}')],
      },
    ],
  },
  {
    title: 'Controller and node agents',
    panels: [
      {
        title: 'Reconciles',
        unit: 'reqps',
        description: 'Reconciles per second by controller and result, and the share that failed.',
        targets: [
          t(`sum by (controller, result) (rate(${C.reconciles}[${RATE_WINDOW}]))`, '{{controller}} {{result}}'),
          t(RECONCILE_FAILURE_RATIO, '{{controller}} failed share'),
        ],
      },
      {
        title: 'Leader and work queue',
        unit: 'short',
        description: 'Replicas holding the leader lease (1 when healthy) and the keys waiting in the work queue.',
        targets: [t(`sum (${C.leader})`, 'leaders'), t(`max (${C.queueDepth})`, 'queue depth')],
      },
      {
        title: 'Node agents: seconds since the last collection',
        unit: 's',
        description: 'How long ago each node agent last read nvidia-smi (it reads at every scrape).',
        targets: [t(AGENT_COLLECT_AGE, `{{${AGENT_NODE_LABEL}}}`)],
      },
    ],
  },
];

/** The dashboard JSON model (Grafana schema 39): a datasource variable, a pool variable, the rows. */
export function dashboardModel(): object {
  const ds = { type: 'prometheus', uid: '${datasource}' };
  const panels: object[] = [];
  let id = 1;
  let y = 0;
  for (const row of DASHBOARD_ROWS) {
    panels.push({ id: id++, type: 'row', title: row.title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] });
    y += 1;
    row.panels.forEach((p, i) => {
      panels.push({
        id: id++,
        type: 'timeseries',
        title: p.title,
        description: p.description,
        datasource: ds,
        fieldConfig: { defaults: { unit: p.unit }, overrides: [] },
        options: { legend: { displayMode: 'list', placement: 'bottom', showLegend: true }, tooltip: { mode: 'multi', sort: 'none' } },
        gridPos: { h: 8, w: 12, x: (i % 2) * 12, y: y + Math.floor(i / 2) * 8 },
        targets: p.targets.map((target, j) => ({ refId: String.fromCharCode(65 + j), datasource: ds, ...target })),
      });
    });
    y += Math.ceil(row.panels.length / 2) * 8;
  }
  return {
    uid: DASHBOARD_UID,
    title: 'Tensor Fusion',
    tags: ['tensor-fusion', 'gpu'],
    schemaVersion: 39,
    version: 1,
    editable: true,
    time: { from: 'now-6h', to: 'now' },
    refresh: '30s',
    templating: {
      list: [
        { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus' },
        {
          name: 'pool',
          label: 'Pool',
          type: 'query',
          datasource: ds,
          query: { query: `label_values(${C.poolCapacityTflops}, pool)`, refId: 'pools' },
          refresh: 2,
          includeAll: true,
          multi: true,
          allValue: '.*',
          current: { text: 'All', value: '$__all' },
        },
      ],
    },
    panels,
  };
}

/** The ConfigMap the Grafana sidecar picks up. */
export function renderDashboard(props: ResolvedControllerProps, labels: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: CONTROLLER_NAMES.dashboard,
      namespace: props.grafanaDashboardNamespace ?? props.namespace,
      labels: { ...labels, ...GRAFANA_DASHBOARD_LABEL },
    },
    data: { [DASHBOARD_KEY]: JSON.stringify(dashboardModel(), null, 2) },
  };
}
