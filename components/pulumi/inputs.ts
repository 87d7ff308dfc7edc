import * as pulumi from '@pulumi/pulumi';
import './run-error';
import { withContext } from '../../lib/render/error-context';

/**
 * A plain props type with `pulumi.Input` at every level, as pulumi-eks and awsx type their args: any
 * value, list element or field may be an Output or a Promise.
 */
export type Inputs<T> = unknown extends T
  ? T
  : [T] extends [string | number | boolean | null | undefined]
    ? pulumi.Input<T>
    : T extends readonly (infer U)[]
      ? pulumi.Input<readonly Inputs<U>[]>
      : pulumi.Input<{ [K in keyof T]: Inputs<T[K]> }>;

/** The args of a component: each prop of `P` as {@link Inputs}. */
export type InputArgs<P> = { [K in keyof P]: Inputs<P[K]> };

/** Whether a value holds Outputs or Promises somewhere inside (known only at deployment time). */
export function hasUnknowns(value: unknown): boolean {
  if (pulumi.Output.isInstance(value) || value instanceof Promise) return true;
  if (Array.isArray(value)) return value.some(hasUnknowns);
  if (value && typeof value === 'object') return Object.values(value).some(hasUnknowns);
  return false;
}

/**
 * The failure of args known only at preview, reported once against the component. Pulumi reports an
 * error object once however many values derived from it fail, and shows a ResourceError without its
 * stack; but it prefixes `error serializing property "<name>"` to the message of the error in place
 * for every property it passes through, so the message is fixed here to stay as the component wrote it.
 */
export class InputError extends pulumi.ResourceError {
  constructor(message: string, resource: pulumi.Resource | undefined) {
    super(message, resource, true);
    Object.defineProperty(this, 'message', { get: () => message, set: () => undefined });
  }
}

/** The component an Output-held failure is reported against, set once it exists. */
export interface Owner {
  resource?: pulumi.Resource;
}

/**
 * Runs `render` on plain args at once (so bad plain values throw at the constructor, before anything
 * is registered), or on the resolved args when they hold Outputs (so bad values fail at preview, as
 * one {@link InputError} on `owner`). Either way the message starts with `context`.
 */
export function renderArgs<P, T>(args: InputArgs<P>, context: string, owner: Owner, render: (props: P) => T): T | pulumi.Output<T> {
  if (!hasUnknowns(args)) return withContext(context, () => render(args as P));
  return pulumi.output(args).apply((plain) => {
    try {
      return withContext(context, () => render(plain as P));
    } catch (err) {
      throw new InputError((err as Error).message, owner.resource);
    }
  });
}

/** A part of a rendered value as an Output: read at once from a plain value (no deep wrapping). */
export function outputOf<T, R>(value: T | pulumi.Output<T>, pick: (value: T) => R): pulumi.Output<R> {
  return pulumi.Output.isInstance(value)
    ? value.apply((v) => pick(v as T))
    : (pulumi.output(pick(value as T) as pulumi.Input<R>) as pulumi.Output<R>);
}
