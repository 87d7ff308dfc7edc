#!/usr/bin/env node
/**
 * Bundles the runtime controller entry (CONTROLLER_ENTRY of lib/contract/bundle.ts) and the node
 * agent's (AGENT_ENTRY) into one minified file each (CONTROLLER_BUNDLE_PATH, AGENT_BUNDLE_PATH), that
 * the TensorFusionController component ships gzipped in a ConfigMap each (1 MiB limit) and runs on the
 * stock Node.js image. Prints the raw and gzipped sizes. Also bundles the `kubectl tf` plugin (CLI_ENTRY) into CLI_BUNDLE_PATH, the package's `kubectl-tf` bin.
 * Optional transports of client-node that the controller never uses are stubbed out to keep it small.
 */
const path = require('node:path');
const fs = require('node:fs');
const zlib = require('node:zlib');
const esbuild = require('esbuild');

/** Evaluates an import-free TypeScript module (esbuild strips the types). */
function loadTs(file) {
  const { code } = esbuild.transformSync(fs.readFileSync(file, 'utf8'), { loader: 'ts', format: 'cjs' });
  const m = { exports: {} };
  new Function('module', 'exports', code)(m, m.exports);
  return m.exports;
}

const root = path.resolve(__dirname, '..');
// Entries, output paths and size limit have one home, lib/contract/bundle.ts (import-free TypeScript).
const contract = loadTs(path.join(root, 'lib', 'contract', 'bundle.ts'));
const SHIPPED = [
  { name: 'controller', entry: contract.CONTROLLER_ENTRY, out: contract.CONTROLLER_BUNDLE_PATH },
  { name: 'agent', entry: contract.AGENT_ENTRY, out: contract.AGENT_BUNDLE_PATH },
];
const CONFIGMAP_LIMIT = contract.CONFIGMAP_MAX_BYTES;
// The oldest Node.js the package supports (engines.node, ">=20"): the bundle runs on it and on every
// later line, such as the default node:24-alpine image.
const TARGET = `node${/>=\s*(\d+)/.exec(require(path.join(root, 'package.json')).engines.node)[1]}`;

// Modules reachable from client-node's KubeConfig that the controller does not need: websockets
// (exec/attach/port-forward), proxies, tar (cp), form-data and node-fetch (the generated API client;
// we talk HTTP ourselves). Stubbing them keeps auth (token, client certs, exec, OIDC) intact.
const STUBBED = ['ws', 'isomorphic-ws', 'socks-proxy-agent', 'hpagent', 'tar-fs', 'form-data', 'node-fetch', 'stream-buffers'];

const stubPlugin = {
  name: 'stub-unused',
  setup(build) {
    const filter = new RegExp(`^(${STUBBED.map((s) => s.replace(/[-/]/g, '\\$&')).join('|')})(/.*)?$`);
    build.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'stub' }));
    build.onLoad({ filter: /.*/, namespace: 'stub' }, (args) => ({
      contents: `const unavailable = () => { throw new Error(${JSON.stringify(`${args.path} is not bundled in the controller`)}); };
module.exports = new Proxy(unavailable, { get: (t, k) => (k === '__esModule' ? false : k === 'default' ? unavailable : unavailable) });`,
      loader: 'js',
    }));
  },
};

async function main() {
  fs.mkdirSync(path.join(root, path.dirname(contract.CONTROLLER_BUNDLE_PATH)), { recursive: true });
  const common = {
    bundle: true,
    platform: 'node',
    target: TARGET,
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [stubPlugin],
  };
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  for (const { name, entry, out } of SHIPPED) {
    const outfile = path.join(root, out);
    const result = await esbuild.build({ ...common, entryPoints: [path.join(root, entry)], outfile, metafile: true });
    const bytes = fs.statSync(outfile).size;
    const gz = zlib.gzipSync(fs.readFileSync(outfile)).length;
    console.log(`${name} bundle: ${out} ${kib(bytes)} (gzip ${kib(gz)})`);
    if (process.argv.includes('--analyze')) console.log(await esbuild.analyzeMetafile(result.metafile));
    // The ConfigMap carries the gzipped bundle (binaryData), so that is what counts against its limit.
    if (gz > CONFIGMAP_LIMIT) {
      console.error(`${name} bundle is ${kib(gz)} gzipped, over the ConfigMap limit of ${kib(CONFIGMAP_LIMIT)}`);
      process.exit(1);
    }
  }
  // The kubectl plugin: the same runtime code and dependencies, one file a user's Node.js runs as is.
  const cli = path.join(root, contract.CLI_BUNDLE_PATH);
  await esbuild.build({ ...common, entryPoints: [path.join(root, contract.CLI_ENTRY)], outfile: cli, metafile: false });
  fs.chmodSync(cli, 0o755);
  console.log(`kubectl plugin: ${path.relative(root, cli)} ${kib(fs.statSync(cli).size)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
