/**
 * The API client's keep-alive agent over real TLS on loopback: the CA, certificate and key are parsed
 * once for the agent, not again for each connection it opens, and the server is still verified.
 */
import type { AddressInfo } from 'node:net';
import * as https from 'node:https';
// The module object itself (a namespace import's properties cannot be spied on): tls.connect calls through it.
import tls from 'node:tls';
import { keepAliveAgent } from '../../../lib/runtime/kube/http-cluster';
import { createCa } from '../../../lib/runtime/serving/certificates';
import { SERVICE_HOST, testPki } from '../webhook/fixtures';

const { ca, serving } = testPki();

/** GETs / through the agent, checking the certificate's name; resolves with the status code. */
function get(agent: https.Agent, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port, path: '/', agent, servername: SERVICE_HOST }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

describe('keepAliveAgent', () => {
  let server: https.Server;
  let port: number;
  let sockets = 0;

  beforeAll(async () => {
    // Each answer waits, so that parallel requests need sockets of their own.
    server = https.createServer({ cert: serving.cert, key: serving.key }, (_req, res) => setTimeout(() => res.end('ok'), 50));
    server.on('secureConnection', () => {
      sockets++;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  afterEach(() => jest.restoreAllMocks());

  it('builds one TLS context for all its connections', async () => {
    const contexts = jest.spyOn(tls, 'createSecureContext');
    const agent = keepAliveAgent(`https://127.0.0.1:${port}`, { ca: ca.cert }) as https.Agent;
    const before = sockets;
    expect(await Promise.all([1, 2, 3].map(() => get(agent, port)))).toEqual([200, 200, 200]);
    expect(sockets - before).toBe(3);
    expect(contexts).toHaveBeenCalledTimes(1);
    agent.destroy();
  });

  it('still verifies the server against the CA it was given', async () => {
    const agent = keepAliveAgent(`https://127.0.0.1:${port}`, { ca: createCa('another-ca').cert }) as https.Agent;
    await expect(get(agent, port)).rejects.toThrow('unable to verify the first certificate');
    agent.destroy();
  });
});
