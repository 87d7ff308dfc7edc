/**
 * Props of the TensorFusionController component, shared by the Pulumi and cdk8s classes, with their
 * defaults and validation. Everything is a plain value so that bad input fails at construction.
 */
import { FieldIssue, fieldIssue, throwIfInvalid } from '../../model/errors';
import { parseQuantity } from '../../k8s/quantity';
import { checkEnum, checkLimitAtLeastRequest } from '../../model/rules';
import { CERT_MODES, CertificateMode, CONTROLLER_ENV_DEFAULTS, LOG_LEVELS, LogLevel } from '../../contract/env';
import { isDnsLabel } from '../../k8s/names';
import { TAINT_EFFECTS, Toleration, TOLERATION_OPERATORS } from '../../k8s/toleration';

/** What the API server does with a pod when the webhook cannot be reached. */
export const FAILURE_POLICIES = ['Fail', 'Ignore'] as const;
/** A webhook failure policy. */
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];

/** How the alert rules are delivered: a PrometheusRule (prometheus-operator) or a ConfigMap with a rule file. */
export const ALERT_RULE_FORMATS = ['PrometheusRule', 'ConfigMap'] as const;
/** One of {@link ALERT_RULE_FORMATS}. */
export type AlertRuleFormat = (typeof ALERT_RULE_FORMATS)[number];

/** CPU and memory as Kubernetes quantities (`100m`, `256Mi`). */
export interface ComputeQuantities {
  /** CPU cores as a Kubernetes quantity. @example '500m' */
  readonly cpu?: string;
  /** Memory as a Kubernetes quantity. @example '256Mi' */
  readonly memory?: string;
}

/** Requests and limits of a container. */
export interface ControllerResources {
  /** What the scheduler reserves for each container. @default cpu 100m, memory 128Mi */
  readonly requests?: ComputeQuantities;
  /** The most each container may use. @default cpu 1, memory 512Mi */
  readonly limits?: ComputeQuantities;
}

/**
 * Properties of `TensorFusionController`: the runtime controller (admission webhook, scheduler
 * extender, node and status reconcilers) and its kube-scheduler, with CRDs, RBAC, Services, the
 * webhook configuration, the pod integrity policy and the QoS PriorityClasses.
 *
 * @example
 * new TensorFusionController(chart, 'controller', { replicas: 3, certificateMode: 'cert-manager', serviceMonitor: true });
 */
