/**
 * The package as a user gets it: compiled into a temp dir (not the shared build/) with the bundles, `npm pack`ed
 * offline, and unpacked into consumer projects whose other modules are the repo's own, linked (no
 * network). Runtime-only dependencies of the controller are left out of the consumers, as they are
 * devDependencies: the IaC entry points must not need them.
 */
import { execFileSync } from 'child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join, resolve } from 'path';

export const REPO = resolve(__dirname, '../..');
export const TSC = join(REPO, 'node_modules/typescript/bin/tsc');
const NPM_ENV = {
  ...process.env,
  npm_config_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
};

/** What the controller bundle carries, so an IaC install does not: left out of every consumer. */
export const RUNTIME_ONLY = ['@kubernetes/client-node', 'fast-json-patch', 'node-forge', 'pino', 'prom-client'];

export interface Packed {
  work: string;
  tarball: string;
  entries: string[];
  remove(): void;
}

/** Compiles and packs the package into a new temp dir. */
export function pack(): Packed {
  const work = mkdtempSync(join(tmpdir(), 'tf-pack-'));
  const stage = join(work, 'stage');
  mkdirSync(stage);
  for (const f of ['package.json', 'README.md', 'LICENSE', 'crds'])
    if (existsSync(join(REPO, f))) cpSync(join(REPO, f), join(stage, f), { recursive: true });
  execFileSync(process.execPath, [TSC, '-p', join(REPO, 'tsconfig.build.json'), '--outDir', join(stage, 'build')], {
    cwd: REPO,
    stdio: 'pipe',
  });
  // What `npm run build` adds to the compiled JS: the controller and plugin bundles (test/global-setup.js builds them).
  cpSync(join(REPO, 'build/controller'), join(stage, 'build/controller'), { recursive: true });
  execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', work], { cwd: stage, env: NPM_ENV, stdio: 'pipe' });
  const tarball = join(
    work,
    readdirSync(work).find((f) => f.endsWith('.tgz'))!,
  );
  const entries = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n');
  return { work, tarball, entries, remove: () => rmSync(work, { recursive: true, force: true }) };
}

/**
 * A consumer project in `<work>/<name>` with the packed package installed, the repo's modules linked
 * (all but {@link RUNTIME_ONLY} and `exclude`), `files` written and a package.json.
 */
export function consumer(packed: Packed, name: string, files: Record<string, string>, exclude: readonly string[] = []): string {
  const project = join(packed.work, name);
  const modules = join(project, 'node_modules');
  const pkg = join(modules, 'tensor-fusion-iac');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['-xzf', packed.tarball, '-C', pkg, '--strip-components=1']);
  const skip = new Set(['tensor-fusion-iac', ...RUNTIME_ONLY, ...exclude]);
  for (const entry of readdirSync(join(REPO, 'node_modules'))) {
    if (entry.startsWith('.')) continue;
    if (entry.startsWith('@')) {
      mkdirSync(join(modules, entry), { recursive: true });
      for (const scoped of readdirSync(join(REPO, 'node_modules', entry))) {
        if (!skip.has(`${entry}/${scoped}`)) symlinkSync(join(REPO, 'node_modules', entry, scoped), join(modules, entry, scoped), 'dir');
      }
    } else if (!skip.has(entry)) {
      symlinkSync(join(REPO, 'node_modules', entry), join(modules, entry), 'dir');
    }
  }
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name, private: true }));
  for (const [file, text] of Object.entries(files)) writeFileSync(join(project, file), text);
  return project;
}

/** Compiles a consumer with `tsc` (default: the repo's); returns the compiler's output ('' when clean). */
export function compile(project: string, tsc = TSC): string {
  try {
    execFileSync(process.execPath, [tsc, '-p', project], { cwd: project, encoding: 'utf8', stdio: 'pipe' });
    return '';
  } catch (err) {
    const { stdout, stderr } = err as { stdout: string; stderr: string };
    return `${stdout}${stderr}`.trim() || String(err);
  }
}
