/**
 * Kubernetes quantities read as apimachinery reads them. The table holds facts from apimachinery's
 * own quantity tests (TestQuantityParse: input and value; the invalid list), written here as values.
 */
import { decodeGpuAnnotations, encodeGpuWorkload } from '../../lib/annotations';
import { checkTflops, checkVram } from '../../lib/model/share-quantity';
import { parseQuantity, QUANTITY_PATTERN } from '../../lib/k8s/quantity';
import { annotationKey as A } from '../support/annotations';

const messages = (annotations: Record<string, string>) => decodeGpuAnnotations(annotations).issues.map((i) => i.message);

describe('parseQuantity, as apimachinery', () => {
  it.each([
    ['0', 0],
    ['0Ki', 0],
    ['1', 1],
    ['1Ki', 1024],
    ['8Ki', 8 * 1024],
    ['7Mi', 7 * 2 ** 20],
    ['6Gi', 6 * 2 ** 30],
    ['5Ti', 5 * 2 ** 40],
    ['4Pi', 4 * 2 ** 50],
    ['3Ei', 3 * 2 ** 60],
    ['5n', 5e-9],
    ['4u', 4e-6],
    ['3m', 3e-3],
    ['8k', 8e3],
    ['50k', 5e4],
    ['7M', 7e6],
    ['6G', 6e9],
    ['5T', 5e12],
    ['2P', 2e15],
    // `E` alone is exa, `Ei` exbi; `E` or `e` followed by a signed integer is an exponent.
    ['1E', 1e18],
    ['12E', 12e18],
    ['1.01E', 1.01e18],
    ['1E-3', 1e-3],
    ['1e3', 1e3],
    ['1E6', 1e6],
    ['1e9', 1e9],
    ['1E12', 1e12],
    ['1e15', 1e15],
    ['1E18', 1e18],
    ['1.2e3', 1200],
    ['1.3E+6', 1.3e6],
    ['1.40e9', 1.4e9],
    ['1.53E12', 1.53e12],
    ['0.5e-1', 0.05],
    ['100.035k', 100035],
    ['0.0005k', 0.5],
    ['10.035M', 10035000],
    ['8.1k', 8100],
    ['2.5P', 2.5e15],
    ['100.035Ki', 102435.84],
    ['0.5Mi', 2 ** 19],
    ['0.025Ti', 0.025 * 2 ** 40],
    ['.001', 0.001],
    ['.0001k', 0.1],
    ['1.', 1],
    ['1.G', 1e9],
    ['-1.025Ti', -1.025 * 2 ** 40],
    ['+7Mi', 7 * 2 ** 20],
  ])('%s is %d', (input, value) => {
    expect(parseQuantity(input)).toBe(value);
    expect(new RegExp(QUANTITY_PATTERN).test(input)).toBe(true);
  });

  it.each(['', '1.1.M', '1+1.0M', '0.1mi', '0.1am', 'aoeu', '.5i', '1i', '-3.01i', '-3.01e-', ' 1', '1 ', '1e', '1Eq', '1e3.5'])(
    '%j is not a quantity',
    (input) => {
      expect(parseQuantity(input)).toBeUndefined();
    },
  );
});

describe('E and Ei suffixes at admission (issue 14.1)', () => {
  it('reads 1Ei as 2^60 bytes and refuses it by the VRAM bound, not as NaN', () => {
    expect(messages({ [A('vram-request')]: '1Ei' })).toEqual([
      'tensor-fusion.ai/vram-request: got "1Ei", expected at most 1Pi of VRAM per GPU',
    ]);
  });
  it('reads 2E as 2e18 bytes, not 2 bytes', () => {
    expect(messages({ [A('vram-request')]: '2E' })).toEqual([
      'tensor-fusion.ai/vram-request: got "2E", expected at most 1Pi of VRAM per GPU',
    ]);
  });
  it('reads 1E as 1e18 TFLOPS, not 1', () => {
    expect(messages({ [A('tflops-request')]: '1E' })).toEqual([
      'tensor-fusion.ai/tflops-request: got "1E", expected at most 100000 TFLOPS per GPU',
    ]);
  });
  it('still reads exponents and small suffixes', () => {
    expect(decodeGpuAnnotations({ [A('tflops-request')]: '1.5E+1', [A('vram-request')]: '0.5Gi' }).settings).toEqual({
      tflopsRequest: 15,
      vramRequest: 2 ** 29,
    });
  });
});

