/** The plan for the T9k xgn taint on a node. */
import { planXgnTaint } from '../../../lib/runtime/reconcile/xgn-taint';
import { T9K, XGN_TAINT } from '../../../lib/t9k/keys';

describe('xgn taint plan', () => {
  const node = (labels: Record<string, string>, taints?: unknown[]) =>
    ({ metadata: { name: 'n', resourceVersion: '7', labels }, spec: taints ? { taints } : {} }) as never;
  const other = { key: 'example.com/x', value: 'y', effect: 'NoExecute' };

  test('adds the taint after a resourceVersion test, keeping other taints', () => {
    expect(planXgnTaint(node({ [T9K.allocModeLabel]: 'xgn' }, [other]))).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'add', path: '/spec/taints/-', value: { ...XGN_TAINT } },
    ]);
    expect(planXgnTaint(node({ [T9K.allocModeLabel]: 'xgn' }))).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'add', path: '/spec/taints', value: [{ ...XGN_TAINT }] },
    ]);
  });

  test('is a no-op when in place, and removes only our key when the label goes', () => {
    expect(planXgnTaint(node({ [T9K.allocModeLabel]: 'xgn' }, [other, { ...XGN_TAINT }]))).toBeUndefined();
    expect(planXgnTaint(node({ [T9K.allocModeLabel]: 'sgn' }, [{ ...XGN_TAINT }, other]))).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'remove', path: '/spec/taints/0' },
    ]);
    expect(planXgnTaint(node({}, [other]))).toBeUndefined();
  });
});
