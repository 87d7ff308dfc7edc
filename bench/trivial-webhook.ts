/**
 * A do-nothing mutating webhook for `bench:cluster`: the least any mutating webhook does. It decodes
 * each AdmissionReview, answers with the request's uid and a JSON patch that adds one annotation, over
 * TLS, from its own Node process (as the controller's webhook is served). What the API server then
 * pays (the TLS call, the patch, the reinvocation compare, a slightly bigger pod) is the price of any
 * mutating webhook, the baseline ours is measured against.
 *
 * `node -r ts-node/register/transpile-only bench/trivial-webhook.ts` with TRIVIAL_WEBHOOK_PORT,
 * TRIVIAL_WEBHOOK_CERT and TRIVIAL_WEBHOOK_KEY (PEM files); imports only Node's modules. With
 * TRIVIAL_WEBHOOK_EXTRA_OPS (a file of JSON patch operations), those are added to every patch: what
 * `bench:cluster -- --trivial-patch=ours` uses to send the patch ours sends from a webhook that does
 * nothing else.
 */
import { readFileSync } from 'node:fs';
import * as https from 'node:https';

/** The annotation added to every pod (`/` escaped as `~1` in the patch path, RFC 6901). */
export const TRIVIAL_ANNOTATION = 'bench.tensor-fusion.ai/trivial-webhook';

/** The AdmissionReview answer for one request body: allowed, with the annotation added, then `extraOps`. */
export function trivialAnswer(body: string, extraOps: readonly object[] = []): string {
  const request = (JSON.parse(body) as { request: { uid: string; object: { metadata?: { annotations?: object } } } }).request;
  const patch = request.object.metadata?.annotations
    ? [{ op: 'add', path: `/metadata/annotations/${TRIVIAL_ANNOTATION.replace(/~/g, '~0').replace(/\//g, '~1')}`, value: 'true' }]
    : [{ op: 'add', path: '/metadata/annotations', value: { [TRIVIAL_ANNOTATION]: 'true' } }];
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: {
      uid: request.uid,
      allowed: true,
      patchType: 'JSONPatch',
      patch: Buffer.from(JSON.stringify([...patch, ...extraOps])).toString('base64'),
    },
  });
}

function main(): void {
  const env = (name: string): string => {
    const v = process.env[name];
    if (!v) throw new Error(`${name} is not set`);
    return v;
  };
  const extraFile = process.env.TRIVIAL_WEBHOOK_EXTRA_OPS;
  const extraOps = extraFile ? (JSON.parse(readFileSync(extraFile, 'utf8')) as object[]) : [];
  const server = https.createServer(
    { cert: readFileSync(env('TRIVIAL_WEBHOOK_CERT')), key: readFileSync(env('TRIVIAL_WEBHOOK_KEY')) },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let answer: string;
        try {
          answer = trivialAnswer(Buffer.concat(chunks).toString(), extraOps);
        } catch (err) {
          res.writeHead(400, { 'Content-Type': 'text/plain' });
          return void res.end(String(err));
        }
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(answer) });
        res.end(answer);
      });
    },
  );
  // The API server keeps its webhook connections open, as it does with ours.
  server.keepAliveTimeout = 120_000;
  server.listen(Number(env('TRIVIAL_WEBHOOK_PORT')), '127.0.0.1', () => console.log('listening'));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}

if (require.main === module) main();
