import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import {
  buildCrd,
  buildCrds,
  renderCrd,
  renderCrds,
  crdFileName,
  crdYaml,
  JsonSchema,
  KIND_NAMES,
  KINDS,
  validateSpec,
} from '../../lib/api';
import { exampleObjects, fullWorkloadProfileSpec, seedWorkloadProfileSpec } from '../support/api-examples';
import { nodeType, schemaNodes, structuralProblems } from '../support/schema-walk';
import { QUANTITY_PATTERN } from '../../lib/k8s/quantity';

const CRD_DIR = join(__dirname, '..', '..', 'crds');
const openApi = (kind: (typeof KIND_NAMES)[number]) => renderCrd(kind).spec.versions[0].schema.openAPIV3Schema;
const allNodes = () => KIND_NAMES.flatMap((kind) => schemaNodes(openApi(kind)).map(([path, node]) => [kind, path, node] as const));

function symbolPaths(value: unknown, path = ''): string[] {
  if (value === null || typeof value !== 'object') return [];
  const own = Object.getOwnPropertySymbols(value).length > 0 ? [path || '<root>'] : [];
  return [...own, ...Object.entries(value).flatMap(([k, v]) => symbolPaths(v, `${path}.${k}`))];
}

describe('committed CRDs', () => {
  it.each(KIND_NAMES)('the %s CRD file is up to date', (kind) => {
    const file = crdFileName(kind);
    let committed = '';
    try {
      committed = readFileSync(join(CRD_DIR, file), 'utf8');
    } catch {
      // reported below as stale
    }
    if (committed !== crdYaml(renderCrd(kind))) {
      throw new Error(`crds/${file} is stale or missing: run \`npm run gen:crds\` and commit the result`);
    }
  });

  it('keep their earlier names buildCrd and buildCrds as deprecated aliases', () => {
    expect(buildCrd('GPUPool')).toEqual(renderCrd('GPUPool'));
    expect(buildCrds()).toEqual(renderCrds());
  });

  it('are plain JSON data (no TypeBox symbols, no internal keywords)', () => {
    for (const crd of renderCrds()) {
      expect(symbolPaths(crd)).toEqual([]);
      expect(JSON.stringify(crd)).not.toContain('x-tf-');
    }
  });

  it('carry names, scope, the status subresource and printer columns from the registry', () => {
    for (const kind of KIND_NAMES) {
      const info = KINDS[kind];
      const crd = parse(readFileSync(join(CRD_DIR, crdFileName(kind)), 'utf8'));
      expect(crd.metadata.name).toBe(`${info.plural}.tensor-fusion.ai`);
      expect(crd.spec.scope).toBe(info.scope);
      expect(crd.spec.names).toMatchObject({ kind, plural: info.plural, singular: info.singular, listKind: `${kind}List` });
      expect(crd.spec.versions).toHaveLength(1);
      expect(crd.spec.versions[0]).toMatchObject({ name: 'v1', served: true, storage: true, subresources: { status: {} } });
      expect(crd.spec.versions[0].additionalPrinterColumns.length).toBeGreaterThan(1);
    }
  });
});

