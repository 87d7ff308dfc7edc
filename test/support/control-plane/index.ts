/**
 * Entry of the real-control-plane harness for test files: {@link describeControlPlane} starts one
 * control plane per test file (beforeAll) and always stops it (afterAll), or skips the file with one
 * line when the binaries are missing. Under CI=true missing binaries fail instead: the suites must run.
 */
import { Binary, missingBinaries } from '../../envtest/assets';
import { ControlPlane, ControlPlaneOptions, binariesFor } from './control-plane';

export { ControlPlane, KWOK_NODE_ANNOTATION } from './control-plane';
export type { AuditEvent, ControlPlaneOptions } from './control-plane';
export { waitFor } from './process';

const HOW = 'run `npm run envtest:setup` (needs Go), or set KUBEBUILDER_ASSETS to a setup-envtest directory';

/**
 * Whether `binaries` are present for the suites of `file` (`suites` names them in the CI error);
 * logs one line saying how to get them (`how`), or throws under CI, when not.
 */
export function binariesAvailable(file: string, binaries: readonly Binary[], suites: string, how: string): boolean {
  const missing = missingBinaries(binaries);
  if (missing.length === 0) return true;
  const msg = `${file}: needs ${missing.join(', ')}; ${how}`;
  if (process.env.CI) throw new Error(`${msg} (CI=true: the ${suites} suites may not skip)`);
  // eslint-disable-next-line no-console
  console.log(`skipped ${msg}`);
  return false;
}

/** Whether the binaries for `opts` are present; logs one line (or throws under CI) when not. */
export function controlPlaneAvailable(file: string, opts: ControlPlaneOptions): boolean {
  return binariesAvailable(file, binariesFor(opts), 'real-control-plane', HOW);
}

/**
 * `describe` with a control plane: `get()` returns it inside tests. Start time is printed once so
 * reports can quote it.
 */
export function describeControlPlane(
  name: string,
  opts: ControlPlaneOptions,
  body: (get: () => ControlPlane) => void,
  startTimeoutMs = 120_000,
): void {
  const file = expect.getState().testPath ?? name;
  const enabled = controlPlaneAvailable(file.replace(/^.*\/test\//, 'test/'), opts);
  (enabled ? describe : describe.skip)(name, () => {
    let cp: ControlPlane | undefined;
    beforeAll(async () => {
      cp = await ControlPlane.start(opts);
      // eslint-disable-next-line no-console
      console.log(`${name}: control plane started in ${cp.startMs} ms`);
    }, startTimeoutMs);
    body(() => {
      if (!cp) throw new Error('control plane did not start');
      return cp;
    });
    // Registered after the body's hooks: jest runs afterAll hooks in order, so the body's own
    // processes (controllers) stop before the control plane does.
    afterAll(async () => {
      await cp?.stop();
    }, 60_000);
  });
}

/** What kube-apiserver says when a ValidatingAdmissionPolicy (bound under its own name) refuses a request. */
export function policyDenial(policy: string, message: string): string {
  return `ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: ${message}`;
}
