/**
 * Where the webhook's serving certificate comes from, and how it changes without a restart.
 *
 * - Self-managed: the leader keeps a CA and a serving certificate in the TLS Secret (keys `ca.crt`,
 *   `ca.key`, `tls.crt`, `tls.key`) and the CA bundle in the MutatingWebhookConfiguration. It renews
 *   the serving certificate `renewBeforeDays` before expiry and the CA `caRenewBeforeDays` before its
 *   own. On a CA change the bundle first carries the new and the old CA, and is written before the
 *   Secret, so the API server trusts whichever certificate a replica serves during the switch.
 * - cert-manager: the mounted Secret files (`tls.crt`, `tls.key` in TLS_DIR) are read; cert-manager
 *   renews them and cainjector fills the bundle.
 * Every replica polls its source and hands new material to `server.setSecureContext`, so rotation
 * needs no restart and drops no connection.
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { Logger } from 'pino';
import { Cluster, JsonPatchOp, K8sObject, isConflict, isNotFound } from '../kube/cluster';
import { certMatches, createCa, issueServingCert, KeyPair, notAfter } from './certificates';
import { WEBHOOK_RESOURCES } from './tls-resources';

const DAY_MS = 86_400_000;

/** A source of serving material that may change over time. */
export interface TlsSource {
  /** The current certificate and key, once known. */
  current(): KeyPair | undefined;
  /** Called with new material whenever it changes. */
  onChange(listener: (pair: KeyPair) => void): void;
  /** Checks now: reads (and, for the self-managed leader, renews) the material. */
  tick(): Promise<void>;
}

/** Secret keys of the self-managed mode. */
export const SECRET_KEYS = { caCert: 'ca.crt', caKey: 'ca.key', caBundle: 'ca-bundle.crt', cert: 'tls.crt', key: 'tls.key' } as const;

abstract class PollingSource implements TlsSource {
  private pair?: KeyPair;
  private readonly listeners: Array<(p: KeyPair) => void> = [];

  current(): KeyPair | undefined {
    return this.pair;
  }

  onChange(listener: (pair: KeyPair) => void): void {
    this.listeners.push(listener);
  }

  protected publish(pair: KeyPair | undefined): void {
    if (!pair || (this.pair && this.pair.cert === pair.cert && this.pair.key === pair.key)) return;
    this.pair = pair;
    for (const l of this.listeners) l(pair);
  }

  abstract tick(): Promise<void>;
}

/** cert-manager mode: the files of the mounted Secret. */
export class FileTlsSource extends PollingSource {
  constructor(
    private readonly dir: string,
    private readonly logger?: Logger,
  ) {
    super();
  }

  async tick(): Promise<void> {
    try {
      const [cert, key] = await Promise.all([
        readFile(path.join(this.dir, 'tls.crt'), 'utf8'),
        readFile(path.join(this.dir, 'tls.key'), 'utf8'),
      ]);
      if (cert.trim() && key.trim()) this.publish({ cert, key });
    } catch (err) {
      this.logger?.warn({ err: String(err), dir: this.dir }, 'TLS files not readable yet');
    }
  }
}

export interface SelfManagedTlsOptions {
  cluster: Cluster;
  namespace: string;
  secretName: string;
  webhookConfigName: string;
  dnsNames: readonly string[];
  /** Only the leader writes the Secret and the bundle. */
  isLeader: () => boolean;
  /** @default 365 */
  certDays?: number;
  /** @default 90 */
  renewBeforeDays?: number;
  /** @default 3650 */
  caDays?: number;
  /** @default 365 */
  caRenewBeforeDays?: number;
  /** Wait between publishing a new CA bundle and serving a certificate of the new CA. @default 30000 */
  caPropagationMs?: number;
  /** Wall clock. @default Date.now */
  now?: () => number;
  logger?: Logger;
}

interface Secret extends K8sObject {
  data?: Record<string, string>;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => (s ? Buffer.from(s, 'base64').toString('utf8') : '');

/** The certificates of a PEM bundle that are still valid at `now`. */
function validCerts(bundle: string, now: number): string[] {
  const certs = bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\s*/g) ?? [];
  return certs.filter((c) => (notAfter(c)?.getTime() ?? 0) > now);
}

