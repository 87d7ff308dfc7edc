/**
 * The Pod Security Standards "restricted" profile (Kubernetes docs, pod-security-standards), as a
 * checker over a pod spec: returns every violation found, empty when the pod is admissible.
 */
type Obj = Record<string, any>;

const ALLOWED_VOLUMES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);

export function restrictedViolations(pod: Obj): string[] {
  const out: string[] = [];
  const psc: Obj = pod.securityContext ?? {};
  for (const host of ['hostNetwork', 'hostPID', 'hostIPC']) if (pod[host]) out.push(`${host} is set`);
  for (const v of pod.volumes ?? []) {
    const type = Object.keys(v).find((k) => k !== 'name');
    if (!type || !ALLOWED_VOLUMES.includes(type)) out.push(`volume ${v.name} has type ${type}`);
  }
  for (const s of psc.sysctls ?? []) if (!SAFE_SYSCTLS.has(s.name)) out.push(`unsafe sysctl ${s.name}`);
  if (psc.runAsUser === 0) out.push('pod runAsUser is 0');
  const podSeccomp = psc.seccompProfile?.type;
  const containers: Obj[] = [...(pod.initContainers ?? []), ...(pod.containers ?? []), ...(pod.ephemeralContainers ?? [])];
  for (const c of containers) {
    const sc: Obj = c.securityContext ?? {};
    const at = `container ${c.name}`;
    if (sc.privileged) out.push(`${at} is privileged`);
    if (sc.allowPrivilegeEscalation !== false) out.push(`${at} allows privilege escalation`);
    if (!(sc.runAsNonRoot ?? psc.runAsNonRoot)) out.push(`${at} may run as root`);
    if (sc.runAsUser === 0) out.push(`${at} runAsUser is 0`);
    const seccomp = sc.seccompProfile?.type ?? podSeccomp;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') out.push(`${at} has seccomp ${seccomp}`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) out.push(`${at} does not drop ALL capabilities`);
    for (const cap of sc.capabilities?.add ?? []) if (cap !== 'NET_BIND_SERVICE') out.push(`${at} adds ${cap}`);
    for (const p of c.ports ?? []) if (p.hostPort) out.push(`${at} uses hostPort ${p.hostPort}`);
    if (sc.procMount && sc.procMount !== 'Default') out.push(`${at} procMount ${sc.procMount}`);
    const apparmor = sc.appArmorProfile?.type;
    if (apparmor && apparmor !== 'RuntimeDefault' && apparmor !== 'Localhost') out.push(`${at} AppArmor ${apparmor}`);
  }
  return out;
}