export interface TensorFusionControllerProps {
  /**
   * Namespace the controller runs in; created by the component and excluded from the webhook.
   * @default tensor-fusion-system
   */
  readonly namespace?: string;
  /**
   * Controller pods. Every replica serves the webhook; one leader reconciles.
   * @default 2
   */
  readonly replicas?: number;
  /**
   * Requests and limits of each container, the controller and the kube-scheduler alike (both cache
   * the cluster's pods and nodes, so they grow together); each quantity given replaces its default alone.
   * @default - requests cpu 100m, memory 128Mi; limits cpu 1, memory 512Mi
   */
  readonly resources?: ControllerResources;
  /** Level of the controller's JSON logs. @default info */
  readonly logLevel?: LogLevel;
  /** Node labels the controller pods must match. @default - no node selector */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /** Taints the controller pods tolerate. @default - no tolerations */
  readonly tolerations?: readonly Toleration[];
  /**
   * What happens to an opted-in pod when the webhook cannot answer: `Fail` rejects it (no pod runs
   * without its GPU allocation), `Ignore` admits it unmodified.
   * @default Fail
   */
  readonly failurePolicy?: FailurePolicy;
  /**
   * `self-managed`: the controller creates its own CA and serving certificate and patches the webhook's
   * caBundle. `cert-manager`: a self-signed Issuer and a Certificate are created and cert-manager's
   * cainjector fills the caBundle (cert-manager must be installed).
   * @default self-managed
   */
  readonly certificateMode?: CertificateMode;
  /**
   * Expose /metrics through a Service and admit scrape traffic in the NetworkPolicy.
   * @default true
   */
  readonly metrics?: boolean;
  /**
   * Create a Prometheus Operator ServiceMonitor (monitoring.coreos.com/v1) for the metrics Service.
   * Requires `metrics`.
   * @default false
   */
  readonly serviceMonitor?: boolean;
  /**
   * A prebuilt controller image (built from the package's Dockerfile). When set, no bundle ConfigMap
   * is created and the image's own entrypoint runs.
   * @default - the bundle shipped in this package runs on `nodeImage`
   */
  readonly image?: string;
  /**
   * Official Node.js image that runs the shipped bundle (Node.js 20 or later); change it to use a
   * registry mirror, or pin it by digest.
   * @default node:24-alpine (the Active LTS line)
   * @example 'node:24-alpine@sha256:<64 hex digits>'
   */
  readonly nodeImage?: string;
  /**
   * Install the tensor-fusion.ai CRDs. Turn off when another tool owns them.
   * @default true
   */
  readonly installCrds?: boolean;
  /**
   * Tag of the official `registry.k8s.io/kube-scheduler` image that runs in each controller pod and
   * places GPU pods through the controller's extender. Match the cluster: kube-scheduler may be at
   * most one minor version older than the API server, never newer.
   * @default v1.36.3 (the Kubernetes version the project is tested against)
   */
  readonly schedulerVersion?: string;
  /**
   * Run the node agent (a DaemonSet on GPU nodes, in its own namespace `<namespace>-agent`): it
   * delivers `hard` isolation, the GpuPool default (the devices, the MPS daemon and the limits the
   * kubelet gives each share), and exports per-pod GPU usage for autoscaling. Turn it off only where
   * every pool is `shared`: the webhook warns every pod of a `hard` pool otherwise.
   * @default true
   */
  readonly nodeAgent?: boolean;
  /**
   * Image that runs the node agent. It needs glibc: the NVIDIA container toolkit mounts the host's
   * nvidia-smi, which does not run on musl (alpine). With `image` set, that image runs the agent.
   * @default node:24-bookworm-slim
   */
  readonly nodeAgentImage?: string;
  /**
   * Install what GpuPools with `shareDelivery: 'DRA'` need (Kubernetes 1.34+, resource.k8s.io/v1):
   * the DeviceClass `gpu.tensor-fusion.ai`, RBAC for the node agent's ResourceSlices and the webhook's
   * ResourceClaimTemplates, and the policies that refuse claims and templates of the class made by
   * hand; the controller then watches ResourceClaims, so that GPU status counts DRA shares. Leave it
   * off on older clusters, which serve no DeviceClass. See docs/dra.md.
   * @default false
   */
  readonly dra?: boolean;
  /**
   * Host cgroup v2 folder (under `/sys/fs/cgroup/`) the node agent mounts and moves each share's MPS
   * daemon into (`<folder>/<pod uid>`, 512 MiB `memory.max` each) before any client connects: the
   * daemons and their servers then outlive the agent's container (an OOM kill, a crash, a
   * replacement), and their memory is counted there, not against the agent's limit. A direct child
   * of `/sys/fs/cgroup` gets the memory controller from the root; a deeper one only where each parent
   * passes it down (`+memory` in its `cgroup.subtree_control`). `""` keeps the daemons in the agent's
   * container, where they end with it.
   * @default /sys/fs/cgroup/tensor-fusion-mps
   */
  readonly nodeAgentDaemonCgroup?: string;
  /**
   * Prometheus HTTP API the recommender reads the agent's metrics from, e.g.
   * `http://prometheus.monitoring:9090`. Without it autoscaling is off and workloads that ask for it
   * say so in their status.
   * @default - autoscaling off
   */
  readonly prometheusUrl?: string;
  /**
   * Create a ConfigMap `tensor-fusion-dashboard` with a Grafana dashboard, labelled
   * `grafana_dashboard: "1"` for the dashboard sidecar of Grafana's Helm chart: pool capacity,
   * reserved and used TFLOPS and VRAM, shares per GPU, pending GPU pods by reason, webhook and extender
   * rates, errors and latency, the autoscaler's recommendations against requests, quota use. "Used"
   * needs the node agent (`nodeAgent`) scraped by the same Prometheus.
   * @default false
   */
  readonly grafanaDashboard?: boolean;
  /**
   * Namespace of the dashboard ConfigMap: where the Grafana sidecar looks (the chart's default is
   * Grafana's own namespace). The namespace must exist. Requires `grafanaDashboard`.
   * @default - the controller's namespace
   */
  readonly grafanaDashboardNamespace?: string;
  /**
   * Create the alert rules (webhook and extender failures, pools nearly full, GPU pods pending, quotas
   * nearly used, node agents not collecting, no leader, failing reconciles), named `tensor-fusion-alerts`
   * in the controller's namespace: `PrometheusRule` (monitoring.coreos.com/v1) where the
   * prometheus-operator CRDs are installed, `ConfigMap` holding a plain rule file
   * (`tensor-fusion.rules.yaml`) for a Prometheus that loads rule files itself.
   * @default - no alert rules
   */
  readonly alertRules?: AlertRuleFormat;
  /**
   * Extra labels of the alert rules object, e.g. the label a Prometheus' `ruleSelector` matches
   * (kube-prometheus-stack: `release: <its release name>`). Requires `alertRules`.
   * @default - the component's labels only
   * @example { release: 'kube-prometheus-stack' }
   */
  readonly alertRuleLabels?: Readonly<Record<string, string>>;
  /**
   * Serve a read-only web view of the pools on the controller's ops port (`/view`, and `/view.json`):
   * each GPU as a bar of its shares, pending GPU pods with the scheduler's reason, namespaces against
   * their quotas, with use from `prometheusUrl` when set. Reach it with `kubectl port-forward`.
   * @default false
   */
  readonly webView?: boolean;
}

