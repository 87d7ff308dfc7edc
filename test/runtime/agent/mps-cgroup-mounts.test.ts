/**
 * A node's cgroup hierarchies from a mount table (lib/runtime/agent/mps/cgroup-mounts.ts): mount
 * tables as an agent container sees them, the host's /sys/fs/cgroup mounted at /host-cgroup, on a
 * cgroup v1 host, a hybrid host (the test node's) and a cgroup v2 host.
 */
import { cgroupV1Hierarchies, daemonCgroupLayout, inCgroup2, mountOf, parseMountinfo } from '../../../lib/runtime/agent/mps/cgroup-mounts';

const HYBRID = [
  '1510 1490 0:215 / / ro,relatime master:1 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w',
  '1522 1510 0:28 / /host-cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '1523 1522 0:29 / /host-cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
  '1524 1522 0:32 / /host-cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '1525 1522 0:36 / /host-cgroup/pids rw,relatime - cgroup cgroup rw,pids',
  '1526 1522 0:37 / /host-cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd',
  '1527 1522 0:38 / /host-cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  // The same memory hierarchy mounted again, and the container's own cgroups (not the host's).
  '1528 1522 0:32 / /host-cgroup/memory\\040again rw,relatime - cgroup cgroup rw,memory',
  '1540 1510 0:32 /kubepods/pod1/c1 /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory',
  '1541 1522 0:38 /tensor-fusion-mps /daemon-cgroup rw,relatime - cgroup2 cgroup2 rw',
  '1542 1510 0:28 /tensor-fusion-mps /daemon-cgroup-v1 rw,relatime - tmpfs tmpfs rw,mode=755',
].join('\n');

const V2 = [
  '30 1 0:25 / / rw - ext4 /dev/sda1 rw',
  '40 30 0:27 / /host-cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot',
  '41 30 0:27 /tensor-fusion-mps /daemon-cgroup rw - cgroup2 cgroup2 rw,nsdelegate',
].join('\n');

test('the mounts of a mountinfo text: mount point (unescaped), fs type, device', () => {
  expect(parseMountinfo(HYBRID).slice(1, 3)).toEqual([
    { mountPoint: '/host-cgroup', fsType: 'tmpfs', device: '0:28' },
    { mountPoint: '/host-cgroup/cpu,cpuacct', fsType: 'cgroup', device: '0:29' },
  ]);
  expect(parseMountinfo(HYBRID)[7].mountPoint).toBe('/host-cgroup/memory again');
  expect(parseMountinfo('not a mount line\n\n')).toEqual([]);
});

test('v1 hierarchies: those under the host mount, one per hierarchy; none on a cgroup v2 host', () => {
  const hybrid = parseMountinfo(HYBRID);
  expect(cgroupV1Hierarchies(hybrid, '/host-cgroup')).toEqual([
    '/host-cgroup/cpu,cpuacct',
    '/host-cgroup/memory',
    '/host-cgroup/pids',
    '/host-cgroup/systemd',
  ]);
  expect(cgroupV1Hierarchies(hybrid, '/host-cgroup/')).toHaveLength(4);
  expect(cgroupV1Hierarchies(hybrid, '/elsewhere')).toEqual([]);
  expect(cgroupV1Hierarchies(parseMountinfo(V2), '/host-cgroup')).toEqual([]);
});

test('a folder is in cgroup v2 only where the deepest mount holding it is cgroup2 (a v1 host tmpfs is not)', () => {
  const hybrid = parseMountinfo(HYBRID);
  expect(inCgroup2(hybrid, '/daemon-cgroup')).toBe(true);
  expect(inCgroup2(hybrid, '/host-cgroup/unified/tensor-fusion-mps')).toBe(true);
  expect(inCgroup2(hybrid, '/daemon-cgroup-v1')).toBe(false);
  expect(inCgroup2(hybrid, '/host-cgroup/tensor-fusion-mps')).toBe(false);
  expect(inCgroup2(hybrid, '/host-cgroupx')).toBe(false);
  expect(mountOf(hybrid, '/host-cgroupx')?.mountPoint).toBe('/');
  expect(inCgroup2(parseMountinfo(V2), '/daemon-cgroup')).toBe(true);
  expect(inCgroup2([], '/daemon-cgroup')).toBe(false);
});

test('the layout: v2 folder and v1 hierarchies on a hybrid node, v1 only on a v1 node, v2 only on a v2 node', () => {
  const given = { daemonCgroup: '/daemon-cgroup', hostCgroup: '/host-cgroup', name: 'tensor-fusion-mps' };
  const v1Folders = {
    hierarchies: ['/host-cgroup/cpu,cpuacct', '/host-cgroup/memory', '/host-cgroup/pids', '/host-cgroup/systemd'],
    name: 'tensor-fusion-mps',
  };
  expect(daemonCgroupLayout(parseMountinfo(HYBRID), given)).toEqual({ daemonCgroup: '/daemon-cgroup', daemonCgroupsV1: v1Folders });
  expect(daemonCgroupLayout(parseMountinfo(HYBRID), { ...given, daemonCgroup: '/daemon-cgroup-v1' })).toEqual({
    daemonCgroupsV1: v1Folders,
  });
  expect(daemonCgroupLayout(parseMountinfo(V2), given)).toEqual({ daemonCgroup: '/daemon-cgroup' });
  expect(daemonCgroupLayout(parseMountinfo(HYBRID), { daemonCgroup: '/daemon-cgroup' })).toEqual({ daemonCgroup: '/daemon-cgroup' });
});
