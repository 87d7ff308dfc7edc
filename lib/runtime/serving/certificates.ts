/**
 * The self-managed webhook PKI: a CA and a serving certificate for the webhook Service's DNS names.
 * node-forge builds and signs the certificates (Node's crypto cannot create X.509); the RSA keys come
 * from Node's native generator, which is far faster than forge's pure-JS one.
 */
import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import * as forge from 'node-forge';

export interface KeyPair {
  /** PEM certificate. */
  readonly cert: string;
  /** PEM private key (PKCS#1). */
  readonly key: string;
}

export interface Validity {
  /** @default now */
  readonly notBefore?: Date;
  readonly days: number;
}

const DAY_MS = 86_400_000;

function rsaKey(): { pem: string; forgeKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const forgeKey = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { pem, forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e) };
}

function baseCert(publicKey: forge.pki.PublicKey, v: Validity): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  // Positive 16-byte serial: unique per certificate, as RFC 5280 asks.
  cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
  // Back-dated a minute for clock skew between replicas and the API server.
  const from = new Date((v.notBefore ?? new Date()).getTime() - 60_000);
  cert.validity.notBefore = from;
  cert.validity.notAfter = new Date(from.getTime() + v.days * DAY_MS);
  return cert;
}

/**
 * A self-signed CA. Each gets a distinct name: while the bundle holds the old and the new CA during a
 * rotation, a verifier that looks issuers up by name must not find the wrong one.
 * @default validity 3650 days
 */
export function createCa(commonName = 'tensor-fusion-webhook-ca', v: Validity = { days: 3650 }): KeyPair {
  const k = rsaKey();
  const cert = baseCert(k.publicKey, v);
  const subject = [{ name: 'commonName', value: `${commonName}-${randomBytes(4).toString('hex')}` }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(k.forgeKey, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: k.pem };
}

/** A subjectAltName entry: an IP address (webhooks reached by `clientConfig.url`) or a DNS name. */
function altName(name: string): { type: number; value?: string; ip?: string } {
  return isIP(name) ? { type: 7, ip: name } : { type: 2, value: name };
}

/** A serving certificate for `dnsNames` (DNS names or IP addresses) signed by `ca`. @default validity 365 days */
export function issueServingCert(ca: KeyPair, dnsNames: readonly string[], v: Validity = { days: 365 }): KeyPair {
  const k = rsaKey();
  const caCert = forge.pki.certificateFromPem(ca.cert);
  const cert = baseCert(k.publicKey, v);
  cert.setSubject([{ name: 'commonName', value: dnsNames[0] }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: dnsNames.map(altName) },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(ca.key) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: k.pem };
}

/** Expiry of a PEM certificate (the first in a bundle), or undefined when it does not parse. */
export function notAfter(pem: string): Date | undefined {
  try {
    return new Date(new X509Certificate(pem).validTo);
  } catch {
    return undefined;
  }
}

/** True when `cert` names every one of `dnsNames` and was signed by `caPem`. */
export function certMatches(cert: string, caPem: string, dnsNames: readonly string[]): boolean {
  try {
    const x = new X509Certificate(cert);
    const names = (x.subjectAltName ?? '').split(',').map((s) => s.trim().replace(/^(DNS|IP Address):/, ''));
    return dnsNames.every((n) => names.includes(n)) && x.verify(new X509Certificate(caPem).publicKey);
  } catch {
    return false;
  }
}
