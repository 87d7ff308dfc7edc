/**
 * The Grafana dashboard ConfigMap and the alert rules (PrometheusRule or a rule-file ConfigMap): their
 * shapes and labels, a query in every panel, metric names only from the contract, and the rule file
 * accepted by `promtool check rules`. test/e2e/observability.test.ts runs every query on a real Prometheus.
 */
import { execFileSync } from 'child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { parse, stringify } from 'yaml';
import { AGENT_METRICS } from '../../../lib/contract/agent';
import { CONTROLLER_METRICS } from '../../../lib/contract/metrics';
import { COMMON_LABELS } from '../../../lib/contract/object-names';
import { KubeObject } from '../../../lib/k8s/object';
import {
  ALERT_RULES,
  DASHBOARD_KEY,
  DASHBOARD_UID,
  renderController,
  RULE_FILE_KEY,
  TensorFusionControllerProps,
} from '../../../lib/render/controller';
import { prometheusAvailable } from '../../support/prometheus';
import { validateAll } from '../../support/validate-k8s';
import { FAKE_BUNDLE, find, Json } from './fixtures';

const render = (props: TensorFusionControllerProps = {}) => renderController(props, FAKE_BUNDLE);
const promtool = prometheusAvailable('test/render/controller/observability.test.ts', 'promtool');

