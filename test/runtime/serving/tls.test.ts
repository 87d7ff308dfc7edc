/**
 * TLS: the leader fills the Secret and the caBundle, renews before expiry, rotates while admissions
 * flow (no request fails, replicas hot-reload), and cert-manager's mounted files are reloaded.
 */
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import type { ApiServerDouble } from '../../support/api-server';
import { clusterFor } from '../../support/api-server';
import { issueServingCert, notAfter } from '../../../lib/runtime/serving/certificates';
import { SECRET_KEYS, SelfManagedTlsSource } from '../../../lib/runtime/serving/tls';
import type { WebhookHandle } from '../../../lib/runtime/webhook/start';
import { NS, pod, post, review, seedPool, SERVICE_HOST, startDouble, startTestWebhook, testPki } from '../webhook/fixtures';

let double: ApiServerDouble;
const DAY = 86_400_000;
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

function seedTlsObjects(): void {
  double.put('secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tf-tls', namespace: NS }, type: 'Opaque' });
  double.put('mutatingwebhookconfigurations', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'tf-webhook' },
    webhooks: [
      { name: 'pods.tensor-fusion.ai', clientConfig: { service: { name: 'tensor-fusion-webhook', namespace: NS, path: '/mutate-pods' } } },
    ],
  });
}

/** The CA bundle the API server currently trusts, as it reads it from the webhook configuration. */
const caBundle = () => unb64(double.getObject('mutatingwebhookconfigurations', 'tf-webhook')!.webhooks[0].clientConfig.caBundle);
const secretData = () => double.getObject('secrets', 'tf-tls', NS)!.data as Record<string, string>;

/** Serial of the certificate a new connection is served. */
function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: SERVICE_HOST, ca: caBundle() }, () => {
      resolve(s.getPeerCertificate().serialNumber);
      s.end();
    });
    s.on('error', reject);
  });
}

beforeEach(async () => {
  double = await startDouble();
  seedPool(double, { name: 'pool-a', nodes: 1, gpusPerNode: 1, isDefault: true });
  seedTlsObjects();
});

afterEach(async () => {
  await double.stop();
});

