/**
 * The quota race, as the quota suites run it on either delivery path (test/e2e/quotas.test.ts for
 * device-plugin shares, test/e2e/dra-quotas.test.ts for DRA claims): many pods of 1 TFLOPS created at
 * once against a namespace quota with room for half of them; exactly half bind, the rest wait Pending
 * with the quota's reason; deleting some bound pods lets exactly as many more bind.
 */
import { API_VERSION } from '../../lib/model/group';
import type { K8sObject } from '../../lib/runtime/kube/cluster';
import { RESOURCES } from '../../lib/runtime/kube/resources';
import type { ControlPlane } from './control-plane';
import type { Obj } from './control-plane/install';
import { eventually } from './poll';

/** The quota the suites name in their messages. */
export const QUOTA_NAME = 'team-a-gpus';

/** A GPUResourceQuota of `namespace` with `spec`. */
export function gpuQuota(namespace: string, spec: Obj, name = QUOTA_NAME): Obj {
  return { apiVersion: API_VERSION, kind: 'GPUResourceQuota', metadata: { name, namespace }, spec };
}

/** The GPU pods (`app=gpu`) of `namespace`: how many are bound, how many wait, and the pods. */
export async function gpuPodCounts(cp: ControlPlane, namespace: string): Promise<{ bound: number; pending: number; pods: Obj[] }> {
  const pods = JSON.parse(await cp.kubectlOk(['get', 'pods', '-n', namespace, '-l', 'app=gpu', '-o', 'json'])).items as Obj[];
  return { bound: pods.filter((p) => p.spec.nodeName).length, pending: pods.filter((p) => !p.spec.nodeName).length, pods };
}

export interface QuotaRace {
  readonly cp: ControlPlane;
  readonly namespace: string;
  /** Pods created at once; the quota has room for half. */
  readonly pods: number;
  /** Bound pods deleted once half are bound. */
  readonly deleted: number;
  /** A GPU pod of 1 TFLOPS (labelled `app=gpu`). */
  readonly pod: (name: string) => Obj;
  /** Applies the quota (server-side apply of these objects). */
  readonly apply: (docs: Obj[]) => Promise<unknown>;
  /** Checks the bound pods once half are bound (that capacity was never the bound). */
  readonly checkBound: (bound: Obj[]) => Promise<void>;
  /** How long to wait for the binds. */
  readonly timeoutMs: number;
}

/** Runs the race: see the file's comment. */
export async function quotaRace(r: QuotaRace): Promise<void> {
  const room = r.pods / 2;
  const counts = () => gpuPodCounts(r.cp, r.namespace);
  await r.apply([gpuQuota(r.namespace, { total: { requests: { tflops: String(room) } } })]);
  await new Promise((res) => setTimeout(res, 1_000));
  const cluster = r.cp.cluster('admin', 'quota-race');
  const refused = await Promise.all(
    Array.from({ length: r.pods }, (_, i) =>
      cluster.create(RESOURCES.pods, r.pod(`race-${i}`) as K8sObject).then(
        () => undefined,
        (err: Error) => err.message,
      ),
    ),
  );
  expect(refused.filter(Boolean)).toEqual([]);
  await eventually(async () => expect(await counts()).toMatchObject({ bound: room, pending: room }), r.timeoutMs, 1_000);
  // Longer than a scheduling retry: nothing more binds.
  await new Promise((res) => setTimeout(res, 5_000));
  const { pods } = await counts();
  const bound = pods.filter((p) => p.spec.nodeName);
  expect(bound).toHaveLength(room);
  await r.checkBound(bound);
  const waiting = pods.find((p) => !p.spec.nodeName)!;
  await eventually(async () => {
    const pod = JSON.parse(await r.cp.kubectlOk(['get', 'pod', '-n', r.namespace, waiting.metadata.name, '-o', 'json']));
    expect((pod.status.conditions as Obj[] | undefined)?.find((c) => c.type === 'PodScheduled')?.message).toContain(
      `namespace "${r.namespace}" would use ${room + 1} of ${room} TFLOPS requested (GPUResourceQuota "${QUOTA_NAME}")`,
    );
  }, 60_000);
  const victims = bound.slice(0, r.deleted).map((p) => p.metadata.name);
  await r.cp.kubectlOk(['delete', 'pod', '-n', r.namespace, '--grace-period=0', '--force', ...victims]);
  await eventually(async () => expect(await counts()).toMatchObject({ bound: room, pending: room - r.deleted }), r.timeoutMs, 1_000);
  await new Promise((res) => setTimeout(res, 5_000));
  expect(await counts()).toMatchObject({ bound: room, pending: room - r.deleted });
}
