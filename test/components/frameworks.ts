/**
 * Runs the same component props through cdk8s (synth) and Pulumi (mocks) so that each component
 * test can assert both frameworks give deep-equal objects, and that bad props fail alike in both.
 */
import { Chart } from 'cdk8s';
import { KubeObject } from '../../lib/k8s/object';
import { synthChart, sortObjects } from '../support/cdk8s';
import { capture, objectsOf } from '../support/pulumi-mocks';

/** What a cdk8s chart synthesizes and what the Pulumi program registers, each sorted. */
export interface BothOutputs {
  cdk8s: KubeObject[];
  pulumi: KubeObject[];
}

/** Builds with both frameworks; the chart has no namespace so that both default alike. */
export async function buildBoth(cdk8s: (chart: Chart) => void, pulumi: () => void): Promise<BothOutputs> {
  const fromCdk8s = sortObjects(synthChart(cdk8s));
  const fromPulumi = sortObjects(objectsOf(await capture(pulumi))) as unknown as KubeObject[];
  return { cdk8s: fromCdk8s, pulumi: fromPulumi };
}

/** Builds with both frameworks, asserts they agree and returns the (single framework's) objects. */
export async function sameInBoth(cdk8s: (chart: Chart) => void, pulumi: () => void): Promise<KubeObject[]> {
  const out = await buildBoth(cdk8s, pulumi);
  expect(out.pulumi).toEqual(out.cdk8s);
  return out.cdk8s;
}

/** The message a call throws, or a marker saying it did not throw. */
export function thrownMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return '<did not throw>';
}
