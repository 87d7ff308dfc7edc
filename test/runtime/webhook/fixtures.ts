/** A small GPU cluster in the API-server double, webhook instances over it, and an HTTPS client. */
import * as https from 'node:https';
import { applyPatch, deepClone } from 'fast-json-patch';
import { ApiServerDouble, clusterFor, startApiServer } from '../../support/api-server';
import { DEFAULT_POOL_ANNOTATION, ENABLED_LABEL, MANAGED_BY_LABEL } from '../../../lib/model/metadata-keys';
import { HOSTNAME_LABEL } from '../../../lib/k8s/labels';
import { API_VERSION } from '../../../lib/model/group';
import { WEBHOOK_RESOURCES } from '../../../lib/runtime/serving/tls-resources';
import { createCa, issueServingCert, KeyPair } from '../../../lib/runtime/serving/certificates';
import { startWebhook, StartWebhookOptions, WebhookHandle } from '../../../lib/runtime/webhook/start';
import type { AdmissionReview } from '../../../lib/runtime/webhook/review';
export { review } from '../../support/admission-review';
import type { TlsSource } from '../../../lib/runtime/serving/tls';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import type { ObjectMeta } from '../../../lib/k8s/object';
import type { RequestRecord } from '../../support/api-server/server';

export const GiB = 2 ** 30;
export const NS = 'tensor-fusion-system';
export const SERVICE_HOST = `tensor-fusion-webhook.${NS}.svc`;

export async function startDouble(): Promise<ApiServerDouble> {
  return startApiServer({ resources: Object.values(WEBHOOK_RESOURCES), bookmarkIntervalMs: 60_000 });
}

export interface PoolSeed {
  name: string;
  nodes: number;
  gpusPerNode: number;
  tflops?: number;
  vram?: number;
  model?: string;
  isDefault?: boolean;
  spec?: Record<string, unknown>;
  taints?: Array<Record<string, string>>;
}

/** Puts a GPUPool, its GPUNodes, Nodes and Running GPUs into the double. */
export function seedPool(double: ApiServerDouble, seed: PoolSeed): void {
  const { name, tflops = 100, vram = 80 * GiB, model = 'A100' } = seed;
  double.put('gpupools', {
    apiVersion: API_VERSION,
    kind: 'GPUPool',
    metadata: { name, ...(seed.isDefault ? { annotations: { [DEFAULT_POOL_ANNOTATION]: 'true' } } : {}) },
    spec: { nodeManagerConfig: {}, ...seed.spec },
  });
  for (let n = 0; n < seed.nodes; n++) {
    const node = `${name}-node-${n}`;
    double.put('nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: node, labels: { [HOSTNAME_LABEL]: node } },
      spec: { taints: seed.taints ?? [] },
    });
    double.put('gpunodes', {
      apiVersion: API_VERSION,
      kind: 'GPUNode',
      metadata: { name: node, labels: { [MANAGED_BY_LABEL]: name } },
      spec: {},
    });
    for (let g = 0; g < seed.gpusPerNode; g++) {
      double.put('gpus', {
        apiVersion: API_VERSION,
        kind: 'GPU',
        metadata: { name: `${node}-gpu-${g}`, labels: { [MANAGED_BY_LABEL]: node } },
        status: {
          uuid: `GPU-${name}-${n}-${g}`,
          index: g,
          gpuModel: model,
          vendor: 'NVIDIA',
          phase: 'Running',
          capacity: { tflops: String(tflops), vram: String(vram) },
          available: { tflops: String(tflops), vram: String(vram) },
          nodeSelector: { [HOSTNAME_LABEL]: node },
          message: '',
        },
      });
    }
  }
}

let pki: { ca: KeyPair; serving: KeyPair } | undefined;

/** One CA and serving certificate per test file (RSA key generation costs ~0.2 s). */
export function testPki(): { ca: KeyPair; serving: KeyPair } {
  pki ??= (() => {
    const ca = createCa();
    return { ca, serving: issueServingCert(ca, [SERVICE_HOST]) };
  })();
  return pki;
}

/** A TLS source that never changes. */
export function staticTls(pair: KeyPair): TlsSource {
  return { current: () => pair, onChange: () => undefined, tick: async () => undefined };
}

