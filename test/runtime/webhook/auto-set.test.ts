/**
 * autoSetRequests and autoSetLimits at admission: a new pod gets its workload's recommendation from the
 * cached TensorFusionWorkload (no API call), with a warning naming each old and new value; and every
 * local-mode pod gets the downwardAPI volume of MPS limit files.
 */
import { applyPatch, deepClone } from 'fast-json-patch';
import type { GPUPool, TensorFusionWorkload } from '../../../lib/api';
import { SHARE_ANNOTATION } from '../../../lib/model/metadata-keys';
import type { K8sObject } from '../../../lib/runtime/kube/cluster';
import { shareOf } from '../../../lib/runtime/shared/share';
import { admitPod, AdmissionView } from '../../../lib/runtime/webhook/admit';
import { LIMITS_MOUNT_PATH, LIMITS_VOLUME } from '../../../lib/runtime/shared/pod-share/limits-volume';
import { annotationKey as t } from '../../support/annotations';
import { GiB, pod, review } from './fixtures';

// Shared isolation: the limits-volume tests below are of that mode (under hard isolation the share's daemon holds the limits).
const POOL = {
  apiVersion: 'tensor-fusion.ai/v1',
  kind: 'GPUPool',
  metadata: { name: 'a' },
  spec: { nodeManagerConfig: { defaultIsolationMode: 'shared' } },
} as unknown as GPUPool;

const recommended = (requests: { tflops: string; vram: string }, limits: { tflops: string; vram: string }): TensorFusionWorkload =>
  ({
    apiVersion: 'tensor-fusion.ai/v1',
    kind: 'TensorFusionWorkload',
    metadata: { name: 'web', namespace: 'apps' },
    spec: { poolName: 'a', resources: { requests: { tflops: '10', vram: '8Gi' }, limits: { tflops: '20', vram: '8Gi' } } },
    status: { workerCount: 1, autoscaling: { recommendation: { requests, limits } } },
  }) as unknown as TensorFusionWorkload;

/** A view whose workload is cached; a live read fails the test (none may happen at admission for this). */
function viewWith(cached: TensorFusionWorkload | undefined): AdmissionView & { liveReads: number } {
  const v = {
    liveReads: 0,
    pool: (n: string) => (n === 'a' ? POOL : undefined),
    poolNames: () => ['a'],
    defaultPool: () => 'a',
    profile: async () => undefined,
    async workload() {
      v.liveReads++;
      return cached;
    },
    cachedWorkload: (ns: string, name: string) => (cached && ns === 'apps' && name === 'web' ? cached : undefined),
  };
  return v;
}

const base = {
  [t('is-local-gpu')]: 'true',
  [t('tflops-request')]: '10',
  [t('tflops-limit')]: '20',
  [t('vram-request')]: '8Gi',
  [t('vram-limit')]: '8Gi',
};

async function admit(
  annotations: Record<string, string>,
  view: AdmissionView,
  p: K8sObject = pod({ name: 'p', namespace: 'apps', annotations, ownerReferences: [] }),
) {
  const d = await admitPod(review(p).request!, view);
  if (!d.allowed) throw new Error(d.message);
  const after = applyPatch(deepClone(p), d.patch as never, true, false).newDocument as K8sObject;
  return { d, after, share: shareOf(after)! };
}

