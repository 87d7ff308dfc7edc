/**
 * GPU model matching (issue 14.5): case-insensitive, by family, with upstream TensorFusion's catalog
 * names as aliases. Products are the `nvidia.com/gpu.product` strings GPU Feature Discovery writes
 * for the catalog's models; GPU.status.gpuModel is the catalog model the controller derives from them.
 */
import { catalogEntry, gpuModelMatches } from '../../lib/model/gpu-catalog';
import { Allocator } from '../../lib/allocator';
import { node, req } from './fixtures';

/** GFD product -> the catalog model written to GPU.status.gpuModel. */
const GFD: readonly [string, string][] = [
  ['NVIDIA-B200', 'B200'],
  ['NVIDIA-H200', 'H200'],
  ['NVIDIA-H100-80GB-HBM3', 'H100'],
  ['NVIDIA-H100-PCIe', 'H100-PCIe'],
  ['NVIDIA-H100-NVL', 'H100-NVL'],
  ['NVIDIA-GH200-480GB', 'GH200'],
  ['NVIDIA-H800', 'H800'],
  ['NVIDIA-H20', 'H20'],
  ['NVIDIA-A100-SXM4-80GB', 'A100'],
  ['NVIDIA-A100-PCIE-40GB', 'A100'],
  ['NVIDIA-A100-80GB-PCIe', 'A100'],
  ['NVIDIA-A800-SXM4-80GB', 'A800'],
  ['NVIDIA-A30', 'A30'],
  ['NVIDIA-A10G', 'A10G'],
  ['NVIDIA-A10', 'A10'],
  ['NVIDIA-L40S', 'L40S'],
  ['NVIDIA-L40', 'L40'],
  ['NVIDIA-L20', 'L20'],
  ['NVIDIA-L4', 'L4'],
  ['Tesla-T4', 'T4'],
  ['Tesla-V100S-PCIE-32GB', 'V100S'],
  ['Tesla-V100-PCIE-32GB', 'V100-PCIe'],
  ['Tesla-V100-SXM2-16GB', 'V100'],
  ['NVIDIA-RTX-6000-Ada-Generation', 'RTX-6000-Ada'],
  ['NVIDIA-RTX-A6000', 'RTX-A6000'],
  ['NVIDIA-GeForce-RTX-4090', 'RTX-4090'],
  ['NVIDIA-GeForce-RTX-3090', 'RTX-3090'],
];
const MODELS = [...new Set(GFD.map(([, m]) => m))];
const selected = (wanted: string) => MODELS.filter((m) => gpuModelMatches(wanted, m));

describe('gpuModelMatches', () => {
  it.each(GFD)('GFD product %s is catalog model %s, which its own name and the product select', (product, model) => {
    expect(catalogEntry(product)?.model).toBe(model);
    expect(gpuModelMatches(model, model)).toBe(true);
    expect(gpuModelMatches(model.toLowerCase(), model)).toBe(true);
    expect(gpuModelMatches(product, model)).toBe(true);
  });

  it.each([
    // Case-insensitive, as seed 002 writes it.
    ['L40s', ['L40S']],
    ['l4', ['L4']],
    // Family: the leading tokens.
    ['H100', ['H100', 'H100-PCIe', 'H100-NVL']],
    ['V100', ['V100-PCIe', 'V100']],
    ['A10', ['A10']],
    ['RTX', ['RTX-6000-Ada', 'RTX-A6000', 'RTX-4090', 'RTX-3090']],
    // A variant selects only itself; separators and case do not matter.
    ['H100-PCIe', ['H100-PCIe']],
    ['h100_pcie', ['H100-PCIe']],
    ['H100 NVL', ['H100-NVL']],
    // Upstream TensorFusion catalog names.
    ['A100_SXM_80G', ['A100']],
    ['A100_PCIe_40G', ['A100']],
    ['H100_SXM', ['H100']],
    ['RTX4090', ['RTX-4090']],
    // A full product name selects its model.
    ['NVIDIA-H100-80GB-HBM3', ['H100']],
    // Unknown names select nothing.
    ['H1000', []],
    ['', []],
  ])('%j selects %j', (wanted, models) => {
    expect(selected(wanted)).toEqual(models);
  });

  it('matches products the catalog does not know by their leading tokens', () => {
    expect(gpuModelMatches('B300', 'NVIDIA-B300-SXM6-288GB')).toBe(true);
    expect(gpuModelMatches('b300-sxm6', 'NVIDIA-B300-SXM6-288GB')).toBe(true);
    expect(gpuModelMatches('B30', 'NVIDIA-B300-SXM6-288GB')).toBe(false);
  });
});

describe('the allocator matches models by that rule', () => {
  it('places gpu-model L40s on an L40S GPU and H100 on an H100-PCIe GPU', () => {
    const a = new Allocator();
    a.addNode(node('l40s', 1, { model: 'L40S' }));
    a.addNode(node('pcie', 1, { model: 'H100-PCIe' }));
    a.addNode(node('h200', 1, { model: 'H200' }));
    const place = (id: string, gpuModel: string) => {
      const r = a.allocate(req(id, 0.1, { gpuModel }));
      return r.ok ? r.allocation.node : r.reasons.map((x) => x.message);
    };
    expect(place('x', 'L40s')).toBe('l40s');
    expect(place('y', 'H100')).toBe('pcie');
    expect(place('z', 'A100_SXM_80G')).toEqual(["none of the pool's 3 GPUs is a A100_SXM_80G"]);
  });
});
