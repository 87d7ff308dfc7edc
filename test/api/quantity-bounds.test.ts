/**
 * Every quantity is bounded in the CRD schema and in the codec alike (issue 14.2), and replicas has an
 * upper bound (issue 14.3): values that once passed the CRD and then failed every pod with an internal
 * error are refused where they are written.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { crdFileName, KIND_NAMES, validateSpec } from '../../lib/api';

const CRD_DIR = join(__dirname, '..', '..', 'crds');
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const committed = (kind: (typeof KIND_NAMES)[number]) =>
  parse(readFileSync(join(CRD_DIR, crdFileName(kind)), 'utf8')).spec.versions[0].schema.openAPIV3Schema;
const profile = (spec: unknown) => ({ apiVersion: 'tensor-fusion.ai/v1', kind: 'WorkloadProfile', metadata: { name: 'p' }, spec });
const resources = (limits: Record<string, unknown>) => ({
  resources: { requests: { tflops: '10', vram: '1Gi' }, limits: { tflops: '10', vram: '1Gi', ...limits } },
});
const schemaErrors = (spec: unknown) => {
  ajv.validate(committed('WorkloadProfile'), profile(spec));
  return (ajv.errors ?? []).map((e) => `${e.instancePath} ${e.keyword}`);
};

describe('the WorkloadProfile CRD schema', () => {
  it('refuses limits.vram "1e400" (an exponent of more than two digits)', () => {
    expect(schemaErrors(resources({ vram: '1e400' }))).toEqual(['/spec/resources/limits/vram pattern']);
  });

  it('refuses a 400-digit value by length', () => {
    expect(schemaErrors(resources({ tflops: '9'.repeat(400) }))).toEqual(['/spec/resources/limits/tflops maxLength']);
  });

  it('refuses integers above the share bounds and replicas above 10000', () => {
    expect(schemaErrors({ ...resources({ vram: 2 ** 51, tflops: 100001 }), replicas: 10001 })).toEqual([
      '/spec/resources/limits/tflops maximum',
      '/spec/resources/limits/vram maximum',
      '/spec/replicas maximum',
    ]);
  });

  it('admits the bounds', () => {
    expect(schemaErrors({ ...resources({ vram: '1Pi', tflops: 100000 }), replicas: 10000 })).toEqual([]);
  });
});

describe('validateSpec says the bound', () => {
  it.each([
    [{ vram: '1e400' }, 'spec.resources.limits.vram: got "1e400", expected a Kubernetes quantity such as 4Gi or 512Mi, at most 1Pi'],
    [{ vram: '8Pi' }, 'spec.resources.limits.vram: got "8Pi", expected at most 1Pi of VRAM per GPU'],
    [{ tflops: '1e99' }, 'spec.resources.limits.tflops: got "1e99", expected at most 100000 TFLOPS per GPU'],
    [
      { vram: '500m' },
      'spec.resources.limits.vram: got "500m", expected at least 1Mi of VRAM (a number or a quantity without a unit is bytes): did you mean "500Mi"?',
    ],
  ])('%j', (limits, message) => {
    expect(validateSpec('WorkloadProfile', resources(limits)).map((i) => i.message)).toEqual([message]);
  });

  it('replicas', () => {
    expect(validateSpec('WorkloadProfile', { replicas: 999999999 }).map((i) => i.message)).toEqual([
      'spec.replicas: got 999999999, expected an integer from 0 to 10000',
    ]);
  });
});
