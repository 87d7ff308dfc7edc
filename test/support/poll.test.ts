/** The polling helper: what each form waits for, and how it fails. */
import { eventually, GiveUp, waitFor } from './poll';

test('eventually retries a throwing check until it passes, and rethrows its last failure after the time', async () => {
  let n = 0;
  await eventually(() => expect(++n).toBe(3), 1_000, 1);
  expect(n).toBe(3);
  await expect(eventually(() => expect('late').toBe('now'), 30, 5)).rejects.toThrow('expect(received).toBe(expected)');
});

test('a GiveUp ends the polling at once', async () => {
  let n = 0;
  const started = Date.now();
  await expect(
    eventually(() => {
      n++;
      throw new GiveUp('stop');
    }, 5_000),
  ).rejects.toThrow('stop');
  expect(n).toBe(1);
  expect(Date.now() - started).toBeLessThan(1_000);
});

test('waitFor takes a rejection as "not yet", and names what it waited for', async () => {
  let n = 0;
  await waitFor('three calls', async () => (++n === 1 ? Promise.reject(new Error('boom')) : n >= 3), 1_000, 1);
  expect(n).toBe(3);
  await expect(waitFor('never', async () => false, 30, 5)).rejects.toThrow('never: not ready after 30 ms');
});

test('waitFor fails at once when the process it waits on exits, with its log tail', async () => {
  const died = { name: 'etcd', exited: Promise.resolve(1), tail: () => 'panic: disk full' };
  const started = Date.now();
  await expect(waitFor('etcd ready', async () => false, 5_000, 5, died)).rejects.toThrow('etcd ready: etcd exited\npanic: disk full');
  expect(Date.now() - started).toBeLessThan(1_000);
});