/** Defaults of every prop that has one. */
export const CONTROLLER_DEFAULTS = {
  namespace: 'tensor-fusion-system',
  replicas: 2,
  resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } },
  logLevel: CONTROLLER_ENV_DEFAULTS.logLevel,
  failurePolicy: 'Fail' as FailurePolicy,
  certificateMode: CONTROLLER_ENV_DEFAULTS.certMode,
  metrics: true,
  serviceMonitor: false,
  nodeImage: 'node:24-alpine',
  installCrds: true,
  // Kept equal to k8s.io/kubernetes in test/envtest/kubernetes/go.mod by a test.
  schedulerVersion: 'v1.36.3',
  nodeAgent: true,
  nodeAgentImage: 'node:24-bookworm-slim',
  dra: false,
  nodeAgentDaemonCgroup: '/sys/fs/cgroup/tensor-fusion-mps',
  grafanaDashboard: false,
  webView: false,
} as const;

/** Props with every default applied, as the render functions consume them. */
export interface ResolvedControllerProps {
  /** The `namespace` prop, or its default. */
  readonly namespace: string;
  /** The `replicas` prop, or its default. */
  readonly replicas: number;
  /** The `resources` prop merged over the defaults. */
  readonly resources: {
    /** Requests of each container. */
    readonly requests: Required<ComputeQuantities>;
    /** Limits of each container. */
    readonly limits: Required<ComputeQuantities>;
  };
  /** The `logLevel` prop, or its default. */
  readonly logLevel: LogLevel;
  /** The `nodeSelector` prop. */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /** The `tolerations` prop. */
  readonly tolerations?: readonly Toleration[];
  /** The `failurePolicy` prop, or its default. */
  readonly failurePolicy: FailurePolicy;
  /** The `certificateMode` prop, or its default. */
  readonly certificateMode: CertificateMode;
  /** The `metrics` prop, or its default. */
  readonly metrics: boolean;
  /** The `serviceMonitor` prop, or its default. */
  readonly serviceMonitor: boolean;
  /** The `image` prop; unset to run the bundle shipped in the package. */
  readonly image?: string;
  /** The `nodeImage` prop, or its default. */
  readonly nodeImage: string;
  /** The `installCrds` prop, or its default. */
  readonly installCrds: boolean;
  /** The `schedulerVersion` prop, or its default. */
  readonly schedulerVersion: string;
  /** The `nodeAgent` prop, or its default. */
  readonly nodeAgent: boolean;
  /** The `nodeAgentImage` prop, or its default. */
  readonly nodeAgentImage: string;
  /** The `dra` prop, or its default. */
  readonly dra: boolean;
  /** The `nodeAgentDaemonCgroup` prop, or its default; `""`: none. */
  readonly nodeAgentDaemonCgroup: string;
  /** The `prometheusUrl` prop. */
  readonly prometheusUrl?: string;
  /** The `grafanaDashboard` prop, or its default. */
  readonly grafanaDashboard: boolean;
  /** The `grafanaDashboardNamespace` prop. */
  readonly grafanaDashboardNamespace?: string;
  /** The `alertRules` prop; unset for none. */
  readonly alertRules?: AlertRuleFormat;
  /** The `alertRuleLabels` prop. */
  readonly alertRuleLabels?: Readonly<Record<string, string>>;
  /** The `webView` prop, or its default. */
  readonly webView: boolean;
}

