/**
 * TensorFusionGpuIsolationNotReady through `promtool test rules` on the rendered rule file: it fires for
 * a GPU whose agent reports isolation not ready (the backstop failing closed), not for a ready one, and
 * its signal has data on a cluster with no hard isolation.
 */
import { execFileSync } from 'child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { stringify } from 'yaml';
import { AGENT_METRICS } from '../../../lib/contract/agent';
import { ALERT_RULES, renderController, RULE_FILE_KEY } from '../../../lib/render/controller';
import { prometheusAvailable } from '../../support/prometheus';
import { FAKE_BUNDLE, find, Json } from './fixtures';

const promtool = prometheusAvailable('test/render/controller/isolation-alert.test.ts', 'promtool');
const ALERT = 'TensorFusionGpuIsolationNotReady';

(promtool ? it : it.skip)('fires for the GPU whose isolation is not ready, with its reason, and only for it', () => {
  const cm = find(renderController({ alertRules: 'ConfigMap' }, FAKE_BUNDLE), 'ConfigMap', 'tensor-fusion-alerts') as Json;
  const rule = ALERT_RULES.find((r) => r.alert === ALERT)!;
  const labels = { node: 'n-0', gpu_uuid: 'GPU-a', reason: 'BackstopUnavailable' };
  const description = rule.description.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, k: keyof typeof labels) => labels[k]);
  const ready = (gpu: string, reason: string) => `${AGENT_METRICS.isolationReady}{node="n-0",gpu_uuid="${gpu}",reason="${reason}"}`;
  const tests = {
    rule_files: ['rules.yaml'],
    evaluation_interval: '1m',
    tests: [
      {
        interval: '1m',
        input_series: [
          { series: ready('GPU-a', 'BackstopUnavailable'), values: '0x5' },
          { series: ready('GPU-b', 'MpsReady'), values: '1x5' },
        ],
        alert_rule_test: [
          { eval_time: '1m', alertname: ALERT, exp_alerts: [] },
          {
            eval_time: '4m',
            alertname: ALERT,
            exp_alerts: [{ exp_labels: { severity: 'critical', ...labels }, exp_annotations: { summary: rule.summary, description } }],
          },
        ],
      },
      {
        interval: '1m',
        input_series: [],
        promql_expr_test: [{ expr: rule.signal, eval_time: '1m', exp_samples: [{ labels: '{}', value: 1 }] }],
      },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), 'tf-alert-'));
  try {
    writeFileSync(join(dir, 'rules.yaml'), cm.data[RULE_FILE_KEY]);
    writeFileSync(join(dir, 'tests.yaml'), stringify(tests));
    const out = execFileSync('promtool', ['test', 'rules', join(dir, 'tests.yaml')], { encoding: 'utf8', stdio: 'pipe' });
    expect(out).toContain('SUCCESS');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
