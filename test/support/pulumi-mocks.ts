/**
 * Runs a Pulumi program under `pulumi.runtime.setMocks` and captures what every resource registered,
 * so tests can compare Pulumi components with their cdk8s twins.
 */
import * as pulumi from '@pulumi/pulumi';

export interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}

const registered: Registered[] = [];

/** The reads of existing objects (`<Kind>.get`), in order. */
export const reads: { type: string; name: string; id: string }[] = [];

/** When each registration started and ended, in order (`start <name>`, `done <name>`). */
export const registrationLog: string[] = [];

/**
 * A fresh mock monitor: each program captured is a stack of its own (names claimed in one do not leak
 * into the next). Registrations of the types in `slow` take `slowMs`, as a real API server's do, so
 * that what depends on them is seen to wait.
 */
function install(slow: readonly string[] = [], slowMs = 0): void {
  void pulumi.runtime.setMocks(
    {
      async newResource(args) {
        // A read (`Node.get`) declares nothing: it is logged apart, and finds the object it names.
        if (args.id !== undefined && args.id !== '') {
          reads.push({ type: args.type, name: args.name, id: args.id });
          registrationLog.push(`start read ${args.name}`);
          if (slow.includes(args.type)) await new Promise((r) => setTimeout(r, slowMs));
          registrationLog.push(`done read ${args.name}`);
          return { id: args.id, state: { metadata: { name: args.id } } };
        }
        registered.push({ type: args.type, name: args.name, inputs: args.inputs });
        registrationLog.push(`start ${args.name}`);
        if (slow.includes(args.type)) await new Promise((r) => setTimeout(r, slowMs));
        registrationLog.push(`done ${args.name}`);
        return { id: `${args.name}-id`, state: args.inputs };
      },
      call(args) {
        return args.inputs;
      },
    },
    'project',
    'stack',
    false,
  );
}

/** Runs `program` (which creates resources) and returns what it registered, components excluded. */
export async function capture(program: () => void | Promise<void>, slow: readonly string[] = [], slowMs = 0): Promise<Registered[]> {
  install(slow, slowMs);
  const start = registered.length;
  await program();
  // Registration is asynchronous: wait until the queue of registrations stops growing.
  const inFlight = () =>
    registrationLog.filter((l) => l.startsWith('start ')).length - registrationLog.filter((l) => l.startsWith('done ')).length;
  let last = -1;
  while (last !== registered.length || inFlight() > 0) {
    last = registered.length;
    await new Promise((r) => setTimeout(r, 20));
  }
  return registered.slice(start).filter((r) => !r.type.startsWith('tensor-fusion:') && !r.type.startsWith('pulumi:providers:'));
}

/** The Kubernetes objects among captured registrations, as plain JSON (undefined fields dropped). */
export function objectsOf(captured: readonly Registered[]): Record<string, unknown>[] {
  return captured.map((r) => JSON.parse(JSON.stringify(r.inputs)) as Record<string, unknown>);
}

/** The value an Output resolves to (under mocks every Output resolves). */
export function valueOf<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply(resolve));
}
