/** The in-process API-server double and helpers to point a runtime Cluster at it. */
export * from './server';
export { compileFieldSelector, compileLabelSelector } from './selectors';
export type { Change, Obj } from './store';
import { HttpCluster, keepAliveAgent } from '../../../lib/runtime/kube/http-cluster';
import type { ApiServerDouble } from './server';

/** A Cluster client talking to the double; `userAgent` identifies the writer in `double.requests`. */
export function clusterFor(double: ApiServerDouble, userAgent = 'test-client', requestTimeoutMs = 5000): HttpCluster {
  return new HttpCluster({ server: double.url, agent: keepAliveAgent(double.url), userAgent, requestTimeoutMs });
}
