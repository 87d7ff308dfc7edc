import { FieldIssue } from '../errors';
import { checkDnsLabel, checkLabelValue, checkObjectName } from '../names';

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

/** Validates name, namespace (a DNS-1123 label, as Kubernetes requires) and label values. */
export function checkMeta(
  name: string,
  props: NamespacedMetaProps,
  checkName: (field: string, value: unknown) => FieldIssue | undefined = checkObjectName,
): FieldIssue[] {
  const issues = [checkName('name', name), props.namespace === undefined ? undefined : checkDnsLabel('namespace', props.namespace)];
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