describe('recommended requests and limits at admission', () => {
  const rec = recommended({ tflops: '4.5', vram: '2Gi' }, { tflops: '9', vram: '3Gi' });

  test('auto-requests and auto-limits: the share is the recommendation, and a warning names each old and new value', async () => {
    const view = viewWith(rec);
    const { d, share, after } = await admit(
      { ...base, [t('workload')]: 'web', [t('auto-requests')]: 'true', [t('auto-limits')]: 'true' },
      view,
    );
    expect(share).toMatchObject({ tflopsRequest: 4.5, tflopsLimit: 9, vramRequest: 2 * GiB, vramLimit: 3 * GiB });
    expect(d.allowed && d.warnings).toContain(
      'tensor-fusion.ai/tflops-request: 10 became 4.5, tensor-fusion.ai/tflops-limit: 20 became 9, tensor-fusion.ai/vram-request: 8Gi became 2Gi ' +
        'and tensor-fusion.ai/vram-limit: 8Gi became 3Gi, the recommendation in the status of TensorFusionWorkload apps/web (autoSetRequests, autoSetLimits)',
    );
    // The plain variables carry the admitted share too.
    const env = Object.fromEntries(((after.spec as any).containers[0].env as any[]).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      TENSOR_FUSION_TFLOPS_REQUEST: '4.5',
      TENSOR_FUSION_TFLOPS_LIMIT: '9',
      TENSOR_FUSION_VRAM_REQUEST: String(2 * GiB),
    });
  });

  test('auto-requests only: requests follow the recommendation, limits stay, and a limit below the new request is raised to it', async () => {
    const high = recommended({ tflops: '25', vram: '2Gi' }, { tflops: '30', vram: '3Gi' });
    const { d, share } = await admit({ ...base, [t('workload')]: 'web', [t('auto-requests')]: 'true' }, viewWith(high));
    expect(share).toMatchObject({ tflopsRequest: 25, tflopsLimit: 25, vramRequest: 2 * GiB, vramLimit: 8 * GiB });
    expect(d.allowed && d.warnings).toContain(
      'tensor-fusion.ai/tflops-request: 10 became 25, tensor-fusion.ai/tflops-limit: 20 became 25 and tensor-fusion.ai/vram-request: 8Gi became 2Gi, ' +
        'the recommendation in the status of TensorFusionWorkload apps/web (autoSetRequests)',
    );
  });

  test('nothing changes without auto-requests/auto-limits, without a cached workload, or without a recommendation', async () => {
    for (const [annotations, view] of [
      [{ ...base, [t('workload')]: 'web' }, viewWith(rec)],
      [{ ...base, [t('workload')]: 'web', [t('auto-requests')]: 'true' }, viewWith(undefined)],
      [
        { ...base, [t('workload')]: 'web', [t('auto-requests')]: 'true' },
        viewWith({ ...rec, status: { workerCount: 1 } } as TensorFusionWorkload),
      ],
    ] as const) {
      const { d, share } = await admit(annotations, view);
      expect(share).toMatchObject({ tflopsRequest: 10, tflopsLimit: 20, vramRequest: 8 * GiB, vramLimit: 8 * GiB });
      expect((d.allowed && d.warnings) || []).not.toContainEqual(expect.stringContaining('recommendation'));
    }
  });

  test('the recommendation is read from the cache: a workload only the API server has is not applied', async () => {
    const view = viewWith(rec);
    view.cachedWorkload = () => undefined;
    const { share } = await admit({ ...base, [t('workload')]: 'web', [t('auto-requests')]: 'true' }, view);
    expect(share.tflopsRequest).toBe(10);
  });
});

describe('the MPS limits as downward API files', () => {
  test('the volume exposes the MPS limit annotations and is mounted read-only in the inject-container; the env stays', async () => {
    const { after, d } = await admit(base, viewWith(undefined));
    const spec = after.spec as any;
    expect(spec.volumes).toEqual([
      {
        name: LIMITS_VOLUME,
        downwardAPI: {
          items: [
            {
              path: 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT',
              fieldRef: { fieldPath: "metadata.annotations['tensor-fusion.ai/mps-memory-limit']" },
            },
            {
              path: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE',
              fieldRef: { fieldPath: "metadata.annotations['tensor-fusion.ai/mps-thread-percentage']" },
            },
          ],
        },
      },
    ]);
    expect(spec.containers[0].volumeMounts).toEqual([{ name: LIMITS_VOLUME, mountPath: LIMITS_MOUNT_PATH, readOnly: true }]);
    expect((spec.containers[0].env as any[]).map((e) => e.name)).toEqual(
      expect.arrayContaining(['CUDA_MPS_PINNED_DEVICE_MEM_LIMIT', 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE']),
    );
    expect(d.allowed).toBe(true);
    // Reinvoked on the admitted pod: nothing more to add.
    const again = await admitPod(review(after).request!, viewWith(undefined));
    expect(again.allowed && again.patch).toEqual([]);
  });

  test('a volume of the pod with that name that is not ours is refused with its message', async () => {
    const p = pod({ name: 'p', namespace: 'apps', annotations: base });
    (p.spec as any).volumes = [{ name: LIMITS_VOLUME, emptyDir: {} }];
    const d = await admitPod(review(p).request!, viewWith(undefined));
    expect(d).toMatchObject({
      allowed: false,
      code: 403,
      message:
        'spec.volumes[0].name: got "tensor-fusion-limits", expected a name other than "tensor-fusion-limits", which the webhook gives the volume of MPS limit files it adds',
    });
  });

  test('auto-limits only: a recommended limit below the request in force is raised to the request (limit >= request), in the share the extender places', async () => {
    const { after } = await admit(
      { ...base, [t('workload')]: 'web', [t('auto-limits')]: 'true' },
      viewWith(recommended({ tflops: '4.5', vram: '2Gi' }, { tflops: '9', vram: '3Gi' })),
    );
    expect(JSON.parse(after.metadata.annotations![SHARE_ANNOTATION])).toMatchObject({
      tflopsRequest: 10,
      tflopsLimit: 10,
      vramRequest: 8 * GiB,
      vramLimit: 8 * GiB,
    });
  });
});
