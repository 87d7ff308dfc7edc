/**
 * A share daemon's own cgroups on a cgroup v1 node (lib/runtime/agent/mps/daemon-cgroup-v1.ts)
 * against a fake tree of hierarchies (plain files in a temporary folder): the share's cgroup made in
 * each, the memory limit in the memory hierarchy, a new cpuset given its parent's CPUs and memory
 * nodes, the pid written to `cgroup.procs`, the move read back through /proc, the folders removed.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { moveIntoV1Cgroups, removeV1Cgroups } from '../../../lib/runtime/agent/mps/daemon-cgroup-v1';

let root: string;
let hierarchies: string[];
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'tf-daemon-cgroup-v1-'));
  hierarchies = ['cpuset', 'memory', 'pids', 'systemd'].map((h) => join(root, h));
  for (const h of hierarchies) mkdirSync(h);
  writeFileSync(join(root, 'memory', 'memory.limit_in_bytes'), '9223372036854771712\n');
  writeFileSync(join(root, 'cpuset', 'cpuset.cpus'), '0-15\n');
  writeFileSync(join(root, 'cpuset', 'cpuset.mems'), '0-1\n');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** The files the kernel gives a new cpuset cgroup: empty. */
function emptyCpuset(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'cpuset.cpus'), '\n');
  writeFileSync(join(dir, 'cpuset.mems'), '\n');
}

test("each hierarchy gets <name>/<share> with the pid; the memory one its limit; a cpuset its parent's CPUs and nodes", async () => {
  emptyCpuset(join(root, 'cpuset', 'tf'));
  emptyCpuset(join(root, 'cpuset', 'tf', 'pod-a'));
  expect(await moveIntoV1Cgroups({ hierarchies, name: 'tf', memoryBytes: 512 * 2 ** 20 }, 'pod-a', 4242)).toBe(true);
  for (const h of hierarchies) expect(readFileSync(join(h, 'tf', 'pod-a', 'cgroup.procs'), 'utf8')).toBe('4242');
  expect(readFileSync(join(root, 'memory', 'tf', 'pod-a', 'memory.limit_in_bytes'), 'utf8')).toBe('536870912');
  expect(existsSync(join(root, 'pids', 'tf', 'pod-a', 'memory.limit_in_bytes'))).toBe(false);
  for (const d of ['tf', join('tf', 'pod-a')]) {
    expect(readFileSync(join(root, 'cpuset', d, 'cpuset.cpus'), 'utf8')).toBe('0-15');
    expect(readFileSync(join(root, 'cpuset', d, 'cpuset.mems'), 'utf8')).toBe('0-1');
  }
  // A cpuset already set (by an earlier share, or by hand) is left as it is.
  emptyCpuset(join(root, 'cpuset', 'tf', 'pod-b'));
  writeFileSync(join(root, 'cpuset', 'tf', 'pod-b', 'cpuset.cpus'), '2-3\n');
  await moveIntoV1Cgroups({ hierarchies, name: 'tf', memoryBytes: 2 ** 30 }, 'pod-b', 4343);
  expect(readFileSync(join(root, 'cpuset', 'tf', 'pod-b', 'cpuset.cpus'), 'utf8')).toBe('2-3\n');
});

test('without a memory hierarchy: moved, without a limit (false)', async () => {
  expect(await moveIntoV1Cgroups({ hierarchies: [join(root, 'pids')], name: 'tf', memoryBytes: 2 ** 30 }, 'pod-a', 4242)).toBe(false);
});

test('a cgroup that cannot be written fails with the pid and the folder (the daemon would die with the agent)', async () => {
  mkdirSync(join(root, 'pids', 'tf', 'pod-a', 'cgroup.procs'), { recursive: true });
  await expect(moveIntoV1Cgroups({ hierarchies, name: 'tf', memoryBytes: 2 ** 30 }, 'pod-a', 4242)).rejects.toThrow(
    `moving the daemon (pid 4242) into ${join(root, 'pids', 'tf', 'pod-a')}: EISDIR: illegal operation on a directory, open '${join(root, 'pids', 'tf', 'pod-a', 'cgroup.procs')}'`,
  );
});

test('read back through /proc: a v1 cgroup the move did not reach fails, naming it', async () => {
  const proc = join(root, 'proc');
  mkdirSync(join(proc, '4242'), { recursive: true });
  const cg = { hierarchies: [join(root, 'memory'), join(root, 'pids')], name: 'tf', memoryBytes: 2 ** 30, procRoot: proc };
  writeFileSync(join(proc, '4242', 'cgroup'), '5:pids:/tf/pod-a\n4:memory:/tf/pod-a\n0::/tf/pod-a\n');
  await expect(moveIntoV1Cgroups(cg, 'pod-a', 4242)).resolves.toBe(true);
  writeFileSync(
    join(proc, '4242', 'cgroup'),
    '6:devices:/kubepods/pod1/agent\n5:pids:/tf/pod-a\n4:memory:/tf/pod-a\n0::/kubepods/pod1/agent\n',
  );
  await expect(moveIntoV1Cgroups(cg, 'pod-a', 4242)).rejects.toThrow(
    `the daemon (pid 4242) is still in 6:devices:/kubepods/pod1/agent after its move into tf/pod-a of ${cg.hierarchies.join(', ')}: a cgroup v1 hierarchy the host's cgroup mount does not show`,
  );
});

test("removal: each hierarchy's share folder goes; one already gone is no error", async () => {
  await moveIntoV1Cgroups({ hierarchies, name: 'tf', memoryBytes: 2 ** 30 }, 'pod-a', 4242);
  for (const h of hierarchies)
    for (const f of ['cgroup.procs', 'memory.limit_in_bytes', 'cpuset.cpus', 'cpuset.mems'])
      rmSync(join(h, 'tf', 'pod-a', f), { force: true });
  rmSync(join(root, 'pids', 'tf', 'pod-a'), { recursive: true });
  await removeV1Cgroups({ hierarchies, name: 'tf' }, 'pod-a');
  for (const h of hierarchies) expect(existsSync(join(h, 'tf', 'pod-a'))).toBe(false);
  expect(existsSync(join(root, 'memory', 'tf'))).toBe(true);
});
