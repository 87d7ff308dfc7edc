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

/** A fresh mock monitor: each program captured is a stack of its own (names claimed in one do not leak into the next). */
function install(): void {
  void pulumi.runtime.setMocks(
    {
      newResource(args) {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs });
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
export async function capture(program: () => void | Promise<void>): Promise<Registered[]> {
  install();
  const start = registered.length;
  await program();
  // Registration is asynchronous: wait until the queue of registrations stops growing.
  let last = -1;
  while (last !== registered.length) {
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
