import { GROWTH_PRIORITY_CLASS, qosPriorityClassName } from '../../../lib/contract/object-names';
import { renderController } from '../../../lib/render/controller';
import { QOS_LEVELS } from '../../../lib/model/rules';
import { FAKE_BUNDLE, Json } from './fixtures';

describe('QoS PriorityClasses', () => {
  const all = renderController({}, FAKE_BUNDLE).filter((o) => o.kind === 'PriorityClass') as Json[];
  const classes = all.filter((c) => c.metadata.name !== GROWTH_PRIORITY_CLASS.name);

  it('has one class per QoS level, named as the webhook names it, with values increasing with the level', () => {
    expect(classes.map((c) => c.metadata.name)).toEqual(QOS_LEVELS.map(qosPriorityClassName));
    expect(classes.map((c) => c.metadata.name)).toEqual([
      'tensor-fusion-low',
      'tensor-fusion-medium',
      'tensor-fusion-high',
      'tensor-fusion-critical',
    ]);
    const values = classes.map((c) => c.value as number);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
    // User-defined classes must stay at or below one billion (above is reserved for system classes).
    for (const v of values) expect(v).toBeLessThanOrEqual(1_000_000_000);
  });

  it('orders the queue only: never preempts, never the default, and says so', () => {
    for (const c of classes) {
      expect(c.apiVersion).toBe('scheduling.k8s.io/v1');
      expect(c.preemptionPolicy).toBe('Never');
      expect(c.globalDefault).toBe(false);
      expect(c.metadata.namespace).toBeUndefined();
      expect(c.description).toContain('placed before');
      expect(c.description).toContain('no pod is evicted');
    }
  });
});

describe("the growth placeholders' PriorityClass", () => {
  const [growth] = renderController({}, FAKE_BUNDLE).filter((o) => o.metadata.name === GROWTH_PRIORITY_CLASS.name) as Json[];

  it("is below every pod, at cluster-autoscaler's expendable cutoff, never preempts and is never the default", () => {
    expect(growth).toMatchObject({ kind: 'PriorityClass', value: -10, preemptionPolicy: 'Never', globalDefault: false });
  });
});