/** `[registry/]path[:tag][@sha256:<64 hex>]`, the reference grammar of the distribution spec. */
const IMAGE_REF = /^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(\/[a-z0-9]+([._-]{1,2}[a-z0-9]+)*)*(:[\w][\w.-]{0,127})?(@sha256:[0-9a-f]{64})?$/;
/** A Kubernetes release tag: v1.36.3, v1.37.0-rc.1. */
const RELEASE_TAG = /^v\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$/;

function checkNamespace(value: unknown, field = 'namespace'): FieldIssue | undefined {
  return isDnsLabel(value)
    ? undefined
    : fieldIssue(field, value, 'a DNS label: at most 63 lowercase letters, digits and "-", starting and ending with a letter or digit');
}

function checkImage(field: string, value: unknown): FieldIssue | undefined {
  return typeof value === 'string' && IMAGE_REF.test(value)
    ? undefined
    : fieldIssue(
        field,
        value,
        'an image reference such as registry.example.com/tensor-fusion-controller:0.1.0, optionally pinned by @sha256:<64 hex digits>',
      );
}

function checkReleaseTag(field: string, value: unknown): FieldIssue | undefined {
  return typeof value === 'string' && RELEASE_TAG.test(value)
    ? undefined
    : fieldIssue(field, value, `a Kubernetes release tag such as ${CONTROLLER_DEFAULTS.schedulerVersion}`);
}

/** An http(s) URL without query or fragment: the recommender appends /api/v1/... to it. */
function checkPrometheusUrl(value: unknown): FieldIssue | undefined {
  let ok = false;
  try {
    const u = new URL(String(value));
    ok = typeof value === 'string' && (u.protocol === 'http:' || u.protocol === 'https:') && !u.search && !u.hash;
  } catch {
    /* not a URL */
  }
  return ok
    ? undefined
    : fieldIssue('prometheusUrl', value, 'an http or https URL of the Prometheus HTTP API such as http://prometheus.monitoring:9090');
}

/** `/sys/fs/cgroup/<name>[/<name>...]`, or `""`: a host folder the kubelet makes (a cgroup in cgroupfs). */
const CGROUP_FOLDER = /^\/sys\/fs\/cgroup(\/(?!\.{1,2}(\/|$))[A-Za-z0-9._-]+)+$/;

