/**
 * `pulumi up` runs the program named by Pulumi.yaml's `main` through ts-node with the tsconfig.json of
 * that program's folder, and with Pulumi's own defaults (ES2020 lib, no Object.hasOwn) when there is
 * none: the real engine failed the example so (TS2550 in lib/model/kind-scope.ts). The folder has its
 * own tsconfig.json, and the program type-checks with it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

test('the folder of the Pulumi program has a tsconfig.json with which the program type-checks', () => {
  const main = /^main:\s*(\S+)/m.exec(readFileSync(path.join(ROOT, 'Pulumi.yaml'), 'utf8'))![1];
  const dir = path.dirname(path.join(ROOT, main));
  expect(existsSync(path.join(dir, 'tsconfig.json'))).toBe(true);
  // Throws with tsc's output on an error.
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', dir], { cwd: ROOT, stdio: 'pipe' });
}, 120_000);
