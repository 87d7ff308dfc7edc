/**
 * Out-of-memory kills as the kubelet reports them (`status.containerStatuses[].lastState.terminated`
 * with reason `OOMKilled`), kept in the controller's slim pod cache and fed to the recommender's OOM
 * bump by the loop. Only the last kill of each container is visible: the kubelet keeps one lastState.
 */
import type { K8sObject } from '../kube/cluster';

export const OOM_REASON = 'OOMKilled';

/** One kill: which container, and when it ended (seconds since the epoch). */
export interface OomKill {
  readonly container: string;
  readonly atS: number;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The containers' last terminations that were OOM kills, with a parseable `finishedAt`. */
export function oomKillsOf(pod: K8sObject): OomKill[] {
  const status = isObject(pod.status) ? pod.status : {};
  const list = Array.isArray(status.containerStatuses) ? status.containerStatuses : [];
  const out: OomKill[] = [];
  for (const c of list) {
    const t = isObject(c) && isObject(c.lastState) && isObject(c.lastState.terminated) ? c.lastState.terminated : undefined;
    const at = typeof t?.finishedAt === 'string' ? Date.parse(t.finishedAt) : NaN;
    if (t?.reason === OOM_REASON && typeof (c as Json).name === 'string' && Number.isFinite(at))
      out.push({ container: (c as Json).name as string, atS: Math.floor(at / 1000) });
  }
  return out;
}

/** The part of a pod's status the slim cache keeps for {@link oomKillsOf}: nothing when no container was OOM-killed. */
export function slimOomStatuses(pod: K8sObject): { containerStatuses?: Json[] } {
  const kills = oomKillsOf(pod);
  if (kills.length === 0) return {};
  return {
    containerStatuses: kills.map((k) => ({
      name: k.container,
      lastState: { terminated: { reason: OOM_REASON, finishedAt: new Date(k.atS * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') } },
    })),
  };
}
