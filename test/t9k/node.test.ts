import { ValidationError } from '../../lib/model/errors';
import { T9K, XGN_TAINT } from '../../lib/t9k/keys';
import { T9kNodeOptions, checkT9kNodeOptions, t9kNodeLabels, t9kRequiredTaints } from '../../lib/t9k';

function messages(options: unknown): string[] {
  return checkT9kNodeOptions(options as T9kNodeOptions).map((i) => i.message);
}

describe('t9kNodeLabels', () => {
  it('labels NVIDIA nodes with the accelerator and the allocation mode (seed 004)', () => {
    expect(t9kNodeLabels({ accelerator: 'nvidia-gpu', allocMode: 'xgn' })).toEqual({
      'sched.tensorstack.dev/accelerator': 'nvidia-gpu',
      'sched.tensorstack.dev/node-alloc-mode': 'xgn',
    });
    expect(t9kNodeLabels({ accelerator: 'nvidia-gpu', allocMode: 'sgn' })).toEqual({
      'sched.tensorstack.dev/accelerator': 'nvidia-gpu',
      'sched.tensorstack.dev/node-alloc-mode': 'sgn',
    });
  });

  it.each(['amd-gpu', 'huawei-npu'] as const)('labels %s nodes with the accelerator only', (accelerator) => {
    expect(t9kNodeLabels({ accelerator })).toEqual({ 'sched.tensorstack.dev/accelerator': accelerator });
  });

  it('rejects an unknown accelerator', () => {
    expect(messages({ accelerator: 'intel-gpu' })).toEqual([
      't9k.accelerator: got "intel-gpu", expected one of nvidia-gpu, amd-gpu, huawei-npu',
    ]);
    expect(messages({})).toEqual(['t9k.accelerator: got nothing, expected one of nvidia-gpu, amd-gpu, huawei-npu']);
  });

  it('requires an allocation mode on NVIDIA nodes', () => {
    expect(messages({ accelerator: 'nvidia-gpu' })).toEqual([
      't9k.allocMode: got nothing, expected one of xgn, sgn for accelerator "nvidia-gpu"',
    ]);
    expect(messages({ accelerator: 'nvidia-gpu', allocMode: 'shared' })).toEqual(['t9k.allocMode: got "shared", expected one of xgn, sgn']);
  });

  it.each([
    ['amd-gpu', 'xgn'],
    ['huawei-npu', 'sgn'],
  ])('rejects allocMode on %s nodes (%s)', (accelerator, allocMode) => {
    expect(messages({ accelerator, allocMode })).toEqual([
      `t9k.allocMode: got "${allocMode}", expected nothing for accelerator "${accelerator}" (xgn and sgn apply to nvidia-gpu only)`,
    ]);
  });

  it('throws a ValidationError with the same message', () => {
    expect(() => t9kNodeLabels({ accelerator: 'amd-gpu', allocMode: 'xgn' })).toThrow(
      new ValidationError(checkT9kNodeOptions({ accelerator: 'amd-gpu', allocMode: 'xgn' })),
    );
    expect(() => t9kNodeLabels({ accelerator: 'amd-gpu', allocMode: 'xgn' })).toThrow(
      't9k.allocMode: got "xgn", expected nothing for accelerator "amd-gpu" (xgn and sgn apply to nvidia-gpu only)',
    );
  });
});

describe('t9kRequiredTaints', () => {
  it('asks for the xgn taint on xgn nodes only', () => {
    expect(t9kRequiredTaints(t9kNodeLabels({ accelerator: 'nvidia-gpu', allocMode: 'xgn' }))).toEqual([
      { key: 'sched.tensorstack.dev/xgn-mode', value: 'true', effect: 'NoSchedule' },
    ]);
    expect(t9kRequiredTaints(t9kNodeLabels({ accelerator: 'nvidia-gpu', allocMode: 'sgn' }))).toEqual([]);
    expect(t9kRequiredTaints(t9kNodeLabels({ accelerator: 'amd-gpu' }))).toEqual([]);
    expect(t9kRequiredTaints(undefined)).toEqual([]);
  });

  it('returns a copy the caller may change', () => {
    const [taint] = t9kRequiredTaints({ [T9K.allocModeLabel]: 'xgn' });
    taint.value = 'false';
    expect(XGN_TAINT.value).toBe('true');
  });
});
