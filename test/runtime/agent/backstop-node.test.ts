/** The backstop wired to a node: Events on the share's pod, and the deletion only of the pod that breached. */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster, EventRecord, K8sObject, ObjectRef } from '../../../lib/runtime/kube/cluster';
import { nodeBackstop } from '../../../lib/runtime/agent/share/backstop-node';
import type { BackstopLoop } from '../../../lib/runtime/agent/share/backstop-loop';
import { bypassTrace, fakeNode, FakeNode, MEMBERS_A, POD_A, replaceTrace, SHARE_A, spawnBypasser, statLine } from './fixtures';

describe('nodeBackstop', () => {
  let node: FakeNode;
  let loop: BackstopLoop | undefined;
  const children = new Map<number, ChildProcess>();
  beforeEach(() => {
    node = fakeNode(undefined, bypassTrace([]));
    writeFileSync(join(node.procRoot, '101', 'stat'), statLine(101, 'python3', 11));
  });
  afterEach(async () => {
    await loop?.stop();
    for (const c of children.values()) c.kill('SIGKILL');
    children.clear();
    node.cleanup();
  });

  /** A cluster that records Events and deletes, and holds pod A under `uid`. */
  const cluster = (uid: string) => {
    const calls = { events: [] as [K8sObject, EventRecord][], deleted: [] as ObjectRef[] };
    const c = {
      recordEvent: async (involved: K8sObject, e: EventRecord) => void calls.events.push([involved, e]),
      get: async (_rt: unknown, ref: ObjectRef) =>
        ref.namespace === POD_A.namespace && ref.name === POD_A.pod ? { metadata: { ...ref, uid } } : undefined,
      delete: async (_rt: unknown, ref: ObjectRef) => (calls.deleted.push(ref), true),
    } as unknown as Cluster;
    return { c, calls };
  };
  const run = async (c: Cluster) => {
    loop = nodeBackstop({
      cluster: c,
      shares: () => [SHARE_A],
      members: async () => MEMBERS_A,
      nvidiaSmi: node.nvidiaSmi,
      procRoot: node.procRoot,
      escalateAfter: 1,
      kill: (pid) => {
        if (!children.has(pid)) throw new Error(`pid ${pid} is not a test process`);
        process.kill(pid, 'SIGKILL');
      },
    });
    await loop.start();
    const b = spawnBypasser(node);
    children.set(b.pid, b.child);
    replaceTrace(node, bypassTrace([b.pid]));
    await b.exited;
    await loop.stop();
  };

  it("records Warning Events on the share's pod and deletes it", async () => {
    const { c, calls } = cluster(POD_A.uid);
    await run(c);
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'ml', name: 'train-0', uid: POD_A.uid } };
    expect(calls.events.map(([involved, e]) => [involved, e.type, e.reason])).toEqual([
      [pod, 'Warning', 'MpsBypassed'],
      [pod, 'Warning', 'MpsBypassRepeated'],
    ]);
    expect(calls.deleted).toEqual([{ namespace: 'ml', name: 'train-0' }]);
  });

  it('deletes nothing when the pod of that name is another one now (a StatefulSet recreated it)', async () => {
    const { c, calls } = cluster('00000000-0000-0000-0000-000000000000');
    await run(c);
    expect(calls.events).toHaveLength(2);
    expect(calls.deleted).toEqual([]);
  });
});
