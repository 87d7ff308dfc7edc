/**
 * A task that runs one at a time: a call while it runs returns that run and asks for one more after
 * it, so no request is lost and no two runs overlap (a second caller's reason may have come after the
 * running one read its state). For work that several events ask for: the device plugin's check of
 * its sockets, the agent's readiness pass.
 */
export class Serial {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly task: () => Promise<void>) {}

  /** Runs the task, or joins the run in flight and asks for one more after it. */
  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.task().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.run().catch(() => undefined); // its failure is the task's to report
      }
    });
    return this.running;
  }

  /** Resolves once no run is in flight, whatever they ended with. */
  async settled(): Promise<void> {
    while (this.running) await this.running.catch(() => undefined);
  }
}
