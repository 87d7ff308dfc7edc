/**
 * Renders the complete, secure install of the runtime controller: props -> plain Kubernetes objects.
 * Objects come in apply order: Namespace, CRDs and the PriorityClasses first (pods name them), the
 * admission policy and the webhook configuration last, so that `kubectl apply --server-side -f` of
 * the synthesized YAML works in one pass.
 */
import { renderCrds } from '../../api/crd';
import { KubeObject } from '../../k8s/object';
import { POD_SECURITY_ENFORCE_LABEL } from '../../k8s/labels';
import { renderIntegrityPolicy } from './integrity';
import { renderNodeGuard } from './node-guard';
import { renderQuotaStatusPolicy } from './quota-status-guard';
import { renderWriteLimits } from './write-limits';
import { renderServiceMonitor } from './monitoring';
import { renderDashboard } from './dashboard';
import { renderAlertRules } from './alert-rules';
import { COMMON_LABELS } from '../../contract/object-names';
import { renderNetwork } from './network';
import { renderPriorityClasses } from './priority';
import { resolveControllerProps, TensorFusionControllerProps } from './props';
import { renderRbac } from './rbac';
import { renderSchedulerConfigMap } from './kube-scheduler';
import { ControllerBundleRef, renderShipping } from './shipping';
import { renderCertificates, renderWebhookConfiguration } from './webhook';
import { renderWorkload } from './controller-deployment';
import { renderAgent } from './agent';
import { renderDeviceClass, renderDraPolicies, renderDraRbac } from './dra';

export * from '../../contract/env';
export * from '../../contract/object-names';
export * from './props';
export { nodeGuardMessage } from './node-guard';
export { quotaStatusValidations } from './quota-status-guard';
export {
  bindingValidations,
  controllerUser,
  integrityValidations,
  PROTECTED_ANNOTATIONS,
  recordValidations,
  shareResourceValidations,
} from './integrity';
export type { PolicyValidation } from './integrity';
export { PREEMPTION_REASON, workerImageValidations, workerShapeValidations, writeLimitValidations } from './write-limits';
export {
  AUTHENTICATION_READER_ROLE,
  BLOCKING_OWNER_RESOURCES,
  controllerClusterRules,
  controllerNamespaceRules,
  CONTROLLER_API_RESOURCES,
  KUBE_SCHEDULER_CLUSTER_ROLES,
  STATUS_WRITTEN_RESOURCES,
} from './rbac';
export type { PolicyRule } from './rbac';
export { KUBE_SCHEDULER_SECURE_PORT, renderSchedulerConfiguration, SCHEDULER_CONFIG_KEY } from './kube-scheduler';
export type { KubeSchedulerConfiguration, SchedulerExtender } from './kube-scheduler';
export {
  AGENT_BUNDLE_KEY,
  AGENT_PROGRAM,
  BUNDLE_KEY,
  bundleConfigMapName,
  CONFIGMAP_MAX_BYTES,
  CONTROLLER_PROGRAM,
  SHIPPED_CONFIGMAP_BUDGET_BYTES,
} from './shipping';
export type { ControllerBundleRef, Program, ShippedCode } from './shipping';
export { WEBHOOK_EXCLUDED_NAMESPACES, WEBHOOK_TIMEOUT_SECONDS, webhookDnsNames } from './webhook';
export { WEBHOOK_SERVICE_PORT } from './network';
export { CONTROLLER_UID } from './controller-deployment';
export { AGENT_NAMES, agentNamespace } from './agent';
export {
  AGENT_DRA_RULES,
  CLAIM_CONTROLLER_USERS,
  claimTemplateValidations,
  claimValidations,
  CONTROLLER_DRA_RULES,
  draPodValidations,
  DRA_NAMES,
} from './dra';
export { DASHBOARD_KEY, DASHBOARD_ROWS, DASHBOARD_UID, DASHBOARD_VARIABLES, dashboardModel, GRAFANA_DASHBOARD_LABEL } from './dashboard';
export type { DashboardPanel, DashboardTarget } from './dashboard';
export { ALERT_RULES, alertRuleGroups, RULE_FILE_KEY } from './alert-rules';
export type { AlertRuleSpec } from './alert-rules';

/**
 * Every object of the controller install.
 * @param bundle the shipped bundle; required unless `props.image` is set.
 * @throws ValidationError when a prop is invalid (nothing is rendered).
 */
export function renderController(props: TensorFusionControllerProps = {}, bundle?: ControllerBundleRef): KubeObject[] {
  const resolved = resolveControllerProps(props);
  const labels = { ...COMMON_LABELS };
  const namespace: KubeObject = {
    apiVersion: 'v1',
    kind: 'Namespace',
    // The namespace enforces what the pod spec already meets, so nothing weaker can be added later.
    metadata: { name: resolved.namespace, labels: { ...labels, [POD_SECURITY_ENFORCE_LABEL]: 'restricted' } },
  };
  const shipping = renderShipping(resolved, labels, bundle);
  const scheduler = renderSchedulerConfigMap(resolved, labels);
  return [
    namespace,
    ...(resolved.installCrds ? (renderCrds() as unknown as KubeObject[]) : []),
    ...renderPriorityClasses(labels),
    ...renderRbac(resolved, labels),
    ...(resolved.dra ? [renderDeviceClass(labels), ...renderDraRbac(resolved, labels)] : []),
    ...renderCertificates(resolved, labels),
    ...shipping.objects,
    scheduler.configMap,
    ...renderWorkload(resolved, labels, shipping, scheduler.checksum),
    ...(resolved.nodeAgent ? renderAgent(resolved, labels, bundle) : []),
    ...renderNetwork(resolved, labels),
    ...(resolved.serviceMonitor ? [renderServiceMonitor(resolved, labels)] : []),
    ...(resolved.grafanaDashboard ? [renderDashboard(resolved, labels)] : []),
    ...(resolved.alertRules ? [renderAlertRules(resolved, resolved.alertRules, labels)] : []),
    ...renderIntegrityPolicy(resolved, labels),
    ...renderWriteLimits(resolved, labels),
    ...renderNodeGuard(labels),
    ...renderQuotaStatusPolicy(resolved, labels),
    ...(resolved.dra ? renderDraPolicies(resolved, labels) : []),
    renderWebhookConfiguration(resolved, labels),
  ];
}
