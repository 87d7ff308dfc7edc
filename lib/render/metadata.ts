import { FieldIssue, fieldIssue } from '../model/errors';
import { checkDnsLabel, checkLabelValue, checkObjectName } from '../model/name-checks';

/** Metadata props shared by every component that renders one object of ours. */
export interface ObjectMetaProps {
  /**
   * Name of the object.
   * @default the construct id (cdk8s) or the resource name (Pulumi)
   */
  readonly name?: string;
  /** Labels of the object. @default {} */
  readonly labels?: Readonly<Record<string, string>>;
  /** Annotations of the object. @default {} */
  readonly annotations?: Readonly<Record<string, string>>;
}

/** Namespaced objects also take a namespace. */
export interface NamespacedMetaProps extends ObjectMetaProps {
  /**
   * Namespace of the object; a WorkloadProfile must be in the namespace of the pods that use it.
   * @default the chart's namespace (cdk8s) or the provider's default namespace (Pulumi)
   */
  readonly namespace?: string;
}

/** How a component calls a renderer: the prefix of its messages, and whether the name is its id. */
export interface RenderContext {
  /** Prefix of validation messages, e.g. `GpuPool default-pool`. @default `<Kind> <name>` */
  readonly context?: string;
  /** The name was not set and defaults to the construct id / resource name. @default false */
  readonly nameFromId?: boolean;
}

/** A name made of an id the way cdk8s makes DNS labels: lowercase, other characters as '-'. */
function suggestName(id: string): string {
  return (
    id
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'name'
  );
}

/**
 * Validates name, namespace (a DNS-1123 label, as Kubernetes requires) and label values. When the
 * name came from the id, a bad one is reported with the fix: set `name`.
 */
export function checkMeta(
  name: string,
  props: NamespacedMetaProps,
  checkName: (field: string, value: unknown) => FieldIssue | undefined = checkObjectName,
  nameFromId = false,
): FieldIssue[] {
  let nameIssue = checkName('name', name);
  if (nameIssue && nameFromId) {
    nameIssue = fieldIssue(
      'name',
      name,
      `${nameIssue.expected}; name is not set, so the id was used: set name, e.g. name: "${suggestName(name)}"`,
    );
  }
  const issues = [nameIssue, props.namespace === undefined ? undefined : checkDnsLabel('namespace', props.namespace)];
  for (const [key, value] of Object.entries(props.labels ?? {})) issues.push(checkLabelValue(`labels["${key}"]`, value));
  return issues.filter((i): i is FieldIssue => i !== undefined);
}

/** Builds `metadata`, leaving out empty maps so the YAML stays minimal. */
export function renderMeta(name: string, props: NamespacedMetaProps, extraAnnotations: Record<string, string> = {}) {
  const annotations = { ...props.annotations, ...extraAnnotations };
  return {
    name,
    ...(props.namespace !== undefined ? { namespace: props.namespace } : {}),
    ...(props.labels && Object.keys(props.labels).length ? { labels: { ...props.labels } } : {}),
    ...(Object.keys(annotations).length ? { annotations } : {}),
  };
}