export async function startTestWebhook(
  double: ApiServerDouble,
  opts: Partial<StartWebhookOptions> & { name?: string } = {},
): Promise<WebhookHandle> {
  const webhook = startWebhook({
    cluster: clusterFor(double, opts.name ?? 'webhook'),
    namespace: NS,
    env: {
      webhookPort: 0,
      certMode: 'self-managed',
      tlsDir: '/nonexistent',
      tlsSecretName: 'tf-tls',
      webhookConfigName: 'tf-webhook',
      webhookServiceName: 'tensor-fusion-webhook',
    },
    host: '127.0.0.1',
    isLeader: () => true,
    tls: opts.tls ?? staticTls(testPki().serving),
    workerSyncIntervalMs: 3_600_000,
    informerOptions: { backoffInitialMs: 20, backoffMaxMs: 200 },
    drainMs: 2_000,
    caPropagationMs: 100,
    ...opts,
  });
  await webhook.whenReady();
  return webhook;
}

/** A webhook test file's set-up: the API double, the webhook over it and an HTTPS client for it. */
export interface WebhookSuite {
  double: ApiServerDouble;
  webhook: WebhookHandle;
  agent: https.Agent;
}

/**
 * Registers the set-up of a webhook test file: beforeAll starts an API double, puts `pools` and what
 * `seed` writes into it, starts a webhook over it and a client, and forgets the requests made so far;
 * afterAll stops all three. The fields are set once beforeAll has run: read them inside tests.
 */
export function useWebhookSuite(pools: readonly PoolSeed[], seed: (double: ApiServerDouble) => void = () => undefined): WebhookSuite {
  const suite = {} as WebhookSuite;
  beforeAll(async () => {
    suite.double = await startDouble();
    for (const p of pools) seedPool(suite.double, p);
    seed(suite.double);
    suite.webhook = await startTestWebhook(suite.double);
    suite.agent = client();
    suite.double.requests.length = 0;
  });
  afterAll(async () => {
    suite.agent?.destroy();
    await suite.webhook?.close();
    await suite.double?.stop();
  });
  return suite;
}

/** An HTTPS client trusting `ca`, checking the Service host name. */
export function client(ca = testPki().ca.cert, maxSockets = 64): https.Agent {
  return new https.Agent({ keepAlive: true, maxSockets, ca, servername: SERVICE_HOST });
}

export interface HttpAnswer {
  status: number;
  body: any;
}

export function post(port: number, agent: https.Agent, body: unknown, path = '/mutate-pods'): Promise<HttpAnswer> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        servername: SERVICE_HOST,
        headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = raw;
          try {
            parsed = JSON.parse(raw);
          } catch {
            // plain-text answers (400, 404, 413)
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** The pod's metadata to set (labels default to the webhook's opt-in label) and its container names. */
export interface PodOptions extends Pick<ObjectMeta, 'name' | 'namespace' | 'annotations' | 'labels' | 'ownerReferences'> {
  containers?: string[];
}

export function pod(o: PodOptions = {}): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...(o.name !== undefined ? { name: o.name } : { generateName: 'app-' }),
      namespace: o.namespace ?? 'default',
      labels: o.labels ?? { [ENABLED_LABEL]: 'true' },
      annotations: o.annotations ?? {},
      ...(o.ownerReferences ? { ownerReferences: o.ownerReferences } : {}),
    },
    spec: { containers: (o.containers ?? ['python']).map((name) => ({ name, image: 'python:3.12' })) },
  };
}

/** The pod after the response's patch, as the API server would store it (throws on an invalid patch). */
export function patched(object: K8sObject, answer: AdmissionReview): K8sObject {
  const r = answer.response!;
  if (!r.patch) return object;
  const ops = JSON.parse(Buffer.from(r.patch, 'base64').toString('utf8'));
  return applyPatch(deepClone(object), ops, true, false).newDocument;
}

export function patchOps(answer: AdmissionReview): any[] {
  const p = answer.response?.patch;
  return p ? JSON.parse(Buffer.from(p, 'base64').toString('utf8')) : [];
}

/** Requests that change something (anything but GET, which lists and watches use too). */
export function writes(double: ApiServerDouble): RequestRecord[] {
  return double.requests.filter((r) => r.method !== 'GET');
}
