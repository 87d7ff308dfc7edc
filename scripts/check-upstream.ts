/**
 * Wire-compatibility check against the upstream TensorFusion CRDs (reference data, read from the
 * directory given on the command line, never copied):
 *   npm run check:upstream -- <dir-with-upstream-crd-yaml>
 * 1. validates the sample objects of test/support/api-examples.ts against each upstream openAPIV3Schema;
 * 2. for every field path present in both schemas, checks that type, format, enum and bounds agree
 *    (ours may be narrower, never wider);
 * 3. lists our extension fields (absent upstream) and warns about fields upstream requires but we
 *    do not.
 * Prints PASS/FAIL per kind and exits 1 on any failure.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { crdFileName, JsonSchema, KIND_NAMES, KINDS, KindName, toPlainSchema } from '../lib/api';
import { exampleObjects } from '../test/support/api-examples';
import { nodeType, schemaNodes } from '../test/support/schema-walk';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: npm run check:upstream -- <upstream-crd-dir>');
  process.exit(2);
}

// x-kubernetes-* keywords are annotations for Ajv; CEL rules (x-kubernetes-validations) are not
// evaluated, and none of them concern fields we set.
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);

function upstreamSchema(kind: KindName): JsonSchema {
  const crd = parse(readFileSync(join(dir, crdFileName(kind)), 'utf8'));
  const versions = crd.spec.versions as Array<{ name: string; storage?: boolean; schema: { openAPIV3Schema: JsonSchema } }>;
  const version = versions.find((v) => v.storage) ?? versions[0];
  return version.schema.openAPIV3Schema;
}

/** Field-by-field differences where our schema would accept what upstream rejects. */
function compare(ours: JsonSchema, theirs: JsonSchema) {
  const upstream = new Map(schemaNodes(theirs));
  const mismatches: string[] = [];
  const extensions: string[] = [];
  const notRequired: string[] = [];
  for (const [path, node] of schemaNodes(ours)) {
    const other = upstream.get(path);
    if (!other) {
      if (!extensions.some((e) => path.startsWith(`${e}.`) || path.startsWith(`${e}[`) || path.startsWith(`${e}{`))) {
        extensions.push(path);
      }
      continue;
    }
    const at = path || '<root>';
    if (nodeType(node) !== nodeType(other)) mismatches.push(`${at}: type ${nodeType(node)} vs upstream ${nodeType(other)}`);
    if (node.format && other.format && node.format !== other.format) {
      mismatches.push(`${at}: format ${node.format} vs upstream ${other.format}`);
    }
    const enumOurs = node.enum as string[] | undefined;
    const enumTheirs = other.enum as string[] | undefined;
    if (enumTheirs && (!enumOurs || enumOurs.some((v) => !enumTheirs.includes(v)))) {
      mismatches.push(`${at}: enum [${enumOurs ?? 'any'}] vs upstream [${enumTheirs}]`);
    }
    for (const bound of ['minimum', 'maximum'] as const) {
      const mine = node[bound] as number | undefined;
      const theirsBound = other[bound] as number | undefined;
      const wider = theirsBound !== undefined && (mine === undefined || (bound === 'minimum' ? mine < theirsBound : mine > theirsBound));
      if (wider) mismatches.push(`${at}: ${bound} ${mine ?? 'none'} vs upstream ${theirsBound}`);
    }
    const ourRequired = new Set((node.required as string[] | undefined) ?? []);
    for (const name of (other.required as string[] | undefined) ?? []) {
      if (!ourRequired.has(name)) notRequired.push(path ? `${path}.${name}` : name);
    }
  }
  return { mismatches, extensions, notRequired };
}

let failed = false;
const samples = exampleObjects();
for (const kind of KIND_NAMES) {
  const theirs = upstreamSchema(kind);
  const validate = ajv.compile(theirs);
  const problems: string[] = [];
  const mine = samples.filter((o) => o.kind === kind);
  if (mine.length === 0) problems.push('no sample object');
  for (const obj of mine) {
    if (!validate(obj as unknown)) {
      for (const e of validate.errors ?? []) problems.push(`${obj.metadata.name}${e.instancePath}: ${e.message}`);
    }
  }
  const { mismatches, extensions, notRequired } = compare(toPlainSchema(KINDS[kind].schema), theirs);
  problems.push(...mismatches);
  failed ||= problems.length > 0;
  console.log(`${problems.length === 0 ? 'PASS' : 'FAIL'} ${kind} (${mine.length} sample object(s), ${crdFileName(kind)})`);
  for (const p of problems) console.log(`  - ${p}`);
  if (extensions.length > 0) console.log(`  extensions (ours only): ${extensions.join(', ')}`);
  if (notRequired.length > 0) console.log(`  warning: upstream requires, we do not: ${notRequired.join(', ')}`);
}
process.exit(failed ? 1 : 0);
