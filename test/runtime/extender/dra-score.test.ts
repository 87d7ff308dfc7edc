import { claimResults, claimShape, ClaimStatus } from '../../../lib/runtime/extender/dra-score';
import { claimDevices } from '../../../lib/runtime/shared/dra/claim-template';

const share = {
  pool: 'p',
  qos: 'medium' as const,
  gpuCount: 2,
  tflopsRequest: 250,
  tflopsLimit: 250,
  vramRequest: 4000 * 2 ** 20,
  vramLimit: 4000 * 2 ** 20,
};

describe('claimShape', () => {
  it('reads the GPU count and per-GPU amounts back from the claim the webhook makes', () => {
    expect(claimShape(claimDevices(share))).toEqual({ gpuCount: 2, tflops: 250, vram: 4000 * 2 ** 20 });
  });

  it('counts an amount the claim does not name as 0', () => {
    expect(claimShape(claimDevices({ ...share, gpuCount: 1, tflopsRequest: 0 }))).toEqual({ gpuCount: 1, tflops: 0, vram: 4000 * 2 ** 20 });
  });

  it('is undefined for a claim without our request', () => {
    expect(claimShape({ requests: [] })).toBeUndefined();
  });
});

describe('claimResults', () => {
  it("lists our driver's devices with what each consumes, leaving other drivers' out", () => {
    const status: ClaimStatus = {
      allocation: {
        devices: {
          results: [
            {
              request: 'gpu',
              driver: 'gpu.tensor-fusion.ai',
              pool: 'n1',
              device: 'gpu-3',
              consumedCapacity: { tflops: '250', memory: '4000Mi' },
            },
            { request: 'nic', driver: 'nic.example.com', pool: 'n1', device: 'eth-0', consumedCapacity: { bandwidth: '1G' } },
          ],
        },
      },
    };
    expect(claimResults(status)).toEqual([{ pool: 'n1', device: 'gpu-3', tflops: 250, vram: 4000 * 2 ** 20 }]);
  });

  it('is empty for a claim not allocated', () => {
    expect(claimResults({})).toEqual([]);
    expect(claimResults(undefined)).toEqual([]);
  });
});
