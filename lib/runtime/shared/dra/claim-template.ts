/**
 * The ResourceClaimTemplate a DRA pool's pod gets its share through: the webhook ensures it in the
 * pod's namespace and names it in the pod's `spec.resourceClaims`, and kube-controller-manager makes
 * each pod's claim from it. One template per namespace and request shape, named after a hash of its
 * spec, so that every replica of a workload (and every workload asking the same) shares one object
 * and the webhook can create it blindly (AlreadyExists means the same spec is there).
 *
 * Only what kube-scheduler's allocator must know travels in the claim: the GPU count, the per-GPU
 * TFLOPS and VRAM to consume, and which GPUs may be chosen. QoS, limits and the container count stay in
 * the share record annotation, which the node agent reads as it does for the device plugin.
 */
import { createHash } from 'node:crypto';
import {
  DRA_API_VERSION,
  DRA_ATTRIBUTES,
  DRA_CAPACITY,
  DRA_DEVICE_CLASS,
  DRA_DRIVER,
  DRA_REQUEST,
  DRA_TEMPLATE_HASH_DIGITS,
  DRA_TEMPLATE_PREFIX,
} from '../../../model/dra';
import { GPU_CATALOG, gpuModelMatches, normalizeGpuProduct } from '../../../model/gpu-catalog';
import { formatBytes } from '../../../k8s/quantity';
import type { KubeObject } from '../../../k8s/object';
import type { ShareRequest } from '../share';

/** A ResourceClaimTemplate as we make it. */
export interface ClaimTemplate extends KubeObject {
  metadata: { name: string; namespace: string };
  spec: { spec: { devices: ClaimDevices } };
}

/** `spec.devices` of a claim: our one request and, for several GPUs, the rule that they differ. */
export interface ClaimDevices {
  requests: Array<{
    name: string;
    exactly: {
      deviceClassName: string;
      allocationMode: 'ExactCount';
      count: number;
      capacity?: { requests: Record<string, string> };
      selectors?: Array<{ cel: { expression: string } }>;
    };
  }>;
  constraints?: Array<{ requests: string[]; distinctAttribute: string }>;
}

/** A device attribute of our driver in a CEL selector. */
function attribute(key: string): string {
  return `device.attributes[${JSON.stringify(DRA_DRIVER)}].${key}`;
}

/**
 * The CEL test for `gpu-model`, with the allocator's rule ({@link gpuModelMatches}): the catalog models
 * it selects by name, family or alias, and, for a GPU the catalog does not know (published under its
 * upper-case product tokens), the same family rule on those tokens.
 */
export function modelSelector(wanted: string): string {
  const model = attribute(DRA_ATTRIBUTES.model);
  const family = normalizeGpuProduct(wanted).join('-');
  const known = GPU_CATALOG.filter((c) => gpuModelMatches(wanted, c.model)).map((c) => c.model);
  const names = JSON.stringify([...new Set([...known, family])]).replace(/,/g, ', ');
  return `${model} in ${names} || ${model}.startsWith(${JSON.stringify(`${family}-`)})`;
}

/** The CEL test for `gpu-indices`. */
export function indexSelector(indices: readonly number[]): string {
  return `${attribute(DRA_ATTRIBUTES.index)} in [${[...new Set(indices)].sort((a, b) => a - b).join(', ')}]`;
}

/**
 * The claim spec's devices for a share. A zero request names no capacity: the device's request
 * policy then takes its default, where a zero would fall below the policy's minimum and make every
 * device ineligible. Several GPUs must be distinct devices, since one device can be allocated many
 * times under consumable capacity.
 */
export function claimDevices(share: ShareRequest): ClaimDevices {
  const requests: Record<string, string> = {};
  if (share.tflopsRequest > 0) requests[DRA_CAPACITY.tflops] = `${share.tflopsRequest}`;
  if (share.vramRequest > 0) requests[DRA_CAPACITY.vram] = formatBytes(Math.ceil(share.vramRequest));
  const selectors = [
    ...(share.gpuModel !== undefined ? [modelSelector(share.gpuModel)] : []),
    ...(share.gpuIndices !== undefined ? [indexSelector(share.gpuIndices)] : []),
  ].map((expression) => ({ cel: { expression } }));
  return {
    requests: [
      {
        name: DRA_REQUEST,
        exactly: {
          deviceClassName: DRA_DEVICE_CLASS,
          allocationMode: 'ExactCount',
          count: share.gpuCount,
          ...(Object.keys(requests).length > 0 ? { capacity: { requests } } : {}),
          ...(selectors.length > 0 ? { selectors } : {}),
        },
      },
    ],
    ...(share.gpuCount > 1
      ? { constraints: [{ requests: [DRA_REQUEST], distinctAttribute: `${DRA_DRIVER}/${DRA_ATTRIBUTES.uuid}` }] }
      : {}),
  };
}

/** The template's name for a claim spec: deterministic, so equal shapes meet in one object. */
export function claimTemplateName(devices: ClaimDevices): string {
  const hash = createHash('sha256').update(JSON.stringify(devices)).digest('hex');
  return `${DRA_TEMPLATE_PREFIX}${hash.slice(0, DRA_TEMPLATE_HASH_DIGITS)}`;
}

/** The ResourceClaimTemplate for a share in a namespace. */
export function claimTemplate(namespace: string, share: ShareRequest): ClaimTemplate {
  const devices = claimDevices(share);
  return {
    apiVersion: DRA_API_VERSION,
    kind: 'ResourceClaimTemplate',
    metadata: { name: claimTemplateName(devices), namespace },
    spec: { spec: { devices } },
  };
}
