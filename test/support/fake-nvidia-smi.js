#!/usr/bin/env node
/**
 * A fake nvidia-smi that replays a known trace (JSON at $FAKE_SMI_TRACE), printing exactly what the
 * real one prints for the queries the agent runs:
 *   --query-gpu=index,uuid,name --format=csv,noheader
 *   --query-gpu=uuid,compute_mode --format=csv,noheader   (a GPU's `computeMode` in the trace, else Default)
 *   --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits
 *   pmon -c 1 -s u
 * Trace: { gpus: [{ index, uuid, name }], steps: [{ apps: [{ pid, gpu (index), mib, sm (percent or null), mps }] }] }.
 * `mps: "server"` prints the app as the real MPS server (`nvidia-cuda-mps`, type C, its SM %), `mps:
 * "client"` as an MPS client (type M+C, `-` for SM and memory %), as ../shared/gpu/h100-driver-580 shows.
 * A step `{ fail: true }` fails every query as the real one does when it cannot reach the driver: its
 * message on stdout, exit code 9.
 * The step shown is read from $FAKE_SMI_STEP_FILE when set (tests that drive it), else it advances every
 * $FAKE_SMI_STEP_MS since $FAKE_SMI_START_MS (tests that let Prometheus scrape); the last step repeats.
 */
const fs = require('node:fs');
const trace = JSON.parse(fs.readFileSync(process.env.FAKE_SMI_TRACE, 'utf8'));
const stepFile = process.env.FAKE_SMI_STEP_FILE;
const index = stepFile
  ? Number(fs.readFileSync(stepFile, 'utf8'))
  : Math.floor((Date.now() - Number(process.env.FAKE_SMI_START_MS)) / Number(process.env.FAKE_SMI_STEP_MS));
const step = trace.steps[Math.min(Math.max(index, 0), trace.steps.length - 1)];
const args = process.argv.slice(2);
if (step.fail) {
  process.stdout.write(
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n\n",
  );
  process.exit(9);
}
const uuid = (i) => trace.gpus.find((g) => g.index === i).uuid;
const out = [];
if (args[0] === '--query-gpu=index,uuid,name') {
  for (const g of trace.gpus) out.push(`${g.index}, ${g.uuid}, ${g.name}`);
} else if (args[0] === '--query-gpu=uuid,compute_mode') {
  for (const g of trace.gpus) out.push(`${g.uuid}, ${g.computeMode ?? 'Default'}`);
} else if (args[0] === '--query-compute-apps=pid,used_memory,gpu_uuid') {
  if (step.apps.length === 0) out.push('No running processes found');
  for (const a of step.apps) out.push(`${a.pid}, ${a.mib}, ${uuid(a.gpu)}`);
} else if (args[0] === 'pmon') {
  out.push('# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command');
  out.push('# Idx           #    C/G      %      %      %      %      %      %    name');
  for (const g of trace.gpus) {
    const apps = step.apps.filter((a) => a.gpu === g.index);
    if (apps.length === 0) out.push(`    ${g.index}          -     -      -      -      -      -      -      -    -`);
    for (const a of apps) {
      const client = a.mps === 'client';
      const sm = client || a.sm == null ? '     -' : String(a.sm).padStart(5);
      const command = a.mps === 'server' ? 'nvidia-cuda-mps' : 'python3';
      out.push(
        `    ${g.index}    ${String(a.pid).padStart(7)}   ${client ? 'M+C' : '  C'}  ${sm}      ${client ? '-' : '3'}      -      -      -      -    ${command}`,
      );
    }
  }
} else {
  process.stderr.write(`fake nvidia-smi: unsupported arguments ${args.join(' ')}\n`);
  process.exit(2);
}
process.stdout.write(out.join('\n') + '\n');
