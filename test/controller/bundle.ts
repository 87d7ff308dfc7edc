/**
 * Makes sure build/controller/controller.js exists before tests that load the real bundle: builds it
 * with the runtime's script when there is one, else with esbuild's API from lib/runtime/main.ts.
 */
import { execFileSync } from 'child_process';
import { existsSync, mkdirSync, renameSync } from 'fs';
import * as path from 'path';
import { controllerBundlePath, packageRoot } from '../../lib/controller-bundle';

export async function ensureBundle(): Promise<string> {
  const file = controllerBundlePath();
  if (existsSync(file)) return file;
  const root = packageRoot();
  const script = path.join(root, 'scripts', 'bundle-controller.js');
  if (existsSync(script)) {
    execFileSync(process.execPath, [script], { cwd: root, stdio: 'inherit' });
  } else {
    const entry = path.join(root, 'lib', 'runtime', 'main.ts');
    if (!existsSync(entry)) throw new Error(`cannot build the controller bundle: neither ${script} nor ${entry} exists yet`);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const esbuild = require('esbuild') as typeof import('esbuild');
    const tmp = `${file}.${process.pid}.tmp`;
    mkdirSync(path.dirname(file), { recursive: true });
    await esbuild.build({ entryPoints: [entry], bundle: true, platform: 'node', target: 'node20', format: 'cjs', minify: true, outfile: tmp, logLevel: 'error' });
    renameSync(tmp, file); // atomic, so a concurrent reader never sees half a file
  }
  if (!existsSync(file)) throw new Error(`building the controller bundle did not produce ${file}`);
  return file;
}