/** The metric names a PromQL expression reads (histogram series by their family name). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\btf_[a-z0-9_]+/g)].map((m) => m[0].replace(/_bucket$/, ''));
}
const KNOWN = new Set<string>([...Object.values(CONTROLLER_METRICS), ...Object.values(AGENT_METRICS)]);

function dashboard(objects: KubeObject[]): Json {
  return JSON.parse((find(objects, 'ConfigMap', 'tensor-fusion-dashboard') as Json).data[DASHBOARD_KEY]);
}

/** `promtool check rules` on a rule file; its output, or the error with promtool's words. */
function checkRules(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'tf-rules-'));
  try {
    writeFileSync(join(dir, 'rules.yaml'), text);
    return execFileSync('promtool', ['check', 'rules', join(dir, 'rules.yaml')], { encoding: 'utf8', stdio: 'pipe' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('Grafana dashboard and alert rules', () => {
  it('renders neither by default', () => {
    const objects = render();
    expect(objects.filter((o) => o.metadata.name === 'tensor-fusion-dashboard' || o.metadata.name === 'tensor-fusion-alerts')).toEqual([]);
    expect(objects.map((o) => o.kind)).not.toContain('PrometheusRule');
  });

  it("grafanaDashboard: a ConfigMap in the controller's namespace, labelled for the Grafana sidecar", () => {
    const objects = render({ grafanaDashboard: true });
    expect(() => validateAll(objects)).not.toThrow();
    const cm = find(objects, 'ConfigMap', 'tensor-fusion-dashboard') as Json;
    expect(cm.metadata.namespace).toBe('tensor-fusion-system');
    expect(cm.metadata.labels).toEqual({ ...COMMON_LABELS, grafana_dashboard: '1' });
    expect(Object.keys(cm.data)).toEqual(['tensor-fusion.json']);
    const d = dashboard(objects);
    expect(d).toMatchObject({ uid: DASHBOARD_UID, title: 'Tensor Fusion', schemaVersion: 39 });
    expect(d.templating.list.map((v: Json) => [v.name, v.type])).toEqual([
      ['datasource', 'datasource'],
      ['pool', 'query'],
    ]);
    expect(
      find(render({ grafanaDashboard: true, grafanaDashboardNamespace: 'monitoring' }), 'ConfigMap', 'tensor-fusion-dashboard').metadata
        .namespace,
    ).toBe('monitoring');
  });

  it('every panel has queries with distinct refIds, a unit and the datasource variable; panels do not overlap', () => {
    const d = dashboard(render({ grafanaDashboard: true }));
    const panels = (d.panels as Json[]).filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThanOrEqual(15);
    expect(new Set(d.panels.map((p: Json) => p.id)).size).toBe(d.panels.length);
    for (const p of panels) {
      expect(p.targets.length).toBeGreaterThan(0);
      expect(p.fieldConfig.defaults.unit).toBeTruthy();
      expect(p.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(new Set(p.targets.map((t: Json) => t.refId)).size).toBe(p.targets.length);
      for (const t of p.targets) expect(t.expr).toMatch(/\btf_/);
    }
    const cells = new Set<string>();
    for (const p of d.panels as Json[]) {
      const { x, y, w, h } = p.gridPos;
      for (let i = x; i < x + w; i++)
        for (let j = y; j < y + h; j++) {
          expect(cells.has(`${i},${j}`)).toBe(false);
          cells.add(`${i},${j}`);
        }
    }
  });

  it('reads only metric names the contract declares, and shows pools, shares, pending pods, webhook, extender, autoscaler and quotas', () => {
    const d = dashboard(render({ grafanaDashboard: true }));
    const exprs = (d.panels as Json[]).flatMap((p) => (p.targets ?? []).map((t: Json) => t.expr as string));
    const used = new Set(exprs.flatMap(metricNames));
    for (const name of used) expect(KNOWN).toContain(name);
    const C = CONTROLLER_METRICS;
    for (const name of [
      C.poolCapacityTflops,
      C.poolRequestedTflops,
      C.poolCapacityVram,
      C.poolRequestedVram,
      AGENT_METRICS.computeUsed,
      AGENT_METRICS.vramUsed,
      C.gpuShares,
      C.pendingGpuPods,
      C.webhookAdmissions,
      C.webhookSeconds,
      C.extenderCalls,
      C.extenderSeconds,
      C.autoscaleRecommendedTflops,
      C.autoscaleRequestedTflops,
      C.gpuQuota,
    ])
      expect(used).toContain(name);
  });

  it('alertRules PrometheusRule: monitoring.coreos.com/v1 with every rule, its for, severity and annotations, and the extra labels', () => {
    const objects = render({ alertRules: 'PrometheusRule', alertRuleLabels: { release: 'kube-prometheus-stack' } });
    const pr = find(objects, 'PrometheusRule', 'tensor-fusion-alerts') as Json;
    expect(pr.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(pr.metadata).toEqual({
      name: 'tensor-fusion-alerts',
      namespace: 'tensor-fusion-system',
      labels: { ...COMMON_LABELS, release: 'kube-prometheus-stack' },
    });
    const rules = pr.spec.groups[0].rules as Json[];
    expect(rules.map((r) => r.alert)).toEqual(ALERT_RULES.map((r) => r.alert));
    for (const [i, r] of rules.entries()) {
      expect(r.expr).toBe(`${ALERT_RULES[i].signal} ${ALERT_RULES[i].condition}`);
      expect(r.for).toMatch(/^\d+m$/);
      expect(['critical', 'warning']).toContain(r.labels.severity);
      expect(r.annotations.summary).toBeTruthy();
      expect(r.annotations.description).toBeTruthy();
      for (const name of metricNames(r.expr)) expect(KNOWN).toContain(name);
    }
  });

  it('alertRules ConfigMap: the same groups as a plain rule file', () => {
    const cm = find(render({ alertRules: 'ConfigMap' }), 'ConfigMap', 'tensor-fusion-alerts') as Json;
    const pr = find(render({ alertRules: 'PrometheusRule' }), 'PrometheusRule') as Json;
    expect(Object.keys(cm.data)).toEqual([RULE_FILE_KEY]);
    expect(parse(cm.data[RULE_FILE_KEY])).toEqual(pr.spec);
  });

  (promtool ? it : it.skip)(
    'promtool check rules accepts the rule file and the PrometheusRule spec, and refuses a broken expression',
    () => {
      const cm = find(render({ alertRules: 'ConfigMap' }), 'ConfigMap', 'tensor-fusion-alerts') as Json;
      expect(checkRules(cm.data[RULE_FILE_KEY])).toContain(`SUCCESS: ${ALERT_RULES.length} rules found`);
      const pr = find(render({ alertRules: 'PrometheusRule' }), 'PrometheusRule') as Json;
      expect(checkRules(stringify(pr.spec))).toContain('SUCCESS');
      // The check is real: an unbalanced parenthesis fails it.
      const broken = parse(cm.data[RULE_FILE_KEY]);
      broken.groups[0].rules[0].expr += ')';
      expect(() => checkRules(stringify(broken))).toThrow(/parse error/);
    },
  );
});
