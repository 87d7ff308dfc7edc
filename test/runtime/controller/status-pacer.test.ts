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

  test('peek answers the next slot without booking it: an echo of a write does not push the next event back', () => {
    const { clock, pacer: p } = pacer();
    p.delay('node/a');
    // The reconcile at 1 s writes; its echo comes back at once.
    clock.t = 1_010;
    expect(p.peek('node/a')).toBe(4_990);
    // A pod event long after: the short delay, as for a quiet key (booked, the echo would have made it 3,500 ms).
    clock.t = 7_500;
    expect(p.delay('node/a')).toBe(1_000);
    // While that is pending, peek answers its time; a key never booked gets the short delay.
    clock.t = 8_000;
    expect(p.peek('node/a')).toBe(500);
    expect(p.peek('node/b')).toBe(1_000);
    expect(p.size).toBe(1);
  });

  test('once many keys are kept, those whose last reconcile is an interval old are forgotten, and only those', () => {
    const { clock, pacer: p } = pacer();
    for (let i = 0; i < 1_023; i++) p.delay(`node/${i}`);
    clock.t = 2_000;
    p.delay('node/recent');
    expect(p.size).toBe(1_024);
    clock.t = 1_000 + INTERVAL;
    p.delay('node/new');
    expect(p.size).toBe(2);
    // The recent key is still paced from its reconcile at 3 s.
    expect(p.delay('node/recent')).toBe(3_000 + INTERVAL - clock.t);
  });
});
