/**
 * `npm run check:gpu -- --pack [dir]`: a folder that runs the GPU check where there is no copy of the
 * repo (a bare GPU machine: bash, the driver and python3; no PyTorch, npm or network needed):
 *   check-gpu.js  the check, bundled with esbuild (the supervisor, the collector, prom-client)
 *   client.py     the CUDA client (ctypes on libcuda; PyTorch optional), beside the bundle
 *   node.gz       this machine's node binary, gzipped (gzip or python3 unpack it on any such machine)
 *   run.sh        unpacks node into a temp folder and runs the bundle, forwarding signals: `bash <dir>/run.sh`
 */
import { build } from 'esbuild';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** Where `--pack` without a folder writes (git-ignored: what is carried to a GPU machine). */
export const DEFAULT_PACK_DIR = '.check-gpu';
/** The most the folder may weigh, to travel to a GPU machine with the rest of a working tree. */
export const PACK_MAX_BYTES = 60 * 2 ** 20;

const RUN_SH = `#!/usr/bin/env bash
# The GPU check packed by \`npm run check:gpu -- --pack\`: unpacks node into a temp folder and runs it,
# forwarding SIGTERM and SIGINT to it so that it still prints its JSON line.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "\${TMPDIR:-/tmp}/check-gpu-node.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
if command -v gzip >/dev/null; then gzip -dc "$here/node.gz" >"$tmp/node"
else python3 -c 'import gzip, shutil, sys; shutil.copyfileobj(gzip.open(sys.argv[1]), sys.stdout.buffer)' "$here/node.gz" >"$tmp/node"; fi || exit 1
chmod +x "$tmp/node"
# Some GPU images have the driver's tools in /usr/local/nvidia/bin without it on PATH.
PATH="$PATH:/usr/local/nvidia/bin" "$tmp/node" "$here/check-gpu.js" "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM
trap 'kill -INT "$child" 2>/dev/null' INT
# A trapped signal ends \`wait\` early: wait again until the check itself has exited.
wait "$child"; rc=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
exit "$rc"
`;

/** Writes the folder and prints its size; rejects when it is over PACK_MAX_BYTES. */
export async function pack(dir: string): Promise<void> {
  const started = Date.now();
  if (process.platform !== 'linux' || process.arch !== 'x64')
    console.error(`check:gpu: packing a ${process.platform}-${process.arch} node; the GPU machines are linux-x64`);
  mkdirSync(dir, { recursive: true });
  await build({
    stdin: {
      contents: "import { join } from 'node:path';\nimport { runCheckGpu } from './main';\nrunCheckGpu(join(__dirname, 'client.py'));\n",
      resolveDir: __dirname,
      sourcefile: 'check-gpu.ts',
      loader: 'ts',
    },
    outfile: join(dir, 'check-gpu.js'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    // It runs on the node packed beside it.
    target: `node${process.versions.node.split('.')[0]}`,
    legalComments: 'none',
    logLevel: 'warning',
  });
  copyFileSync(join(__dirname, 'client.py'), join(dir, 'client.py'));
  writeFileSync(join(dir, 'node.gz'), gzipSync(readFileSync(process.execPath), { level: 9 }));
  writeFileSync(join(dir, 'run.sh'), RUN_SH);
  chmodSync(join(dir, 'run.sh'), 0o755);
  const bytes = readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
  const mib = (bytes / 2 ** 20).toFixed(1);
  console.log(
    `check:gpu: packed ${dir}: ${mib} MiB in ${((Date.now() - started) / 1000).toFixed(1)} s; run it with: bash ${join(dir, 'run.sh')}`,
  );
  if (bytes > PACK_MAX_BYTES) throw new Error(`${dir} is ${mib} MiB, over ${PACK_MAX_BYTES / 2 ** 20} MiB`);
}
