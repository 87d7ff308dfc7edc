/** Seed 002's example Deployment: its pod template annotations, in the seed's order and exact spelling. */
export const SEED_002_ANNOTATIONS: Readonly<Record<string, string>> = {
  'tensor-fusion.ai/gpupool': 'default-pool',
  'tensor-fusion.ai/inject-container': 'python',
  'tensor-fusion.ai/replicas': '1',
  'tensor-fusion.ai/tflops-limit': '20',
  'tensor-fusion.ai/tflops-request': '10',
  'tensor-fusion.ai/vram-limit': '4Gi',
  'tensor-fusion.ai/vram-request': '4Gi',
  'tensor-fusion.ai/qos': 'medium',
  'tensor-fusion.ai/workload': 'pytorch-example',
  'tensor-fusion.ai/generate-workload': 'true',
  'tensor-fusion.ai/workload-profile': 'default-profile',
  'tensor-fusion.ai/is-local-gpu': 'true',
  'tensor-fusion.ai/gpu-count': '1',
};
