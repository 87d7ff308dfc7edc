/**
 * The fakes written in C (test/support/<name>.c: the MPS control daemon, nvidia-smi), built with the
 * system's cc the first time a test needs one and kept in a folder of the system's temporary one by
 * the hash of its source, so a changed source builds a new one. There, not under root's home, so that
 * the tests' tenants (other uids) may run them too; static, so that the node image (its own libc) runs them.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/** Path of the built fake `name` (its source test/support/<name>.c), building it first where the cache has none for this source. */
export function builtFake(name: 'fake-mps-control' | 'fake-nvidia-smi'): string {
  const source = path.join(__dirname, `${name}.c`);
  const hash = createHash('sha256').update(readFileSync(source)).digest('hex').slice(0, 16);
  const dir = path.join(tmpdir(), 'tensor-fusion-iac-fakes');
  const bin = path.join(dir, `${name}-${hash}`);
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  // Built beside, then renamed: test files built at once each see a whole binary.
  const tmp = `${bin}.${process.pid}.tmp`;
  execFileSync('cc', ['-O2', '-static', '-o', tmp, source, '-lm']);
  renameSync(tmp, bin);
  return bin;
}
