/**
 * The fake nvidia-cuda-mps-control (test/support/fake-mps-control.c), built with the system's cc the
 * first time a test needs it and kept in a folder of the system's temporary one by the hash of its
 * source, so a changed source builds a new one. There, not under root's home, so that the tests'
 * tenants (other uids) may run it too; static, so that the node image (its own libc) runs it.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const SOURCE = path.join(__dirname, 'fake-mps-control.c');

/** Path of the built fake, building it first where the cache has none for this source. */
export function fakeMpsControl(): string {
  const hash = createHash('sha256').update(readFileSync(SOURCE)).digest('hex').slice(0, 16);
  const dir = path.join(tmpdir(), 'tensor-fusion-iac-fakes');
  const bin = path.join(dir, `fake-mps-control-${hash}`);
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  // Built beside, then renamed: test files built at once each see a whole binary.
  const tmp = `${bin}.${process.pid}.tmp`;
  execFileSync('cc', ['-O2', '-static', '-o', tmp, SOURCE]);
  renameSync(tmp, bin);
  return bin;
}