describe('bounds (issue 14.2)', () => {
  it.each([
    ['tflops-request', '1e309', 'expected at most 100000 TFLOPS per GPU'],
    ['tflops-limit', '1e309', 'expected at most 100000 TFLOPS per GPU'],
    ['tflops-request', '100001', 'expected at most 100000 TFLOPS per GPU'],
    ['tflops-request', '9'.repeat(400), 'expected a number of at most 32 characters, and at most 100000 TFLOPS'],
    ['vram-limit', '8Pi', 'expected at most 1Pi of VRAM per GPU'],
    ['vram-limit', '1e400', 'expected at most 1Pi of VRAM per GPU'],
    ['vram-limit', '9'.repeat(400), 'expected a Kubernetes quantity of at most 32 characters, and at most 1Pi of VRAM'],
  ])('%s %s is refused with the bound', (key, value, expected) => {
    const result = decodeGpuAnnotations({ [A('tflops-request')]: '10', [A('vram-request')]: '1Gi', [A(key)]: value });
    expect(result.issues.map((i) => i.message)).toEqual([`tensor-fusion.ai/${key}: got ${JSON.stringify(value)}, ${expected}`]);
  });

  it('admits the bounds themselves', () => {
    expect(checkTflops('t', '100000')).toEqual({ value: 100000, issues: [] });
    expect(checkVram('v', '1Pi')).toEqual({ value: 2 ** 50, issues: [] });
    expect(checkVram('v', '1Mi')).toEqual({ value: 2 ** 20, issues: [] });
  });
});

describe('silent units (issue 13.7)', () => {
  it('refuses a VRAM number below 1Mi and shows the likely unit', () => {
    expect(() => encodeGpuWorkload({ vramRequest: 4 })).toThrow(
      'vramRequest: got 4, expected at least 1Mi of VRAM (a number or a quantity without a unit is bytes): did you mean "4Gi"?',
    );
  });
  it('refuses 500m of VRAM (half a byte) and shows 500Mi', () => {
    expect(messages({ [A('vram-request')]: '500m' })).toEqual([
      'tensor-fusion.ai/vram-request: got "500m", expected at least 1Mi of VRAM (a number or a quantity without a unit is bytes): did you mean "500Mi"?',
    ]);
  });
  it('refuses fractional bytes above 1Mi and rounds the suggestion up to whole MiB', () => {
    expect(messages({ [A('vram-request')]: '0.1Gi' })).toEqual([
      'tensor-fusion.ai/vram-request: got "0.1Gi", expected a whole number of bytes: did you mean "103Mi"?',
    ]);
  });
});

describe('one whitespace rule for every value (issue 14.8)', () => {
  it.each([
    ['tflops-request', ' 10', '"10"'],
    ['gpu-count', ' 2', '"2"'],
    ['vram-request', '4Gi ', '"4Gi"'],
    ['qos', 'high ', '"high"'],
    ['is-local-gpu', ' true', '"true"'],
  ])('%s %j is refused, showing the value without spaces', (key, value, trimmed) => {
    expect(messages({ [A(key)]: value })).toEqual([
      `tensor-fusion.ai/${key}: got ${JSON.stringify(value)}, expected ${trimmed}, without surrounding spaces`,
    ]);
  });

  it('allows spaces around the commas of a list', () => {
    expect(decodeGpuAnnotations({ [A('inject-container')]: 'a, b' }, { containers: ['a', 'b'] }).settings).toEqual({
      injectContainers: ['a', 'b'],
    });
  });
});