describe('structural schemas', () => {
  it('have every node typed, no additionalProperties beside properties, no disallowed keywords', () => {
    const problems = allNodes().flatMap(([kind, path, node]) => structuralProblems(path, node).map((p) => `${kind} ${p}`));
    expect(problems).toEqual([]);
  });

  it('the structural check catches each kind of violation', () => {
    expect(structuralProblems('spec.a', { description: 'untyped' })).toEqual(['spec.a: no type']);
    expect(structuralProblems('spec.b', { type: 'object', properties: { x: { type: 'string' } }, additionalProperties: false })).toEqual([
      'spec.b: additionalProperties beside properties',
    ]);
    expect(structuralProblems('spec.c', { type: 'string', anyOf: [{ type: 'string' }], const: 'x' })).toEqual([
      'spec.c: anyOf outside an int-or-string node',
      'spec.c: keyword const is not allowed in a structural CRD',
    ]);
    expect(structuralProblems('spec.d', { 'x-kubernetes-int-or-string': true })).toEqual([
      'spec.d: int-or-string without anyOf integer/string',
    ]);
    expect(structuralProblems('spec.e', { type: 'string', 'x-kubernetes-preserve-unknown-fields': true, 'x-tf-expected': 'x' })).toEqual([
      'spec.e: preserve-unknown-fields on a non-object',
      'spec.e: internal keyword x-tf-expected',
    ]);
  });

  it('use int-or-string with the Kubernetes quantity pattern for every quantity', () => {
    const quantityName = /(^|\.)(tflops|vram|cpu|memory)$|(TFlops|VRAM)$|gpuTflops\{\}$/;
    // A quota's availablePercent holds percents under the names of the resources, as upstream.
    const percent = /^status\.availablePercent\./;
    const quantities = allNodes().filter(([, path]) => quantityName.test(path) && !percent.test(path));
    expect(quantities.length).toBeGreaterThan(40);
    for (const [kind, path, node] of quantities) {
      expect([kind, path, nodeType(node), node.pattern]).toEqual([kind, path, 'int-or-string', QUANTITY_PATTERN]);
    }
    for (const [kind, path] of allNodes().filter(([, , n]) => n['x-kubernetes-int-or-string'])) {
      expect([kind, path, quantityName.test(path) && !percent.test(path)]).toEqual([kind, path, true]);
    }
  });

  it('preserve unknown fields only in embedded pod templates', () => {
    const preserved = allNodes()
      .filter(([, , node]) => node['x-kubernetes-preserve-unknown-fields'])
      .map(([kind, path]) => `${kind} ${path}`);
    expect(preserved).toEqual(['GPUPool spec.componentConfig.worker.podTemplate']);
  });

  it('have printer columns that point at schema fields of a matching type', () => {
    for (const kind of KIND_NAMES) {
      const nodes = new Map(schemaNodes(openApi(kind)));
      for (const column of KINDS[kind].printerColumns) {
        if (column.jsonPath === '.metadata.creationTimestamp') continue;
        const node = nodes.get(column.jsonPath.slice(1));
        expect([kind, column.name, node !== undefined]).toEqual([kind, column.name, true]);
        if (column.type === 'integer') expect([kind, column.name, node?.type]).toEqual([kind, column.name, 'integer']);
      }
    }
  });

  it('have defaults that satisfy their own node', () => {
    const ajv = new Ajv({ strict: false });
    addFormats(ajv);
    const defaults = allNodes().filter(([, , node]) => node.default !== undefined);
    expect(defaults.map(([kind, path]) => `${kind} ${path}`)).toEqual([
      'GPUPool spec.nodeManagerConfig.defaultIsolationMode',
      'GPUPool spec.nodeManagerConfig.shareDelivery',
      'GPUPool spec.capacityConfig.oversubscription.tflopsOversellRatio',
      'GPUPool spec.placement.mode',
      'GPUNode spec.manageMode',
      'GPU status.vendor',
      'GPUResourceQuota spec.total.maxWorkers',
      'GPUResourceQuota spec.total.alertThresholdPercent',
    ]);
    for (const [, , node] of defaults) expect(ajv.validate(node, node.default)).toBe(true);
  });
});

describe('objects against the committed CRDs (as the API server sees them)', () => {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const committed = (kind: (typeof KIND_NAMES)[number]): JsonSchema =>
    parse(readFileSync(join(CRD_DIR, crdFileName(kind)), 'utf8')).spec.versions[0].schema.openAPIV3Schema;
  const profile = (spec: unknown) => ({ apiVersion: 'tensor-fusion.ai/v1', kind: 'WorkloadProfile', metadata: { name: 'p' }, spec });

  it('accept every sample object', () => {
    for (const obj of exampleObjects()) {
      const ok = ajv.validate(committed(obj.kind), obj);
      expect([obj.kind, ok, ajv.errors ?? null]).toEqual([obj.kind, true, null]);
    }
  });

  it('accept the seed 002 example profile and a profile with every seed 003 field', () => {
    expect(ajv.validate(committed('WorkloadProfile'), profile(seedWorkloadProfileSpec()))).toBe(true);
    expect(ajv.validate(committed('WorkloadProfile'), profile(fullWorkloadProfileSpec()))).toBe(true);
    expect(validateSpec('WorkloadProfile', seedWorkloadProfileSpec())).toEqual([]);
    expect(validateSpec('WorkloadProfile', fullWorkloadProfileSpec())).toEqual([]);
  });

  it("reject the seed 001 example profile's autoscaling fields with a pointer to autoScalingConfig", () => {
    const seed001 = {
      isLocalGPU: true,
      poolName: 'default-pool',
      qos: 'medium',
      resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } },
      autoScaling: true,
      minReplicas: 1,
      maxReplicas: 5,
    };
    expect(validateSpec('WorkloadProfile', seed001).map((i) => i.message)).toEqual([
      'spec.autoScaling: got true, expected spec.autoScalingConfig instead: autoScaling is not a WorkloadProfile field',
      'spec.minReplicas: got 1, expected spec.autoScalingConfig instead: minReplicas is not a WorkloadProfile field',
      'spec.maxReplicas: got 5, expected spec.autoScalingConfig instead: maxReplicas is not a WorkloadProfile field',
    ]);
  });

  it('reject a quantity that does not match the Kubernetes pattern', () => {
    const spec = {
      ...seedWorkloadProfileSpec(),
      resources: { requests: { tflops: '5', vram: '3GB' }, limits: { tflops: '15', vram: '3Gi' } },
    };
    expect(ajv.validate(committed('WorkloadProfile'), profile(spec))).toBe(false);
  });
});
