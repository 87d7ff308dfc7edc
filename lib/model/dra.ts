/**
 * Our names in Dynamic Resource Allocation (resource.k8s.io/v1): the driver, its DeviceClass, the
 * capacity and attribute keys of the devices the node agent publishes, and the claim the webhook
 * gives a pod of a DRA pool. One home for each, since the controller's install, the webhook, the node
 * agent and the benches must agree on every one of them.
 */
import { GROUP } from './group';
import { oneOf } from './rules';

/** How a pool's shares reach their pods. */
export const SHARE_DELIVERIES = ['DevicePlugin', 'DRA'] as const;
/** A share delivery. */
export type ShareDelivery = (typeof SHARE_DELIVERIES)[number];
/**
 * Delivery of a pool that sets none: the device plugin, which runs on every Kubernetes the package
 * supports (1.29+) and keeps placement in our extender's fragmentation-aware allocator; DRA needs
 * Kubernetes 1.34+ (consumable capacity is on by default from 1.36) and places by kube-scheduler's
 * first fit.
 */
export const DEFAULT_SHARE_DELIVERY: ShareDelivery = 'DevicePlugin';

/** A pool's share delivery (its CRD admits only SHARE_DELIVERIES). */
export function poolShareDelivery(pool: { spec?: { nodeManagerConfig?: { shareDelivery?: string } } } | undefined): ShareDelivery {
  const d = pool?.spec?.nodeManagerConfig?.shareDelivery;
  return SHARE_DELIVERIES.includes(d as ShareDelivery) ? (d as ShareDelivery) : DEFAULT_SHARE_DELIVERY;
}

/**
 * Why `growth` does nothing for a DRA pool (docs/growth.md, "DRA pools"): its placeholders stand for
 * shares the extender refused for room, and kube-scheduler's claim allocator refuses a DRA share
 * before the extender sees it, in words that name no room.
 */
export const GROWTH_NOT_FOR_DRA =
  "growth counts shares the scheduler extender refused for GPU room, and a DRA share is refused by kube-scheduler's claim allocator instead, so no node would be asked for it";

/** The allowed deliveries, for messages. */
export const SHARE_DELIVERY_ALLOWED = oneOf(SHARE_DELIVERIES);

/** The DRA driver name: ResourceSlices' `spec.driver`, allocation results' `driver`, the kubelet plugin's name. */
export const DRA_DRIVER = `gpu.${GROUP}`;

/** The DeviceClass that selects the driver's devices (named after the driver, as is the custom). */
export const DRA_DEVICE_CLASS = DRA_DRIVER;

/** The capacity keys of a published GPU: FP16 TFLOPS and VRAM bytes (`consumedCapacity` uses the same). */
export const DRA_CAPACITY = { tflops: 'tflops', vram: 'memory' } as const;

/**
 * The attribute keys of a published GPU (addressed in CEL as `device.attributes["gpu.tensor-fusion.ai"].<key>`):
 * its UUID, short model name (lib/model/gpu-catalog.ts), device index, the driver's device minor and its pool.
 */
export const DRA_ATTRIBUTES = { uuid: 'uuid', model: 'model', index: 'index', minor: 'minor', pool: 'pool' } as const;

/** The name of the pod's claim (`spec.resourceClaims[].name`) that holds its share, and of the claim's one request. */
export const DRA_POD_CLAIM = 'tensor-fusion-gpu';
/** The request's name inside the claim. */
export const DRA_REQUEST = 'gpu';

/**
 * The steps of a published GPU's request policy: whole TFLOPS and 1Mi of VRAM (the least VRAM a share
 * may ask, lib/model/limits.ts `VRAM_MIN`). kube-scheduler 1.36 rounds a request up in whole units
 * whatever the step says (dynamic-resource-allocation `roundUpRange` works on `Quantity.Value()`), so
 * a finer TFLOPS step would only pretend: a share of 10.5 TFLOPS consumes 11 of its GPU's TFLOPS (its
 * MPS limits still come from its share record).
 */
export const DRA_STEP = { tflops: '1', vram: '1Mi' } as const;

/** The device taint the node agent puts on a GPU that takes no new claim (its value: why). */
export const DRA_NOT_READY_TAINT = `${DRA_DRIVER}/not-ready`;

/** The API version of Dynamic Resource Allocation objects (GA in Kubernetes 1.34). */
export const DRA_API_VERSION = 'resource.k8s.io/v1';

/**
 * Prefix of the ResourceClaimTemplates the webhook makes (`tf-<12 hex digits of a hash of the claim
 * spec>`, lib/runtime/shared/dra/claim-template.ts); the install's pod policy recognises them by it.
 */
export const DRA_TEMPLATE_PREFIX = 'tf-';
/** Hex digits of the hash in a template's name. */
export const DRA_TEMPLATE_HASH_DIGITS = 12;
