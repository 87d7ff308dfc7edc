/**
 * What the end-to-end suites of the controller start from, in one import: {@link controllerSuite},
 * and the install helpers of ./control-plane/install.ts (the example synthesized, KWOK GPU nodes, GPU
 * pods, the controller started as processes).
 */
import { serviceAccountUser } from './control-plane/controller-process';
import { controllerIdentity, synthToTemp } from './control-plane/install';

export * from './control-plane/install';

/**
 * Sets the suite's time limit per test, synthesizes the example into a temp dir and reads the
 * controller's identity from it: its namespace, and its user for the control plane's `users`.
 */
export function controllerSuite(timeoutMs: number): {
  synth: ReturnType<typeof synthToTemp>;
  namespace: string;
  user: ReturnType<typeof serviceAccountUser>;
} {
  jest.setTimeout(timeoutMs);
  const synth = synthToTemp();
  return { synth, ...controllerIdentity(synth.controller) };
}
