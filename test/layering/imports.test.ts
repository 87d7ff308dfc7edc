/**
 * The import rules of .dependency-cruiser.cjs (run by `npm test` as `lint:imports`) fail on the arrows
 * they forbid, naming the rule: each case builds a small tree with one such arrow, in the repository's
 * folder layout, and runs dependency-cruiser on it with the project's own config.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const REPO = path.resolve(__dirname, '../..');

/** dependency-cruiser's verdict on a tree of `files` (path -> source). */
function cruise(files: Record<string, string>): { code: number | null; output: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-layering-'));
  try {
    writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'commonjs', strict: true } }));
    for (const [file, source] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), source);
    }
    const roots = [...new Set(Object.keys(files).map((f) => f.split('/')[0]))];
    const r = spawnSync(
      process.execPath,
      [
        path.join(REPO, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'),
        ...roots,
        '--config',
        path.join(REPO, '.dependency-cruiser.cjs'),
        '--output-type',
        'err',
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    return { code: r.status, output: r.stdout + r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const leaf = 'export const x = 1;\n';
const uses = (spec: string) => `import { x } from '${spec}';\nexport const y = x;\n`;

const PARTS = 'runtime-floor-webhook-extender-reconcile-autoscale-agent-view';

describe('the import rules', () => {
  it('pass a tree whose arrows all point down', () => {
    const r = cruise({
      'lib/k8s/quantity.ts': leaf,
      'lib/model/metadata-keys.ts': uses('../k8s/quantity'),
      'lib/api/gpu-pool.ts': uses('../model/metadata-keys'),
      'lib/render/gpu-pool.ts': uses('../api/gpu-pool'),
      'lib/runtime/kube/cluster.ts': uses('../../model/metadata-keys'),
      'lib/runtime/shared/share.ts': uses('../kube/cluster'),
      'lib/runtime/serving/tls.ts': uses('../shared/share'),
      'lib/runtime/webhook/admit.ts': uses('../serving/tls'),
      'lib/runtime/main.ts': uses('./webhook/admit'),
      'lib/index.ts': uses('./render/gpu-pool'),
      'components/pulumi/gpu-pool.ts': uses('../../lib/render/gpu-pool'),
    });
    expect(r.output).toContain('no dependency violations found');
    expect(r.code).toBe(0);
  });

  it.each([
    [
      PARTS,
      { 'lib/runtime/agent/claims.ts': leaf, 'lib/runtime/webhook/admit.ts': uses('../agent/claims') },
      'lib/runtime/webhook/admit.ts → lib/runtime/agent/claims.ts',
    ],
    [
      PARTS,
      { 'lib/runtime/runtime.ts': leaf, 'lib/runtime/extender/component.ts': uses('../runtime') },
      'lib/runtime/extender/component.ts → lib/runtime/runtime.ts',
    ],
    [
      PARTS,
      { 'lib/runtime/cli/plan.ts': leaf, 'lib/runtime/extender/placement-state.ts': uses('../cli/plan') },
      'lib/runtime/extender/placement-state.ts → lib/runtime/cli/plan.ts',
    ],
    [
      'runtime-floor-cli',
      { 'lib/runtime/main.ts': leaf, 'lib/runtime/cli/main.ts': uses('../main') },
      'lib/runtime/cli/main.ts → lib/runtime/main.ts',
    ],
    [
      'runtime-floor-kube',
      { 'lib/runtime/shared/metrics.ts': leaf, 'lib/runtime/kube/informer.ts': uses('../shared/metrics') },
      'lib/runtime/kube/informer.ts → lib/runtime/shared/metrics.ts',
    ],
    [
      'runtime-floor-shared',
      { 'lib/runtime/reconcile/keys.ts': leaf, 'lib/runtime/shared/caches.ts': uses('../reconcile/keys') },
      'lib/runtime/shared/caches.ts → lib/runtime/reconcile/keys.ts',
    ],
    [
      'runtime-not-into-render',
      { 'lib/render/agent.ts': leaf, 'lib/runtime/agent/main.ts': uses('../../render/agent') },
      'lib/runtime/agent/main.ts → lib/render/agent.ts',
    ],
    ['iac-floor-model', { 'lib/api/kinds.ts': leaf, 'lib/model/rules.ts': uses('../api/kinds') }, 'lib/model/rules.ts → lib/api/kinds.ts'],
    [
      'iac-floor-api',
      { 'lib/autoscale/forecast.ts': leaf, 'lib/api/workload-profile.ts': uses('../autoscale/forecast') },
      'lib/api/workload-profile.ts → lib/autoscale/forecast.ts',
    ],
    [
      'iac-floor-allocator-autoscale-contract-t9k',
      { 'lib/t9k/keys.ts': leaf, 'lib/allocator/pool.ts': uses('../t9k/keys') },
      'lib/allocator/pool.ts → lib/t9k/keys.ts',
    ],
    ['iac-floor-render', { 'lib/index.ts': leaf, 'lib/render/gpu-pool.ts': uses('..') }, 'lib/render/gpu-pool.ts → lib/index.ts'],
    [
      'iac-not-into-runtime',
      { 'lib/runtime/agent/contract.ts': leaf, 'lib/render/agent.ts': uses('../runtime/agent/contract') },
      'lib/render/agent.ts → lib/runtime/agent/contract.ts',
    ],
    [
      'lib-not-into-components',
      { 'components/cdk8s/pool.ts': leaf, 'lib/render/pool.ts': uses('../../components/cdk8s/pool') },
      'lib/render/pool.ts → components/cdk8s/pool.ts',
    ],
    [
      'frameworks-apart',
      { 'components/cdk8s/pool.ts': leaf, 'components/pulumi/pool.ts': uses('../cdk8s/pool') },
      'components/pulumi/pool.ts → components/cdk8s/pool.ts',
    ],
    [
      'no-cycles',
      { 'lib/api/a.ts': `${uses('./b')}export const z = 1;\n`, 'lib/api/b.ts': `import { z } from './a';\nexport const x = z;\n` },
      'lib/api/a.ts',
    ],
  ])('%s: an arrow it forbids fails the check, naming the rule', (rule, files, arrow) => {
    const r = cruise(files);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain(`error ${rule}: ${arrow}`);
  });
});
