import { XGN_TAINT } from '../../lib/t9k/keys';
import { tolerates, tolerationFor } from '../../lib/k8s/toleration';

describe('tolerates', () => {
  it.each([
    [{ key: XGN_TAINT.key, operator: 'Equal', value: 'true', effect: 'NoSchedule' }, true],
    [{ key: XGN_TAINT.key, value: 'true' }, true],
    [{ key: XGN_TAINT.key, operator: 'Exists' }, true],
    [{ operator: 'Exists' }, true],
    [{ operator: 'Exists', effect: 'NoExecute' }, false],
    [{ key: XGN_TAINT.key, value: 'false' }, false],
    [{ key: 'other', operator: 'Exists' }, false],
    [{ value: 'true' }, false],
  ])('%j -> %s', (toleration, expected) => {
    expect(tolerates(toleration, XGN_TAINT)).toBe(expected);
  });

  it('tolerationFor gives a toleration of exactly that taint', () => {
    expect(tolerationFor(XGN_TAINT)).toEqual({
      key: 'sched.tensorstack.dev/xgn-mode',
      operator: 'Equal',
      value: 'true',
      effect: 'NoSchedule',
    });
    expect(tolerates(tolerationFor(XGN_TAINT), XGN_TAINT)).toBe(true);
    expect(tolerates(tolerationFor(XGN_TAINT), { ...XGN_TAINT, key: 'x' })).toBe(false);
  });
});
