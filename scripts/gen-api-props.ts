/**
 * Writes lib/api/generated/api-props.ts (`npm run gen:api-props`): the spec schemas that component props expose,
 * as plain TypeScript interfaces whose members carry the schema's descriptions as TSDoc, with
 * `@default` and `@example` taken from the description and the format hint. One source (the TypeBox
 * schemas) for the CRDs, the validators and the editor docs; the shipped declarations then need no
 * TypeBox types. A test fails when the file is stale or differs in type from the schemas.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Conditions,
  EXPECTED_KEYWORD,
  GPUNodeSpec,
  GPUNodeStatus,
  GPUPoolSpec,
  GPUPoolStatus,
  GPUResourceQuotaSpec,
  GPUResourceQuotaStatus,
  GPUStatus,
  GpuResources,
  NodeSelector,
  TensorFusionWorkloadStatus,
  WorkloadProfileSpec,
} from '../lib/api';
import { JsonSchema, toPlainSchema } from '../lib/api/crd';

/**
 * The interfaces generated, with their schema: `<Schema>Props` for the spec fields component props
 * expose, `<Schema>Fields` for the rest of the objects (the schema files export them as the types of
 * their schemas, so `api.GPUPoolSpec` is documented too).
 */
const ROOTS: [string, JsonSchema][] = [
  ['WorkloadProfileSpecProps', toPlainSchema(WorkloadProfileSpec, true)],
  ['NodeSelectorProps', toPlainSchema(NodeSelector, true)],
  ['GpuResourcesFields', toPlainSchema(GpuResources, true)],
  ['GPUPoolSpecFields', toPlainSchema(GPUPoolSpec, true)],
  ['GPUPoolStatusFields', toPlainSchema(GPUPoolStatus, true)],
  ['GPUNodeSpecFields', toPlainSchema(GPUNodeSpec, true)],
  ['GPUNodeStatusFields', toPlainSchema(GPUNodeStatus, true)],
  ['GPUStatusFields', toPlainSchema(GPUStatus, true)],
  ['GPUResourceQuotaSpecFields', toPlainSchema(GPUResourceQuotaSpec, true)],
  ['GPUResourceQuotaStatusFields', toPlainSchema(GPUResourceQuotaStatus, true)],
  ['TensorFusionWorkloadStatusFields', toPlainSchema(TensorFusionWorkloadStatus, true)],
  ['ConditionFields', toPlainSchema(Conditions.items, true)],
];

/** `@default` from the words of a description ("Default 1.", "medium when unset", "Unset means X."). */
function defaultOf(description: string): string | undefined {
  const patterns = [
    /\bDefault (?:is )?([^.;]+)[.;]/,
    /;\s*([^;.]+?) when unset/i,
    /\bUnset means ([^.;]+)/i,
    /\b([\w-]+) \(the default\)/i,
    /\(default ([^)]+)\)/i,
  ];
  for (const pattern of patterns) {
    const match = description.match(pattern);
    if (match) return match[1].trim();
  }
  return undefined;
}

/** `@example` from "e.g. X" in the description, else from "such as X" in the format hint. */
function exampleOf(description: string, expected: string | undefined): string | undefined {
  const found = description.match(/e\.g\. ("[^"]+"|'[^']+'|[^\s,;)]+)/) ?? expected?.match(/such as ("[^"]+"|'[^']+'|[^\s,;)]+)/);
  return found ? `'${found[1].replace(/[.]$/, '').replace(/^['"]|['"]$/g, '')}'` : undefined;
}

function tsdoc(node: JsonSchema, optional: boolean, indent: string): string {
  const description = String(node.description ?? '').trim();
  const expected = node[EXPECTED_KEYWORD] as string | undefined;
  const lines = description ? [description] : [];
  if (expected && node.type === 'string' && !node.enum) lines.push(`Format: ${expected}.`);
  const example = exampleOf(description, expected);
  const fallback = optional ? 'unset' : undefined;
  const def = defaultOf(description) ?? fallback;
  if (def !== undefined) lines.push(`@default ${def}`);
  if (example !== undefined) lines.push(`@example ${example}`);
  if (lines.length === 0) return '';
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`).join('\n')}\n${indent} */\n`;
}

/** The generated type of each root schema (by its JSON), so a root met inside another is named, not repeated. */
const NAMED = new Map(ROOTS.map(([name, schema]) => [JSON.stringify(schema), name]));

/**
 * The TypeScript type of a schema node: another root by its name, nested objects inline with their
 * members documented.
 */
function typeOf(node: JsonSchema, indent: string): string {
  const named = NAMED.get(JSON.stringify(node));
  if (named !== undefined) return named;
  if (node['x-kubernetes-int-or-string'] === true) return 'string | number';
  if (Array.isArray(node.enum)) return node.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (node['x-kubernetes-preserve-unknown-fields'] === true) return 'Record<string, unknown>';
  switch (node.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array': {
      const item = typeOf(node.items as JsonSchema, indent);
      return item.includes('\n') || item.includes('|') ? `Array<${item}>` : `${item}[]`;
    }
    case 'object': {
      if (node.additionalProperties && typeof node.additionalProperties === 'object') {
        return `Record<string, ${typeOf(node.additionalProperties as JsonSchema, indent)}>`;
      }
      return `{\n${members(node, `${indent}  `)}${indent}}`;
    }
    default:
      throw new Error(`no TypeScript type for schema node ${JSON.stringify(node).slice(0, 80)}`);
  }
}

function members(node: JsonSchema, indent: string): string {
  const required = new Set((node.required as string[] | undefined) ?? []);
  return Object.entries((node.properties ?? {}) as Record<string, JsonSchema>)
    .map(([key, child]) => {
      const optional = !required.has(key);
      return `${tsdoc(child, optional, indent)}${indent}${key}${optional ? '?' : ''}: ${typeOf(child, indent)};\n`;
    })
    .join('');
}

/** The text of lib/api/generated/api-props.ts. */
export function apiPropsSource(): string {
  const header = `/**
 * Generated by \`npm run gen:api-props\` (scripts/gen-api-props.ts) from the TypeBox schemas of this
 * directory: do not edit. The fields of the objects (and of component props), documented for editors.
 */
`;
  const body = ROOTS.map(
    ([name, schema]) => `${tsdoc({ description: schema.description }, false, '')}export type ${name} = {\n${members(schema, '  ')}};\n`,
  );
  return `${header}\n${body.join('\n')}`;
}

export const API_PROPS_FILE = join(__dirname, '..', 'lib', 'api', 'generated', 'api-props.ts');

if (require.main === module) {
  writeFileSync(API_PROPS_FILE, apiPropsSource());
  console.log(`wrote ${API_PROPS_FILE}`);
}
