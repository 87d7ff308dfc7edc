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

describe('the import rules', () => {
  it('pass a tree whose arrows all point down', () => {
    const r = cruise({
      'lib/model/keys.ts': leaf,
      'lib/render/gpu-pool.ts': uses('../model/keys'),
      'lib/runtime/share.ts': uses('../model/keys'),
      'lib/runtime/webhook/admit.ts': uses('../share'),
      'components/pulumi/gpu-pool.ts': uses('../../lib/render/gpu-pool'),
    });
    expect(r.output).toContain('no dependency violations found');
    expect(r.code).toBe(0);
  });

  it.each([
    [
      'runtime-parts-not-sideways',
      { 'lib/runtime/agent/claims.ts': leaf, 'lib/runtime/webhook/admit.ts': uses('../agent/claims') },
      'lib/runtime/webhook/admit.ts → lib/runtime/agent/claims.ts',
    ],
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
