/** One run at a time, and a request that comes during a run is not lost. */
import { Serial } from '../../../lib/runtime/shared/serial';

test('calls during a run join it and ask for exactly one more run after it; runs never overlap', async () => {
  let active = 0;
  let most = 0;
  let runs = 0;
  const serial = new Serial(async () => {
    runs++;
    most = Math.max(most, ++active);
    await new Promise((r) => setTimeout(r, 20));
    active--;
  });
  const first = serial.run();
  const joined = [serial.run(), serial.run(), serial.run()];
  await Promise.all([first, ...joined]);
  await serial.settled();
  expect([runs, most]).toEqual([2, 1]);
  await serial.run();
  expect(runs).toBe(3);
});

test('a failing run rejects its callers, the follow-up still runs, and settled() waits it out', async () => {
  let runs = 0;
  const serial = new Serial(async () => {
    runs++;
    await new Promise((r) => setTimeout(r, 10));
    if (runs === 1) throw new Error('first fails');
  });
  const first = serial.run();
  const joined = serial.run();
  await expect(first).rejects.toThrow('first fails');
  await expect(joined).rejects.toThrow('first fails');
  await serial.settled();
  expect(runs).toBe(2);
});
