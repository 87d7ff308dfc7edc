/**
 * Walks a plain JSON schema (as in a CRD) by field path. Used to check that our CRDs are structural
 * and to compare our schemas with the upstream ones.
 */
import type { JsonSchema } from '../../lib/api/crd';

/**
 * Every schema node with its field path: `spec.a`, `spec.list[]` for list items, `spec.map{}` for map
 * values. The root has path `''`. Nodes under `anyOf` branches are not visited (they only carry the
 * int-or-string alternatives).
 */
export function schemaNodes(schema: JsonSchema, path = ''): Array<[string, JsonSchema]> {
  const out: Array<[string, JsonSchema]> = [[path, schema]];
  const join = (key: string) => (path === '' ? key : `${path}.${key}`);
  for (const [key, value] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
    out.push(...schemaNodes(value, join(key)));
  }
  if (schema.items && typeof schema.items === 'object') out.push(...schemaNodes(schema.items as JsonSchema, `${path}[]`));
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    out.push(...schemaNodes(schema.additionalProperties as JsonSchema, `${path}{}`));
  }
  return out;
}

/** The type of a node in words used for comparison: its `type`, or `int-or-string`. */
export function nodeType(node: JsonSchema): string | undefined {
  if (node['x-kubernetes-int-or-string'] === true) return 'int-or-string';
  return typeof node.type === 'string' ? node.type : undefined;
}

/**
 * Why a node is not structural in the sense of Kubernetes CRDs (empty when it is): every node
 * typed (or int-or-string, or a preserved embedded object), no `additionalProperties` beside
 * `properties`, `anyOf` only for int-or-string, and no keywords a CRD does not accept.
 */
export function structuralProblems(path: string, node: JsonSchema): string[] {
  const at = path === '' ? '<root>' : path;
  const problems: string[] = [];
  const intOrString = node['x-kubernetes-int-or-string'] === true;
  if (!intOrString && typeof node.type !== 'string') problems.push(`${at}: no type`);
  if (node.properties && node.additionalProperties !== undefined) problems.push(`${at}: additionalProperties beside properties`);
  if (node.anyOf && !intOrString) problems.push(`${at}: anyOf outside an int-or-string node`);
  if (intOrString && JSON.stringify(node.anyOf) !== JSON.stringify([{ type: 'integer' }, { type: 'string' }])) {
    problems.push(`${at}: int-or-string without anyOf integer/string`);
  }
  if (node['x-kubernetes-preserve-unknown-fields'] === true && node.type !== 'object') {
    problems.push(`${at}: preserve-unknown-fields on a non-object`);
  }
  for (const key of ['$id', '$schema', 'const', 'patternProperties', 'oneOf', 'allOf', 'not', '$ref']) {
    if (key in node) problems.push(`${at}: keyword ${key} is not allowed in a structural CRD`);
  }
  for (const key of Object.keys(node)) if (key.startsWith('x-tf-')) problems.push(`${at}: internal keyword ${key}`);
  return problems;
}
