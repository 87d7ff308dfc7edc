/**
 * Validates synthesized objects: built-in kinds against kubernetes-models' real Kubernetes schemas,
 * tensor-fusion.ai kinds against our generated CRD schemas (lib/api).
 */
import { KubeObject } from '../../lib/k8s/object';
import { API_VERSION } from '../../lib/model/group';

type ModelClass = new (data: unknown) => { validate(): void };

function modelClass(apiVersion: string, kind: string): ModelClass | undefined {
  const mod = require(`kubernetes-models/${apiVersion}`) as Record<string, unknown>;
  const cls = mod[kind];
  return typeof cls === 'function' ? (cls as ModelClass) : undefined;
}

/** Throws with the object's identity when a built-in object does not validate. Returns the kinds checked. */
export function validateBuiltIn(object: KubeObject): void {
  const Cls = modelClass(object.apiVersion, object.kind);
  if (!Cls) throw new Error(`no kubernetes-models class for ${object.apiVersion} ${object.kind}`);
  try {
    new Cls(object).validate();
  } catch (err) {
    throw new Error(`${object.kind}/${object.metadata?.name} is not valid: ${(err as Error).message}`);
  }
}

/** Validates every object; tensor-fusion.ai objects go through our own schemas. */
export function validateAll(objects: readonly KubeObject[]): void {
  for (const object of objects) {
    if (object.apiVersion === API_VERSION) {
      const { validateObject } = require('../../lib/api/validate') as {
        validateObject(o: unknown): { message: string }[];
      };
      const issues = validateObject(object);
      if (issues.length) throw new Error(`${object.kind}/${object.metadata.name}: ${issues.map((i) => i.message).join('; ')}`);
    } else if (object.apiVersion === 'monitoring.coreos.com/v1' || object.apiVersion.startsWith('cert-manager.io/')) {
      // Third-party kinds have no schema in kubernetes-models; their shape is asserted by their own tests.
    } else {
      validateBuiltIn(object);
    }
  }
}
