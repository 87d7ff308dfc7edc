/**
 * The one polling helper of the tests. `eventually` retries a check that throws (an `expect`) and
 * rethrows its last failure; `waitFor` is the same loop for a yes/no check, failing with what it
 * waited for, and at once when the process it waits on exits.
 */

/** Thrown by a check to stop polling at once, whatever time is left. */
export class GiveUp extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` (real time) until it returns without throwing; rethrows the last failure after `ms`, a {@link GiveUp} at once. */
export async function eventually(check: () => void | Promise<void>, ms = 10_000, intervalMs = 25): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (err instanceof GiveUp || Date.now() > until) throw err;
      await sleep(intervalMs);
    }
  }
}

/** A process a wait can end on: it has a name, an exit and a log tail. */
export interface Exiting {
  readonly name: string;
  readonly exited: Promise<unknown>;
  tail(): string;
}

/** Polls `check` every `intervalMs` until it returns true (a rejection counts as false), failing after `timeoutMs` with `what`, or when `died` exits. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 100,
  died?: Exiting,
): Promise<void> {
  let dead = false;
  void died?.exited.then(() => {
    dead = true;
  });
  await eventually(
    async () => {
      if (await check().catch(() => false)) return;
      if (dead) throw new GiveUp(`${what}: ${died!.name} exited\n${died!.tail()}`);
      throw new Error(`${what}: not ready after ${timeoutMs} ms${died ? `\n${died.tail()}` : ''}`);
    },
    timeoutMs,
    intervalMs,
  );
}
