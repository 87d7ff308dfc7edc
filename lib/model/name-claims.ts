import { FieldIssue, fieldIssue } from './errors';
import { isClusterScoped } from './kind-scope';
import { KubeObject } from '../k8s/object';

/**
 * The names of the objects the components of one cdk8s app or one Pulumi stack write, with the
 * component that claimed each: two components writing one object (two pools of one name) would
 * otherwise overwrite each other without error. One home for the key and the message of both sides.
 */
export class NameClaims {
  /** `<group>/<kind>/<namespace>/<name>` -> the component that claimed it. */
  private readonly owners = new Map<string, string>();

  /**
   * @param unit what the claims cover, in the message: `app` (cdk8s) or `stack` (Pulumi)
   * @param verb what the owner does with the object, in the message: `synthesizes` or `registers`
   */
  constructor(
    private readonly unit: string,
    private readonly verb: string,
  ) {}

  /**
   * Claims the names of `objects` for `owner`, unless one is already claimed: then nothing is
   * claimed and an issue per taken name is returned, naming the kind, the name and the owner.
   * @param defaultNamespace namespace of namespaced objects that set none (a cdk8s chart's)
   */
  claim(owner: string, objects: readonly KubeObject[], defaultNamespace?: string): FieldIssue[] {
    const keys = objects.map((o) => {
      const namespace = isClusterScoped(o.apiVersion, o.kind) ? '' : (o.metadata.namespace ?? defaultNamespace ?? '');
      return `${o.apiVersion.split('/').slice(0, -1).join('/')}/${o.kind}/${namespace}/${o.metadata.name}`;
    });
    const issues = objects.flatMap((o, i) => {
      const taken = this.owners.get(keys[i]);
      return taken === undefined
        ? []
        : [
            fieldIssue(
              'name',
              o.metadata.name,
              `a name no other ${o.kind} of this ${this.unit} has (${taken} already ${this.verb} one): set another name`,
            ),
          ];
    });
    if (issues.length === 0) keys.forEach((key) => this.owners.set(key, owner));
    return issues;
  }
}
