/** What the webhook benches send and serve: the AdmissionReview of a local-GPU pod, and the webhook. */
import { ENABLED_LABEL } from '../lib/model/metadata-keys';
import type { HttpCluster } from '../lib/runtime/kube/http-cluster';
import type { KeyPair } from '../lib/runtime/serving/certificates';
import type { RuntimeMetrics } from '../lib/runtime/shared/metrics';
import { startWebhook, WebhookHandle } from '../lib/runtime/webhook/start';

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

/** The webhook on 127.0.0.1 with `tls`, reading `cluster`'s caches, never renewing or keeping workers. */
export function startBenchWebhook(cluster: HttpCluster, namespace: string, tls: KeyPair, metrics?: RuntimeMetrics): WebhookHandle {
  return startWebhook({
    cluster,
    namespace,
    host: '127.0.0.1',
    isLeader: () => true,
    env: {
      webhookPort: 0,
      certMode: 'self-managed',
      tlsDir: '/nonexistent',
      tlsSecretName: 'tls',
      webhookConfigName: 'wh',
      webhookServiceName: 'tensor-fusion-webhook',
    },
    tls: { current: () => tls, onChange: () => undefined, tick: async () => undefined },
    workerSyncIntervalMs: 3_600_000,
    metrics,
  });
}
