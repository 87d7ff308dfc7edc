import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { throwIfInvalid, ValidationError } from '../../lib/model/errors';
import { KubeObject } from '../../lib/k8s/object';
import { NameClaims } from '../../lib/model/name-claims';
import { InputError } from './inputs';

type ResourceClass = new (name: string, args: object, opts?: pulumi.CustomResourceOptions) => pulumi.CustomResource;

/** Finds the typed @pulumi/kubernetes class for a built-in kind (`apps/v1` Deployment -> k8s.apps.v1.Deployment). */
function typedClass(apiVersion: string, kind: string): ResourceClass | undefined {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['core', apiVersion];
  const module = (k8s as unknown as Record<string, Record<string, Record<string, unknown>> | undefined>)[group.split('.')[0]];
  const cls = module?.[version]?.[kind];
  return typeof cls === 'function' ? (cls as ResourceClass) : undefined;
}

/**
 * Registers plain objects from lib/render as children of a component: built-in kinds through their
 * typed classes, our CRD kinds through CustomResource. Resource names are prefixed with the
 * component's name because Pulumi URNs do not include the parent's name.
 */
export function registerObjects(
  prefix: string,
  objects: readonly KubeObject[],
  opts: pulumi.CustomResourceOptions,
): pulumi.CustomResource[] {
  return objects.map((object) => {
    const name =
      objects.length === 1
        ? prefix
        : `${prefix}-${object.kind.toLowerCase()}-${object.metadata.namespace ? `${object.metadata.namespace}-` : ''}${object.metadata.name}`;
    const Cls = typedClass(object.apiVersion, object.kind) ?? (k8s.apiextensions.CustomResource as unknown as ResourceClass);
    return new Cls(name, object, opts);
  });
}

/**
 * Registers one object that may still be an Output (rendered from args holding Outputs) with the
 * resource class `Cls` (default: CustomResource). Its apiVersion and kind are fixed by the component,
 * so they are known now; every other field is read from the one rendered Output, so a bad value fails
 * the resource with one error.
 */
export function registerObject(
  name: string,
  object: KubeObject | pulumi.Output<KubeObject>,
  type: Pick<KubeObject, 'apiVersion' | 'kind'>,
  fields: readonly string[],
  opts: pulumi.CustomResourceOptions,
  Cls: ResourceClass = k8s.apiextensions.CustomResource as unknown as ResourceClass,
): pulumi.CustomResource {
  if (!pulumi.Output.isInstance(object)) return new Cls(name, object, opts);
  const args: Record<string, unknown> = { ...type };
  for (const field of fields) args[field] = object.apply((o) => (o as unknown as Record<string, unknown>)[field]);
  return new Cls(name, args, opts);
}

/**
 * Names claimed per program run (keyed by its resource monitor: one per `pulumi up`, per Automation
 * API run, per `setMocks`) and per cluster (keyed by the Kubernetes provider the children get).
 */
const claimed = new WeakMap<object, WeakMap<object, NameClaims>>();
/** Keys when there is no monitor (outside a program) or no explicit provider (the default one). */
const NONE = {};

/**
 * Refuses an object whose kind, namespace and name another component of the same stack and cluster
 * already registers (two GpuPools with the same `name` would otherwise fight over one GPUPool), then
 * claims the names for `context` (`GpuPool <name>`). Plain objects are checked at once and throw a
 * ValidationError; an Output is returned checked (it fails with one InputError on `component`), so
 * register what this returns. Called after `super()`: the provider is known only then.
 */
export function claimNames<T extends KubeObject | readonly KubeObject[]>(
  component: pulumi.Resource,
  context: string,
  objects: T | pulumi.Output<T>,
): T | pulumi.Output<T> {
  const monitor = pulumi.runtime.getMonitor() ?? NONE;
  const byProvider = claimed.get(monitor) ?? new WeakMap<object, NameClaims>();
  claimed.set(monitor, byProvider);
  const provider = component.getProvider('kubernetes::') ?? NONE;
  const claims = byProvider.get(provider) ?? new NameClaims('stack', 'registers');
  byProvider.set(provider, claims);
  const claim = (o: T) => throwIfInvalid(claims.claim(context, ([] as KubeObject[]).concat(o)), context);
  if (!pulumi.Output.isInstance(objects)) {
    claim(objects as T);
    return objects;
  }
  return (objects as pulumi.Output<T>).apply((o) => {
    try {
      claim(o as T);
    } catch (err) {
      throw err instanceof ValidationError ? new InputError(err.message, component) : err;
    }
    return o;
  }) as pulumi.Output<T>;
}
