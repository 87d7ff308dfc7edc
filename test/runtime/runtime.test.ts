/** The process contract: environment validation. */
import { readEnv } from '../../lib/runtime/shared/runtime-context';

describe('readEnv', () => {
  test('defaults', () => {
    expect(readEnv({ POD_NAME: 'p', POD_NAMESPACE: 'tf' })).toEqual({
      podName: 'p',
      namespace: 'tf',
      logLevel: 'info',
      metricsPort: 8080,
      webhookPort: 9443,
      extenderPort: 8888,
      leaderElectionId: 'tensor-fusion-controller',
      tlsSecretName: 'tensor-fusion-webhook-tls',
      webhookConfigName: 'tensor-fusion-webhook',
      webhookServiceName: 'tensor-fusion-webhook',
      webhookExtraNames: [],
      certMode: 'self-managed',
      tlsDir: '/tls',
      nodeAgent: true,
      webView: false,
      dra: false,
    });
    expect(readEnv({ NODE_AGENT: 'false' }).nodeAgent).toBe(false);
    expect(readEnv({ DRA: 'true' }).dra).toBe(true);
    expect(readEnv({ WEB_VIEW: 'true' }).webView).toBe(true);
  });

  test('WEBHOOK_EXTRA_NAMES: comma-separated, blanks dropped', () => {
    expect(readEnv({ WEBHOOK_EXTRA_NAMES: '127.0.0.1, localhost,,' }).webhookExtraNames).toEqual(['127.0.0.1', 'localhost']);
  });

  test('names every bad variable', () => {
    expect(() =>
      readEnv({
        METRICS_PORT: 'abc',
        WEBHOOK_PORT: '70000',
        LOG_LEVEL: 'loud',
        CERT_MODE: 'vault',
        NODE_AGENT: 'yes',
        WEB_VIEW: 'on',
        DRA: '1',
      }),
    ).toThrow(
      'controller environment: LOG_LEVEL: got "loud", expected one of trace, debug, info, warn, error, fatal, silent\n' +
        'CERT_MODE: got "vault", expected one of self-managed, cert-manager\n' +
        'NODE_AGENT: got "yes", expected "true" or "false"\n' +
        'METRICS_PORT: got "abc", expected a port number from 0 to 65535\n' +
        'WEBHOOK_PORT: got "70000", expected a port number from 0 to 65535\n' +
        'WEB_VIEW: got "on", expected "true" or "false"\n' +
        'DRA: got "1", expected "true" or "false"',
    );
  });
});
