/** The AdmissionReview the webhook benches send: a local-GPU pod, `[<id>]` and `[<pod>]` to fill in. */
import { ENABLED_LABEL } from '../lib/model/metadata-keys';

/** The review of a pod labelled `bench-pod: [<pod>]` with admission uid `[<id>]`. */
export function reviewBody(): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '[<id>]',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      operation: 'CREATE',
      namespace: 'default',
      dryRun: false,
      object: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          generateName: 'bench-',
          namespace: 'default',
          labels: { [ENABLED_LABEL]: 'true', app: 'bench', 'bench-pod': '[<pod>]' },
          annotations: {
            'tensor-fusion.ai/is-local-gpu': 'true',
            'tensor-fusion.ai/tflops-request': '1',
            'tensor-fusion.ai/tflops-limit': '4',
            'tensor-fusion.ai/vram-request': '256Mi',
            'tensor-fusion.ai/vram-limit': '1Gi',
            'tensor-fusion.ai/workload': 'bench',
            'tensor-fusion.ai/generate-workload': 'false',
          },
        },
        spec: {
          containers: [
            {
              name: 'python',
              image: 'python:3.12',
              command: ['python', '-c', 'import torch'],
              resources: { requests: { cpu: '1', memory: '1Gi' } },
            },
          ],
          // As the Priority admission plugin leaves it before the mutating webhooks run.
          priority: 0,
          preemptionPolicy: 'PreemptLowerPriority',
        },
      },
    },
  });
}
