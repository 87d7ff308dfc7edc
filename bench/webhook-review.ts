/** What the webhook benches send and serve: the AdmissionReview of a local-GPU pod, and the webhook. */
import { HOSTNAME_LABEL } from '../lib/k8s/labels';
import { API_VERSION } from '../lib/model/group';
import { DEFAULT_POOL_ANNOTATION, ENABLED_LABEL, MANAGED_BY_LABEL } from '../lib/model/metadata-keys';
import { WEBHOOK_RESOURCES } from '../lib/runtime/serving/tls-resources';
import { review } from '../test/support/admission-review';
import { ApiServerDouble, startApiServer } from '../test/support/api-server';
import type { HttpCluster } from '../lib/runtime/kube/http-cluster';
import type { KeyPair } from '../lib/runtime/serving/certificates';
import type { RuntimeMetrics } from '../lib/runtime/shared/metrics';
import { startWebhook, WebhookHandle } from '../lib/runtime/webhook/start';

/** The share every bench pod asks for: on its GPU server, 1 TFLOPS (4 at most) and 256 MiB of VRAM (1 GiB at most). */
export const BENCH_SHARE = {
  'tensor-fusion.ai/is-local-gpu': 'true',
  'tensor-fusion.ai/tflops-request': '1',
  'tensor-fusion.ai/tflops-limit': '4',
  'tensor-fusion.ai/vram-request': '256Mi',
  'tensor-fusion.ai/vram-limit': '1Gi',
};

/** The review of a pod labelled `bench-pod: [<pod>]` with admission uid `[<id>]`. */
export function reviewBody(): string {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: 'bench-',
      namespace: 'default',
      labels: { [ENABLED_LABEL]: 'true', app: 'bench', 'bench-pod': '[<pod>]' },
      annotations: {
        ...BENCH_SHARE,
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
  };
  return JSON.stringify(review(pod, { uid: '[<id>]' }));
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

/**
 * The API-server double the webhook benches admit against: the default pool `bench-pool`, the
 * workload `bench`, and `nodes` GPU nodes of eight A100s each.
 */
export async function startBenchApi(nodes: number): Promise<ApiServerDouble> {
  const api = await startApiServer({ resources: Object.values(WEBHOOK_RESOURCES), historyLimit: 50 });
  api.put('gpupools', {
    apiVersion: API_VERSION,
    kind: 'GPUPool',
    metadata: { name: 'bench-pool', annotations: { [DEFAULT_POOL_ANNOTATION]: 'true' } },
    spec: { nodeManagerConfig: {} },
  });
  for (let n = 0; n < nodes; n++) {
    const node = `node-${n}`;
    api.put('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { [HOSTNAME_LABEL]: node } } });
    api.put('gpunodes', {
      apiVersion: API_VERSION,
      kind: 'GPUNode',
      metadata: { name: node, labels: { [MANAGED_BY_LABEL]: 'bench-pool' } },
    });
    for (let g = 0; g < 8; g++) {
      api.put('gpus', {
        apiVersion: API_VERSION,
        kind: 'GPU',
        metadata: { name: `${node}-gpu-${g}`, labels: { [MANAGED_BY_LABEL]: node } },
        status: {
          uuid: `GPU-${n}-${g}`,
          index: g,
          gpuModel: 'A100',
          vendor: 'NVIDIA',
          phase: 'Running',
          capacity: { tflops: '312', vram: '80Gi' },
          available: { tflops: '312', vram: '80Gi' },
          nodeSelector: { [HOSTNAME_LABEL]: node },
          message: '',
        },
      });
    }
  }
  api.put('tensorfusionworkloads', {
    apiVersion: API_VERSION,
    kind: 'TensorFusionWorkload',
    metadata: { name: 'bench', namespace: 'default' },
    spec: { poolName: 'bench-pool' },
  });
  return api;
}
