import { Chart, ChartProps, Testing } from 'cdk8s';
import { KubeObject } from '../../lib/k8s/object';

/** Builds a chart with `build` and returns its synthesized objects. */
export function synthChart(build: (chart: Chart) => void, props?: ChartProps): KubeObject[] {
  const chart = new Chart(Testing.app(), 'test', props);
  build(chart);
  return Testing.synth(chart) as KubeObject[];
}

/** Orders objects by kind, namespace and name so two frameworks' outputs compare as sets. */
export function sortObjects<T extends { kind?: unknown; metadata?: unknown }>(objects: readonly T[]): T[] {
  const key = (o: T) => {
    const m = (o.metadata ?? {}) as { name?: string; namespace?: string };
    return `${String(o.kind)}/${m.namespace ?? ''}/${m.name ?? ''}`;
  };
  return [...objects].sort((a, b) => key(a).localeCompare(key(b)));
}
