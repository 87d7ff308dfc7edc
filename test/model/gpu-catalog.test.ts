/** The GPU catalog: product names as GPU Feature Discovery reports them, and their TFLOPS. */
import { lookupGpuTflops, normalizeGpuProduct } from '../../lib/model/gpu-catalog';

describe('GPU catalog', () => {
  test.each([
    ['NVIDIA-A100-SXM4-80GB', 'A100', 312],
    ['Tesla-T4', 'T4', 65],
    ['NVIDIA-H100-80GB-HBM3', 'H100', 989],
    ['NVIDIA-H100-PCIe', 'H100-PCIe', 756],
    ['NVIDIA-L40S', 'L40S', 362],
    ['NVIDIA-L4', 'L4', 121],
    ['NVIDIA-A10G', 'A10G', 70],
    ['NVIDIA-GeForce-RTX-4090', 'RTX-4090', 165],
    ['NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', 'A100', 312],
    ['Tesla-V100-SXM2-16GB-SHARED', 'V100', 125],
  ])('%s is %s at %d TFLOPS', (product, model, tflops) => {
    expect(lookupGpuTflops(product)).toEqual({ model, tflops, from: 'catalog' });
  });

  test('pool overrides win by short model or full product name; unknown models are undefined', () => {
    expect(lookupGpuTflops('NVIDIA-A100-SXM4-80GB', { a100: '300' })).toEqual({ model: 'A100', tflops: 300, from: 'pool' });
    expect(lookupGpuTflops('Acme-X1', { 'Acme-X1': 42 })).toEqual({ model: 'ACME-X1', tflops: 42, from: 'pool' });
    expect(lookupGpuTflops('Acme-X1')).toBeUndefined();
    expect(normalizeGpuProduct('Tesla-T4')).toEqual(['T4']);
  });
});
