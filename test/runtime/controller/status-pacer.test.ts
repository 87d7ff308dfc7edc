/**
 * The pacing of status reconciles after pod events: a short delay for a quiet object, an interval
 * between reconciles while its pods keep changing.
 */
import { StatusPacer } from '../../../lib/runtime/controller/status-pacer';

const DELAY = 1_000;
const INTERVAL = 5_000;

function pacer() {
  const clock = { t: 0, now: () => clock.t };
  return { clock, pacer: new StatusPacer(clock, DELAY, INTERVAL) };
}

describe('StatusPacer', () => {
  test('a quiet key waits the delay; events while it is pending keep its time', () => {
    const { clock, pacer: p } = pacer();
    expect(p.delay('node/a')).toBe(1_000);
    clock.t = 400;
    expect(p.delay('node/a')).toBe(600);
    clock.t = 999;
    expect(p.delay('node/a')).toBe(1);
  });

  test('while events keep coming, reconciles of one key are an interval apart', () => {
    const { clock, pacer: p } = pacer();
    const due: number[] = [];
    // An event every 100 ms for 12 s: reconciles at 1 s, then every 5 s after it.
    for (clock.t = 0; clock.t < 12_000; clock.t += 100) {
      const at = clock.t + p.delay('node/a');
      if (due[due.length - 1] !== at) due.push(at);
    }
    expect(due).toEqual([1_000, 6_000, 11_000, 16_000]);
  });

  test('a key quiet for an interval is back to the short delay', () => {
    const { clock, pacer: p } = pacer();
    p.delay('node/a');
    clock.t = 1_000;
    expect(p.delay('node/a')).toBe(5_000);
    clock.t = 11_000;
    expect(p.delay('node/a')).toBe(1_000);
    clock.t = 12_500;
    expect(p.delay('node/a')).toBe(4_500);
  });

  test('keys are paced apart from each other', () => {
    const { clock, pacer: p } = pacer();
    p.delay('node/a');
    clock.t = 1_000;
    expect(p.delay('node/a')).toBe(5_000);
    expect(p.delay('node/b')).toBe(1_000);
  });

  test('keys whose last reconcile is an interval old are forgotten once many are kept', () => {
    const { clock, pacer: p } = pacer();
    for (let i = 0; i < 1_024; i++) p.delay(`node/${i}`);
    expect(p.size).toBe(1_024);
    clock.t = 1_000 + INTERVAL;
    p.delay('node/new');
    expect(p.size).toBe(1);
    // The forgotten keys are quiet keys again.
    expect(p.delay('node/7')).toBe(1_000);
  });
});
