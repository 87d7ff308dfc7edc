/**
 * The node harness itself: a node with a running pod changes the host (a kernel sysctl, the
 * /kubepods cgroups, containerd's daemonized shims, bind mounts over fixed paths), and stopping it
 * undoes every change, so no run leaves anything behind. (What a killed run left is undone by the next
 * node's start: seen by SIGKILLing a run of faults.test.ts mid-suite, then running this file.)
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { ControlPlane, controlPlaneAvailable } from '../../support/control-plane';
import { busyboxContainer, defaultServiceAccount, RealNode, realNodeAvailable } from '../../support/node';
import { globalSysctls, HOST_STATE_FILE, mountsUnder, nodeCgroupDirs, readHostState } from '../../support/node/host';
import { eventually } from '../../runtime/fixtures';

jest.setTimeout(180_000);

const FILE = 'test/e2e/node/harness.test.ts';
const OPTS = { node: true, controllerManager: true };

/** Processes whose command line names `marker`. */
function processesNaming(marker: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

(controlPlaneAvailable(FILE, OPTS) && realNodeAvailable(FILE) ? describe : describe.skip)('the real-node harness', () => {
  test('a node with a running pod changes the host; stopping it puts everything back', async () => {
    // What the host had before any node: recorded by an earlier run that was killed, else as it is now.
    const before = { ...globalSysctls(), ...readHostState(HOST_STATE_FILE).sysctls };
    const cp = await ControlPlane.start(OPTS);
    let node: RealNode | undefined;
    try {
      node = await RealNode.start(cp);
      await defaultServiceAccount(cp, 'default');
      await cp.kubectlOk(['create', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'probe', namespace: 'default' },
          spec: { nodeName: node.name, terminationGracePeriodSeconds: 0, containers: [busyboxContainer('c')] },
        }),
      });
      await eventually(
        async () => expect(JSON.parse(await cp.kubectlOk(['get', 'pod', 'probe', '-o', 'json'])).status.phase).toBe('Running'),
        60_000,
        500,
      );
      // While it runs: the kubelet's sysctl, its cgroups, the pod's shim, the bind mounts.
      expect(globalSysctls()['vm/overcommit_memory']).toBe('1');
      expect(nodeCgroupDirs().some((d) => d.includes('/kubepods/'))).toBe(true);
      expect(processesNaming(node.socket).length).toBeGreaterThan(0);
      expect(mountsUnder(['/var/lib/kubelet']).length).toBeGreaterThan(1);
    } finally {
      await node?.stop();
      await cp.stop();
    }
    expect(globalSysctls()).toEqual(before);
    expect(nodeCgroupDirs()).toEqual([]);
    expect(processesNaming(node!.socket)).toEqual([]);
    expect(mountsUnder(['/var/lib/kubelet', '/run/containerd', '/var/lib/cni', '/var/log/pods', '/var/log/containers', node!.dir])).toEqual(
      [],
    );
    if (!process.env.TF_ENVTEST_KEEP) expect(existsSync(node!.dir)).toBe(false);
  });
});
