/**
 * A share daemon's own cgroup (lib/runtime/agent/mps/daemon-cgroup.ts) against a fake cgroup folder
 * (plain files in a temporary folder): the share's cgroup made, the memory controller passed down
 * and its limit written where the folder has one, the pid written to `cgroup.procs`, from the host's
 * cgroup namespace (through nsenter) when the agent's is another.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { moveIntoCgroup, otherNamespace } from '../../../lib/runtime/agent/mps/daemon-cgroup';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'tf-daemon-cgroup-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

test("with a memory controller: the share's cgroup gets memory.max, the controller is passed down once, the pid lands in cgroup.procs", async () => {
  writeFileSync(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
  writeFileSync(join(root, 'cgroup.subtree_control'), '');
  expect(await moveIntoCgroup({ root, memoryBytes: 512 * 2 ** 20 }, 'pod-a', 4242)).toBe(true);
  expect(readFileSync(join(root, 'cgroup.subtree_control'), 'utf8')).toBe('+memory');
  expect(readFileSync(join(root, 'pod-a', 'memory.max'), 'utf8')).toBe('536870912');
  expect(readFileSync(join(root, 'pod-a', 'cgroup.procs'), 'utf8')).toBe('4242');
  // Already passed down (the kernel then lists it as `memory`): not written again.
  writeFileSync(join(root, 'cgroup.subtree_control'), 'memory\n');
  expect(await moveIntoCgroup({ root, memoryBytes: 2 ** 30 }, 'pod-b', 4343)).toBe(true);
  expect(readFileSync(join(root, 'cgroup.subtree_control'), 'utf8')).toBe('memory\n');
  expect(readFileSync(join(root, 'pod-b', 'memory.max'), 'utf8')).toBe('1073741824');
});

test('without a memory controller (a hybrid cgroup v1 host): moved, without a limit (false)', async () => {
  writeFileSync(join(root, 'cgroup.controllers'), 'hugetlb\n');
  expect(await moveIntoCgroup({ root, memoryBytes: 2 ** 30 }, 'pod-a', 4242)).toBe(false);
  expect(existsSync(join(root, 'pod-a', 'memory.max'))).toBe(false);
  expect(readFileSync(join(root, 'pod-a', 'cgroup.procs'), 'utf8')).toBe('4242');
});

test('a cgroup that cannot be written fails with the pid and the folder (the daemon would die with the agent)', async () => {
  mkdirSync(join(root, 'pod-a', 'cgroup.procs'), { recursive: true });
  await expect(moveIntoCgroup({ root, memoryBytes: 2 ** 30 }, 'pod-a', 4242)).rejects.toThrow(
    `moving the daemon (pid 4242) into ${join(root, 'pod-a')}: EISDIR: illegal operation on a directory, open '${join(root, 'pod-a', 'cgroup.procs')}'`,
  );
});

test('read back through /proc: a folder that is no cgroup v2 moves nothing, and fails saying so', async () => {
  const proc = join(root, 'proc');
  const cgroups = join(root, 'cg');
  mkdirSync(join(proc, '4242'), { recursive: true });
  writeFileSync(join(proc, '4242', 'cgroup'), '4:memory:/kubepods/pod1\n0::/../../tensor-fusion-mps/pod-a\n');
  await expect(moveIntoCgroup({ root: cgroups, memoryBytes: 2 ** 30, procRoot: proc }, 'pod-a', 4242)).resolves.toBe(false);
  writeFileSync(join(proc, '4242', 'cgroup'), '4:memory:/kubepods/pod1\n0::/kubepods/pod1/agent\n');
  await expect(moveIntoCgroup({ root: cgroups, memoryBytes: 2 ** 30, procRoot: proc }, 'pod-a', 4242)).rejects.toThrow(
    `the daemon (pid 4242) is not in ${join(cgroups, 'pod-a')} after the move (its cgroup: 0::/kubepods/pod1/agent): is ${cgroups} a cgroup v2 folder?`,
  );
});

test("the host's cgroup namespace is used only where it is another than the agent's, and readable", async () => {
  const link = (name: string, to: string) => {
    symlinkSync(to, join(root, name));
    return join(root, name);
  };
  const self = link('self', 'cgroup:[4026531835]');
  expect(await otherNamespace(link('same', 'cgroup:[4026531835]'), self)).toBeUndefined();
  expect(await otherNamespace(link('host', 'cgroup:[4026532177]'), self)).toBe(join(root, 'host'));
  expect(await otherNamespace(join(root, 'unreadable'), self)).toBeUndefined();
});

describe('from another cgroup namespace', () => {
  let holder: ChildProcess | undefined;
  afterEach(() => {
    holder?.kill('SIGKILL');
    holder = undefined;
  });

  const canUnshare = process.getuid?.() === 0;
  (canUnshare ? test : test.skip)('the pid is written by a process in the host namespace (nsenter --cgroup)', async () => {
    // A process in a cgroup namespace of its own stands for the host's; the writer must be in it.
    holder = spawn('unshare', ['--cgroup', 'sh', '-c', 'readlink /proc/self/ns/cgroup; exec sleep 60'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const ns = await new Promise<string>((res) => holder!.stdout!.once('data', (d: Buffer) => res(d.toString().trim())));
    const hostNamespace = `/proc/${holder.pid}/ns/cgroup`;
    expect(ns).toMatch(/^cgroup:\[\d+\]$/);
    expect(await otherNamespace(hostNamespace, '/proc/self/ns/cgroup')).toBe(hostNamespace);
    await moveIntoCgroup({ root, memoryBytes: 2 ** 30, hostNamespace }, 'pod-a', 4242);
    expect(readFileSync(join(root, 'pod-a', 'cgroup.procs'), 'utf8')).toBe('4242\n');
  });
});