function checkDaemonCgroup(value: unknown): FieldIssue | undefined {
  return value === '' || (typeof value === 'string' && CGROUP_FOLDER.test(value))
    ? undefined
    : fieldIssue(
        'nodeAgentDaemonCgroup',
        value,
        `a cgroup v2 folder under /sys/fs/cgroup/ (letters, digits, ".", "_", "-" per level) such as ${CONTROLLER_DEFAULTS.nodeAgentDaemonCgroup}, or "" for none`,
      );
}

function checkBoolean(field: string, value: unknown): FieldIssue | undefined {
  return typeof value === 'boolean' ? undefined : fieldIssue(field, value, 'true or false');
}

function checkResources(resources: ResolvedControllerProps['resources']): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const parsed: Record<string, number | undefined> = {};
  for (const kind of ['requests', 'limits'] as const) {
    for (const resource of ['cpu', 'memory'] as const) {
      const field = `resources.${kind}.${resource}`;
      const input: unknown = resources[kind][resource];
      const value = typeof input === 'string' ? parseQuantity(input) : undefined;
      if (value === undefined || value <= 0)
        issues.push(fieldIssue(field, input, `a positive Kubernetes quantity such as ${resource === 'cpu' ? '500m' : '256Mi'}`));
      else parsed[field] = value;
    }
  }
  for (const resource of ['cpu', 'memory'] as const) {
    const limit = `resources.limits.${resource}`;
    const request = `resources.requests.${resource}`;
    const issue = checkLimitAtLeastRequest(
      limit,
      parsed[limit],
      resources.limits[resource],
      request,
      parsed[request],
      resources.requests[resource],
    );
    if (issue) issues.push(issue);
  }
  return issues;
}

/** A map of label keys to string values (`what` names the keys). */
function checkLabelMap(field: string, value: unknown, what: string): FieldIssue[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [fieldIssue(field, value, `a map of ${what} label keys to string values`)];
  }
  return Object.entries(value)
    .filter(([, v]) => typeof v !== 'string')
    .map(([k, v]) => fieldIssue(`${field}.${k}`, v, 'a string label value'));
}

/** A prop that means something only with another one on. */
function checkRequires(field: string, value: unknown, on: boolean, requirement: string): FieldIssue | undefined {
  return value === undefined || on ? undefined : fieldIssue(field, value, `no value unless ${requirement}`);
}

function checkTolerations(tolerations: unknown): FieldIssue[] {
  if (tolerations === undefined) return [];
  if (!Array.isArray(tolerations)) return [fieldIssue('tolerations', tolerations, 'a list of tolerations')];
  return tolerations.flatMap((t: Toleration, i): FieldIssue[] => {
    const at = `tolerations[${i}]`;
    const issues: (FieldIssue | undefined)[] = [
      t.operator === undefined ? undefined : checkEnum(`${at}.operator`, t.operator, TOLERATION_OPERATORS),
      t.effect === undefined ? undefined : checkEnum(`${at}.effect`, t.effect, TAINT_EFFECTS),
      t.operator === 'Exists' && t.value !== undefined ? fieldIssue(`${at}.value`, t.value, 'no value when operator is Exists') : undefined,
      t.tolerationSeconds !== undefined && t.effect !== 'NoExecute'
        ? fieldIssue(`${at}.tolerationSeconds`, t.tolerationSeconds, 'no tolerationSeconds unless effect is NoExecute')
        : undefined,
    ];
    return issues.filter((x): x is FieldIssue => x !== undefined);
  });
}