describe('self-managed', () => {
  /** The source of secret `tf-tls` for the Service name, as the leader unless `over` says otherwise. */
  const selfManaged = (over: Partial<ConstructorParameters<typeof SelfManagedTlsSource>[0]> = {}) =>
    new SelfManagedTlsSource({
      cluster: clusterFor(double),
      namespace: NS,
      secretName: 'tf-tls',
      webhookConfigName: 'tf-webhook',
      dnsNames: [SERVICE_HOST],
      isLeader: () => true,
      ...over,
    });

  it('issues the CA and serving certificate, publishes the caBundle, and serves with them', async () => {
    const webhook = await startTestWebhook(double, { tls: undefined, tlsPollMs: 100 });
    try {
      const data = secretData();
      expect(Object.keys(data).sort()).toEqual(
        [SECRET_KEYS.caBundle, SECRET_KEYS.caCert, SECRET_KEYS.caKey, SECRET_KEYS.cert, SECRET_KEYS.key].sort(),
      );
      expect(caBundle()).toBe(unb64(data[SECRET_KEYS.caCert]));
      const agent = new https.Agent({ ca: caBundle(), servername: SERVICE_HOST });
      const answer = await post(webhook.port(), agent, review(pod({ name: 'p', labels: {} })));
      expect(answer.body.response.allowed).toBe(true);
      agent.destroy();
    } finally {
      await webhook.close();
    }
  });

  it('rotates the serving certificate and the CA while admissions flow, without a failed request', async () => {
    const leader = await startTestWebhook(double, { tls: undefined, tlsPollMs: 50, name: 'leader' });
    const follower = await startTestWebhook(double, { tls: undefined, tlsPollMs: 50, name: 'follower', isLeader: () => false });
    const failures: unknown[] = [];
    let ok = 0;
    let running = true;
    // Each request opens a new connection trusting the bundle the API server has at that moment.
    const worker = async (w: WebhookHandle) => {
      while (running) {
        const agent = new https.Agent({ keepAlive: false, ca: caBundle(), servername: SERVICE_HOST });
        try {
          const a = await post(w.port(), agent, review(pod({ name: 'p', labels: {} })));
          if (a.status === 200 && a.body.response.allowed) ok++;
          else failures.push(a);
        } catch (err) {
          failures.push(err);
        } finally {
          agent.destroy();
        }
      }
    };
    const workers = [leader, follower, leader, follower].map(worker);
    try {
      const before = await servedSerial(follower.port());
      await (leader.tls as SelfManagedTlsSource).rotate();
      await new Promise((r) => setTimeout(r, 300));
      const afterCert = await servedSerial(follower.port());
      expect(afterCert).not.toBe(before);
      expect(await servedSerial(leader.port())).toBe(afterCert);

      const oldCa = unb64(secretData()[SECRET_KEYS.caCert]);
      await (leader.tls as SelfManagedTlsSource).rotate(true);
      await new Promise((r) => setTimeout(r, 300));
      const newCa = unb64(secretData()[SECRET_KEYS.caCert]);
      expect(newCa).not.toBe(oldCa);
      // The bundle carries both CAs, new first, so either certificate is trusted during the switch.
      expect(caBundle()).toBe(newCa + oldCa);
      expect(await servedSerial(follower.port())).not.toBe(afterCert);
    } finally {
      running = false;
      await Promise.all(workers);
      await leader.close();
      await follower.close();
    }
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(20);
  });

  it('renews the serving certificate 90 days before expiry, not earlier', async () => {
    let now = Date.now();
    const source = selfManaged({ now: () => now });
    await source.tick();
    const first = source.current()!.cert;
    expect(notAfter(first)!.getTime()).toBeGreaterThan(now + 364 * DAY);
    now += 270 * DAY;
    await source.tick();
    expect(source.current()!.cert).toBe(first);
    now += 10 * DAY;
    await source.tick();
    expect(source.current()!.cert).not.toBe(first);
    expect(unb64(secretData()[SECRET_KEYS.cert])).toBe(source.current()!.cert);
  });

  it('replaces a serving certificate that does not cover the Service name', async () => {
    const { ca } = testPki();
    const wrong = issueServingCert(ca, ['elsewhere.svc']);
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    double.put('secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'tf-tls', namespace: NS },
      type: 'Opaque',
      data: {
        [SECRET_KEYS.caCert]: b64(ca.cert),
        [SECRET_KEYS.caKey]: b64(ca.key),
        [SECRET_KEYS.cert]: b64(wrong.cert),
        [SECRET_KEYS.key]: b64(wrong.key),
      },
    });
    const source = selfManaged();
    await source.tick();
    expect(source.current()!.cert).not.toBe(wrong.cert);
    // Same CA kept: only the serving certificate was wrong.
    expect(unb64(secretData()[SECRET_KEYS.caCert])).toBe(ca.cert);
  });

  it('does not write as a follower', async () => {
    const source = selfManaged({ isLeader: () => false });
    await source.tick();
    expect(source.current()).toBeUndefined();
    expect(double.getObject('secrets', 'tf-tls', NS)!.data).toBeUndefined();
  });
});

describe('cert-manager', () => {
  it('serves the mounted files and reloads them when cert-manager renews them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tf-tls-'));
    const { ca } = testPki();
    const write = () => {
      const pair = issueServingCert(ca, [SERVICE_HOST]);
      fs.writeFileSync(path.join(dir, 'tls.crt'), pair.cert);
      fs.writeFileSync(path.join(dir, 'tls.key'), pair.key);
    };
    write();
    const webhook = await startTestWebhook(double, {
      tls: undefined,
      tlsPollMs: 50,
      env: {
        webhookPort: 0,
        certMode: 'cert-manager',
        tlsDir: dir,
        tlsSecretName: 'tf-tls',
        webhookConfigName: 'tf-webhook',
        webhookServiceName: 'tensor-fusion-webhook',
      },
    });
    const serial = () =>
      new Promise<string>((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port: webhook.port(), servername: SERVICE_HOST, ca: ca.cert }, () => {
          resolve(s.getPeerCertificate().serialNumber);
          s.end();
        });
        s.on('error', reject);
      });
    try {
      const first = await serial();
      write();
      await new Promise((r) => setTimeout(r, 300));
      expect(await serial()).not.toBe(first);
      // cert-manager mode never touches the Secret.
      expect(double.getObject('secrets', 'tf-tls', NS)!.data).toBeUndefined();
    } finally {
      await webhook.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
