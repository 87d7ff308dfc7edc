// Builds the controller bundle once per test run, so tests that ship it (TensorFusionController,
// the example platform) always see the current lib/runtime, never a stale build.
const { execFileSync } = require('child_process');
const path = require('path');

module.exports = async () => {
  const root = path.resolve(__dirname, '..');
  execFileSync(process.execPath, [path.join(root, 'scripts', 'bundle-controller.js')], { cwd: root, stdio: 'ignore' });
};
