import { boundedName, DNS_SUBDOMAIN_MAX, isDnsSubdomain } from '../../lib/k8s/names';
import { gpuIndexOf, gpuName } from '../../lib/model/gpu-object';
import { resourceSliceName } from '../../lib/runtime/shared/dra/resource-slice';

// A node's name may run to 253 characters; the objects named after it must fit there too.
const longest = `${'a'.repeat(61)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}`;

describe('boundedName', () => {
  it('keeps a name that fits as it is', () => {
    expect(boundedName('node-1', '-gpu-0')).toBe('node-1-gpu-0');
    const fits = 'n'.repeat(DNS_SUBDOMAIN_MAX - 6);
    expect(boundedName(fits, '-gpu-0')).toBe(`${fits}-gpu-0`);
  });

  it('cuts a base too long for the suffix, marks it with a hash, and keeps the suffix', () => {
    expect(longest).toHaveLength(DNS_SUBDOMAIN_MAX);
    const name = boundedName(longest, '-gpu-7');
    expect(name).toHaveLength(DNS_SUBDOMAIN_MAX);
    expect(isDnsSubdomain(name)).toBe(true);
    expect(name).toMatch(/^a{61}\.b{63}\.c{63}\.d+-[0-9a-f]{10}-gpu-7$/);
    expect(boundedName(longest, '-gpu-7')).toBe(name);
  });

  it('gives two long bases that share the kept prefix different names', () => {
    const other = `${longest.slice(0, -1)}e`;
    expect(boundedName(other, '-gpu-0')).not.toBe(boundedName(longest, '-gpu-0'));
  });

  it("drops a cut's trailing '.' or '-', which would leave no DNS-1123 subdomain", () => {
    // Too long by 5, with the cut (253 - 6 for the suffix - 11 for the mark = 236) ending on a '.'.
    const dotted = `${'a'.repeat(235)}.${'b'.repeat(16)}`;
    const name = boundedName(dotted, '-gpu-0');
    expect(name).toMatch(/^a{235}-[0-9a-f]{10}-gpu-0$/);
    expect(isDnsSubdomain(name)).toBe(true);
  });
});

describe('names after a node of the longest name', () => {
  it('the GPU objects: valid, distinct and still carrying their index', () => {
    const names = [0, 1, 7].map((i) => gpuName(longest, i));
    expect(names.every(isDnsSubdomain)).toBe(true);
    expect(new Set(names).size).toBe(3);
    expect(names.map(gpuIndexOf)).toEqual([0, 1, 7]);
  });

  it('the ResourceSlice: valid', () => {
    expect(isDnsSubdomain(resourceSliceName(longest))).toBe(true);
    expect(resourceSliceName('node-1')).toBe('node-1-gpu.tensor-fusion.ai');
  });
});
