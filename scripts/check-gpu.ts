/**
 * The real-GPU acceptance check of the node side's MPS isolation (scripts/check-gpu/):
 *   npm run check:gpu                  runs it here; one line and exit 0 where nvidia-smi lists no GPU
 *   npm run check:gpu -- --pack [dir]  writes a folder that runs it on a GPU machine without the repo,
 *                                      `bash <dir>/run.sh` (default dir .check-gpu, git-ignored)
 */
import { join } from 'node:path';
import { runCheckGpu } from './check-gpu/main';
import { DEFAULT_PACK_DIR, pack } from './check-gpu/pack';

const args = process.argv.slice(2);
const at = args.indexOf('--pack');
if (at >= 0) {
  pack(args[at + 1] ?? DEFAULT_PACK_DIR).then(
    () => process.exit(0),
    (err: Error) => {
      console.error(`check:gpu: ${err.message}`);
      process.exit(1);
    },
  );
} else {
  runCheckGpu(join(__dirname, 'check-gpu', 'client.py'));
}
