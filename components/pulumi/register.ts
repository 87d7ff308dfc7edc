import * as pulumi from '@pulumi/pulumi';
import * as k8s from '@pulumi/kubernetes';
import { KubeObject } from '../../lib/k8s/object';

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
export function registerObjects(prefix: string, objects: readonly KubeObject[], opts: pulumi.CustomResourceOptions): pulumi.CustomResource[] {
  return objects.map((object) => {
    const name = objects.length === 1 ? prefix : `${prefix}-${object.kind.toLowerCase()}-${object.metadata.namespace ? `${object.metadata.namespace}-` : ''}${object.metadata.name}`;
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
