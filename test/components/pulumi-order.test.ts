/**
 * The example's Pulumi program orders what the cluster needs ordered: every object in the `ml`
 * namespace is sent only once the Namespace exists (the real engine, without that dependency, sent
 * them first and they failed with `namespaces "ml" not found` until the provider retried). Under
 * mocks whose Namespace registration takes a while, as a real API server's does.
 */
import { buildController, buildPlatform } from '../../examples/pulumi/index';
import { NAMESPACE } from '../../examples/platform';
import { capture, registrationLog } from '../support/pulumi-mocks';

test('every object of the example in its namespace is registered after the Namespace is created', async () => {
  const from = registrationLog.length;
  const registered = await capture(() => buildPlatform(buildController()), ['kubernetes:core/v1:Namespace'], 200);
  const log = registrationLog.slice(from);
  const inNamespace = registered.filter((r) => (r.inputs.metadata as { namespace?: string } | undefined)?.namespace === NAMESPACE);
  expect(inNamespace.length).toBeGreaterThanOrEqual(3);
  const created = log.indexOf('done namespace');
  expect(created).toBeGreaterThanOrEqual(0);
  expect(inNamespace.filter((r) => log.indexOf(`start ${r.name}`) < created).map((r) => r.name)).toEqual([]);
});
