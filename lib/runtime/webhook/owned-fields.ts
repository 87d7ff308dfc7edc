/**
 * What the webhook owns on the pods it admits, whatever the user wrote: the share resource (only the
 * inject containers of a `hard` pool's pod hold it, one each, request equal to limit) and, in those
 * containers, the variables the node gives. What it takes away from the pod is said in a warning.
 */
import { SHARE_RESOURCE } from '../../model/metadata-keys';
import { isNodeGivenEnv } from '../shared/pod-share/container-env';
import type { K8sObject } from '../kube/cluster';
import type { PodMutation } from './patch';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

const listOf = (spec: unknown, list: 'containers' | 'initContainers'): unknown[] =>
  isObject(spec) && Array.isArray(spec[list]) ? (spec[list] as unknown[]) : [];

/** The share resource held by exactly `holders` (none outside a `hard` pool), and warnings for every other container that asked for it. */
export function shareResource(pod: K8sObject, holders: readonly string[]): { mutation: PodMutation['ownedResource']; warnings: string[] } {
  const warnings: string[] = [];
  const who =
    holders.length > 0
      ? `only the inject containers (${holders.join(', ')}) hold one each`
      : 'this pod holds none (its pool is not hard-isolated or delivers shares by DRA, or it is a remote-GPU client)';
  for (const list of ['containers', 'initContainers'] as const) {
    listOf(pod.spec, list).forEach((c, i) => {
      if (!isObject(c) || (list === 'containers' && holders.includes(c.name as string))) return;
      const r = isObject(c.resources) ? c.resources : {};
      const asks = [r.requests, r.limits].some((m) => isObject(m) && SHARE_RESOURCE in m);
      if (asks) warnings.push(`spec.${list}[${i}].resources: removed ${SHARE_RESOURCE}, which only the webhook gives: ${who}`);
    });
  }
  return { mutation: { name: SHARE_RESOURCE, amount: '1', holders }, warnings };
}

/** Warnings for the node-given variables the inject containers set themselves (removed by the patch). */
export function nodeGivenEnvWarnings(pod: K8sObject, injectInto: readonly string[]): string[] {
  const warnings: string[] = [];
  listOf(pod.spec, 'containers').forEach((c, i) => {
    if (!isObject(c) || !injectInto.includes(c.name as string) || !Array.isArray(c.env)) return;
    const names = [...new Set(c.env.flatMap((e) => (isObject(e) && typeof e.name === 'string' && isNodeGivenEnv(e.name) ? [e.name] : [])))];
    if (names.length > 0)
      warnings.push(
        `spec.containers[${i}].env: removed ${names.join(', ')}: in a hard-isolated pool the node gives these from the pod's share, and the container's own value would override them`,
      );
  });
  return warnings;
}