/** Applies defaults and validates; throws a ValidationError naming every bad field. */
export function resolveControllerProps(props: TensorFusionControllerProps = {}): ResolvedControllerProps {
  const d = CONTROLLER_DEFAULTS;
  const resolved: ResolvedControllerProps = {
    namespace: props.namespace ?? d.namespace,
    replicas: props.replicas ?? d.replicas,
    resources: {
      requests: { ...d.resources.requests, ...props.resources?.requests },
      limits: { ...d.resources.limits, ...props.resources?.limits },
    },
    logLevel: props.logLevel ?? d.logLevel,
    nodeSelector: props.nodeSelector,
    tolerations: props.tolerations,
    failurePolicy: props.failurePolicy ?? d.failurePolicy,
    certificateMode: props.certificateMode ?? d.certificateMode,
    metrics: props.metrics ?? d.metrics,
    serviceMonitor: props.serviceMonitor ?? d.serviceMonitor,
    image: props.image,
    nodeImage: props.nodeImage ?? d.nodeImage,
    installCrds: props.installCrds ?? d.installCrds,
    schedulerVersion: props.schedulerVersion ?? d.schedulerVersion,
    nodeAgent: props.nodeAgent ?? d.nodeAgent,
    nodeAgentImage: props.nodeAgentImage ?? d.nodeAgentImage,
    dra: props.dra ?? d.dra,
    nodeAgentDaemonCgroup: props.nodeAgentDaemonCgroup ?? d.nodeAgentDaemonCgroup,
    prometheusUrl: props.prometheusUrl,
    grafanaDashboard: props.grafanaDashboard ?? d.grafanaDashboard,
    grafanaDashboardNamespace: props.grafanaDashboardNamespace,
    alertRules: props.alertRules,
    alertRuleLabels: props.alertRuleLabels,
    webView: props.webView ?? d.webView,
  };
  const r = resolved;
  const issues = [
    checkNamespace(r.namespace),
    Number.isInteger(r.replicas) && r.replicas >= 1 ? undefined : fieldIssue('replicas', r.replicas, 'an integer of at least 1'),
    ...checkResources(r.resources),
    checkEnum('logLevel', r.logLevel, LOG_LEVELS),
    ...checkLabelMap('nodeSelector', r.nodeSelector, 'node'),
    ...checkTolerations(r.tolerations),
    checkEnum('failurePolicy', r.failurePolicy, FAILURE_POLICIES),
    checkEnum('certificateMode', r.certificateMode, CERT_MODES),
    checkBoolean('metrics', r.metrics),
    checkBoolean('serviceMonitor', r.serviceMonitor),
    r.serviceMonitor === true && r.metrics === false
      ? fieldIssue('serviceMonitor', true, 'false when metrics is false (the ServiceMonitor scrapes the metrics Service)')
      : undefined,
    r.image === undefined ? undefined : checkImage('image', r.image),
    checkImage('nodeImage', r.nodeImage),
    checkBoolean('installCrds', r.installCrds),
    checkReleaseTag('schedulerVersion', r.schedulerVersion),
    checkBoolean('nodeAgent', r.nodeAgent),
    checkImage('nodeAgentImage', r.nodeAgentImage),
    checkBoolean('dra', r.dra),
    checkDaemonCgroup(r.nodeAgentDaemonCgroup),
    r.prometheusUrl === undefined ? undefined : checkPrometheusUrl(r.prometheusUrl),
    checkBoolean('grafanaDashboard', r.grafanaDashboard),
    r.grafanaDashboardNamespace === undefined ? undefined : checkNamespace(r.grafanaDashboardNamespace, 'grafanaDashboardNamespace'),
    checkRequires('grafanaDashboardNamespace', r.grafanaDashboardNamespace, r.grafanaDashboard === true, 'grafanaDashboard is true'),
    r.alertRules === undefined ? undefined : checkEnum('alertRules', r.alertRules, ALERT_RULE_FORMATS),
    ...checkLabelMap('alertRuleLabels', r.alertRuleLabels, 'object'),
    checkRequires('alertRuleLabels', r.alertRuleLabels, r.alertRules !== undefined, 'alertRules is set'),
    checkBoolean('webView', r.webView),
  ].filter((x): x is FieldIssue => x !== undefined);
  throwIfInvalid(issues, 'TensorFusionController');
  return resolved;
}