export class SelfManagedTlsSource extends PollingSource {
  private readonly now: () => number;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: SelfManagedTlsOptions) {
    super();
    this.now = opts.now ?? Date.now;
  }

  async tick(): Promise<void> {
    await this.exclusive(async () => {
      let secret = await this.read();
      if (this.opts.isLeader()) {
        try {
          secret = (await this.renew(secret, false)) ?? secret;
        } catch (err) {
          // A conflict means another writer was faster; the next tick sees its result.
          if (!isConflict(err)) this.opts.logger?.error({ err: String(err) }, 'webhook certificate renewal failed');
        }
      }
      this.publishSecret(secret);
    });
  }

  /** Leader: issues a new serving certificate now (and a new CA when `ca` is true). */
  async rotate(ca = false): Promise<void> {
    await this.exclusive(async () => {
      const written = await this.renew(await this.read(), true, ca);
      this.publishSecret(written);
    });
  }

  /**
   * Runs renewals one at a time: a check that read the Secret before a rotation must not write the
   * bundle it computed from that stale read afterwards.
   */
  private exclusive(fn: () => Promise<void>): Promise<void> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private publishSecret(secret: Secret | undefined): void {
    const d = secret?.data ?? {};
    const cert = unb64(d[SECRET_KEYS.cert]);
    const key = unb64(d[SECRET_KEYS.key]);
    if (cert && key) this.publish({ cert, key });
  }

  private read(): Promise<Secret | undefined> {
    return this.opts.cluster.get<Secret>(WEBHOOK_RESOURCES.secrets, { namespace: this.opts.namespace, name: this.opts.secretName });
  }

  /** Returns the written Secret, or undefined when nothing needed doing. */
  private async renew(secret: Secret | undefined, forceCert: boolean, forceCa = false): Promise<Secret | undefined> {
    const o = this.opts;
    const now = this.now();
    const d = secret?.data ?? {};
    let ca: KeyPair = { cert: unb64(d[SECRET_KEYS.caCert]), key: unb64(d[SECRET_KEYS.caKey]) };
    let bundle = unb64(d[SECRET_KEYS.caBundle]) || ca.cert;
    const caExpiry = notAfter(ca.cert)?.getTime() ?? 0;
    const needCa = forceCa || !ca.key || caExpiry - now < (o.caRenewBeforeDays ?? 365) * DAY_MS;
    const replacingCa = needCa && ca.key !== '';
    if (needCa) {
      ca = createCa(undefined, { notBefore: new Date(now), days: o.caDays ?? 3650 });
      bundle = [ca.cert, ...validCerts(bundle, now)].join('');
    }
    let cert: KeyPair = { cert: unb64(d[SECRET_KEYS.cert]), key: unb64(d[SECRET_KEYS.key]) };
    const certExpiry = notAfter(cert.cert)?.getTime() ?? 0;
    const needCert =
      needCa ||
      forceCert ||
      !cert.key ||
      certExpiry - now < (o.renewBeforeDays ?? 90) * DAY_MS ||
      !certMatches(cert.cert, ca.cert, o.dnsNames);
    // The bundle goes first, and has time to reach the API servers' caches, so that they trust the
    // new CA before any replica serves a certificate it signed.
    const bundleChanged = await this.publishBundle(bundle);
    if (bundleChanged && replacingCa) await new Promise((r) => setTimeout(r, o.caPropagationMs ?? 30_000));
    if (!needCert) return undefined;
    cert = issueServingCert(ca, o.dnsNames, { notBefore: new Date(now), days: o.certDays ?? 365 });
    const data = {
      ...(secret?.data ?? {}),
      [SECRET_KEYS.caCert]: b64(ca.cert),
      [SECRET_KEYS.caKey]: b64(ca.key),
      [SECRET_KEYS.caBundle]: b64(bundle),
      [SECRET_KEYS.cert]: b64(cert.cert),
      [SECRET_KEYS.key]: b64(cert.key),
    };
    const body: Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: secret?.type ?? 'Opaque',
      metadata: { ...(secret?.metadata ?? {}), name: o.secretName, namespace: o.namespace },
      data,
    };
    const written = secret
      ? await o.cluster.replace<Secret>(WEBHOOK_RESOURCES.secrets, body)
      : await o.cluster.create<Secret>(WEBHOOK_RESOURCES.secrets, body);
    o.logger?.info({ notAfter: notAfter(cert.cert)?.toISOString(), newCa: needCa }, 'webhook serving certificate issued');
    return written;
  }

  /** Writes the bundle into every webhook of the configuration; true when it changed anything. */
  private async publishBundle(bundle: string): Promise<boolean> {
    const o = this.opts;
    const rt = WEBHOOK_RESOURCES.mutatingwebhookconfigurations;
    const config = await o.cluster.get<K8sObject>(rt, { name: o.webhookConfigName });
    if (!config) return false;
    const want = b64(bundle);
    const webhooks = Array.isArray(config.webhooks) ? (config.webhooks as Array<{ clientConfig?: { caBundle?: string } }>) : [];
    const ops: JsonPatchOp[] = [];
    webhooks.forEach((w, i) => {
      if (w.clientConfig?.caBundle === want) return;
      ops.push(
        w.clientConfig
          ? { op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: want }
          : { op: 'add', path: `/webhooks/${i}/clientConfig`, value: { caBundle: want } },
      );
    });
    if (ops.length === 0) return false;
    try {
      await o.cluster.jsonPatch(rt, { name: o.webhookConfigName }, [
        { op: 'test', path: '/metadata/resourceVersion', value: config.metadata.resourceVersion },
        ...ops,
      ]);
      return true;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return false;
    }
  }
}
