/**
 * The webhook for a pod of a DRA pool (spec.nodeManagerConfig.shareDelivery "DRA"): the pod's claim
 * from a ResourceClaimTemplate instead of the share resource, the template ensured in the pod's
 * namespace before the pod is admitted, the share record as for the device plugin.
 */
import { renderWorkloadProfile } from '../../../lib/render/workload-profile';
import { profile } from '../../../examples/platform';
import { SHARE_ANNOTATION, SHARE_RESOURCE } from '../../../lib/model/metadata-keys';
import { claimTemplate } from '../../../lib/runtime/shared/dra/claim-template';
import { shareOf } from '../../../lib/runtime/shared/share';
import { API_VERSION } from '../../../lib/model/group';
import { workerPod } from '../../../lib/runtime/webhook/workers';
import { SEED_002_ANNOTATIONS } from '../../support/seed';
import { patched, patchOps, pod, post, review, useWebhookSuite, writes } from './fixtures';

const DRA = { nodeManagerConfig: { shareDelivery: 'DRA' } };
const suite = useWebhookSuite(
  [
    { name: 'default-pool', nodes: 1, gpusPerNode: 2, isDefault: true, spec: DRA },
    { name: 'dra-shared', nodes: 1, gpusPerNode: 1, spec: { nodeManagerConfig: { shareDelivery: 'DRA', defaultIsolationMode: 'shared' } } },
  ],
  (double) => {
    double.put('workloadprofiles', renderWorkloadProfile(profile.name!, profile) as never);
    double.put('tensorfusionworkloads', {
      apiVersion: API_VERSION,
      kind: 'TensorFusionWorkload',
      metadata: { name: 'remote', namespace: 'ml' },
      spec: {
        poolName: 'default-pool',
        isLocalGPU: false,
        replicas: 1,
        qos: 'medium',
        resources: { requests: { tflops: '20', vram: '2Gi' }, limits: { tflops: '20', vram: '2Gi' } },
      },
    });
  },
);

const ask = { 'tensor-fusion.ai/is-local-gpu': 'true', 'tensor-fusion.ai/tflops-request': '10', 'tensor-fusion.ai/vram-request': '4Gi' };
const templates = (ns: string) => suite.double.listObjects('resourceclaimtemplates').filter((t: any) => t.metadata.namespace === ns);
const creates = () => writes(suite.double).filter((r) => r.path.includes('/resourceclaimtemplates'));

async function admit(p: ReturnType<typeof pod>, extra: { dryRun?: boolean } = {}) {
  const answer = (await post(suite.webhook.port(), suite.agent, review(p, extra))).body;
  return { answer, pod: patched(p, answer) as any };
}

describe('a DRA pool pod', () => {
  beforeEach(() => (suite.double.requests.length = 0));

  it("seed 002's pod template, unchanged: its claim comes from the template of its share, made in its namespace; no container holds the share resource", async () => {
    const p = pod({ name: 'seed', namespace: 'ml', annotations: { ...SEED_002_ANNOTATIONS } });
    const { answer, pod: out } = await admit(p);
    expect(answer.response.allowed).toBe(true);
    const share = shareOf(out)!;
    expect(share).toMatchObject({ pool: 'default-pool', gpuCount: 1, tflopsRequest: 10, vramRequest: 4 * 2 ** 30, gpuModel: 'A100' });
    const want = claimTemplate('ml', share);
    expect(out.spec.resourceClaims).toEqual([{ name: 'tensor-fusion-gpu', resourceClaimTemplateName: want.metadata.name }]);
    expect(out.spec.containers[0].resources).toEqual({ claims: [{ name: 'tensor-fusion-gpu' }] });
    expect(JSON.stringify(out.spec)).not.toContain(SHARE_RESOURCE);
    expect(out.metadata.annotations[SHARE_ANNOTATION]).toBeDefined();
    expect(templates('ml').map((t) => ({ ...t, metadata: { name: t.metadata.name, namespace: t.metadata.namespace } }))).toEqual([
      { ...want, metadata: { name: want.metadata.name, namespace: 'ml' } },
    ]);
    // Reinvoked on the admitted pod: nothing more to change.
    expect(patchOps((await post(suite.webhook.port(), suite.agent, review(out))).body)).toEqual([]);
  });

  it('shares one template among replicas of one shape, whatever order they come in (AlreadyExists is fine)', async () => {
    const before = templates('apps').length;
    for (const name of ['r1', 'r2', 'r3']) {
      const { answer } = await admit(pod({ name, namespace: 'apps', annotations: ask }));
      expect(answer.response.allowed).toBe(true);
    }
    expect(templates('apps').length).toBe(before + 1);
    // Known to exist once made: the replicas that follow write nothing.
    expect(creates().map((r) => r.status)).toEqual([201]);
  });

  it('makes one template write for pods of one shape admitted at once, not one each', async () => {
    const burst = { ...ask, 'tensor-fusion.ai/tflops-request': '3' };
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => admit(pod({ name: `b${i}`, namespace: 'burst', annotations: burst }))),
    );
    expect(answers.map((a) => a.answer.response.allowed)).toEqual(Array(20).fill(true));
    expect(creates().map((r) => r.status)).toEqual([201]);
    expect(templates('burst')).toHaveLength(1);
  });

  it('creates nothing on a dry run, and a real create after it still makes the template', async () => {
    const p = pod({ generateName: 'dry-', namespace: 'dry', annotations: { ...ask, 'tensor-fusion.ai/vram-request': '5Gi' } } as never);
    const dry = await admit(p, { dryRun: true });
    expect(dry.answer.response.allowed).toBe(true);
    expect(templates('dry')).toEqual([]);
    const real = await admit(p);
    expect(patchOps(real.answer)).toEqual(patchOps(dry.answer));
    expect(templates('dry').map((t) => t.metadata.name)).toEqual([real.pod.spec.resourceClaims[0].resourceClaimTemplateName]);
  });

  it('refuses the pod, naming the template and the cause, when the template cannot be made; the next try succeeds', async () => {
    suite.double.injectFault({ method: 'POST', path: '/resourceclaimtemplates', status: 500 });
    const p = pod({ name: 'f', namespace: 'faulty', annotations: { ...ask, 'tensor-fusion.ai/tflops-request': '7' } });
    const { answer } = await admit(p);
    const name = claimTemplate('faulty', shareOf(patched(p, (await admit(p, { dryRun: true })).answer))!).metadata.name;
    expect(answer.response).toMatchObject({
      allowed: false,
      status: {
        code: 500,
        message:
          `internal error: the pod's ResourceClaimTemplate faulty/${name}, through which its GPU pool delivers the share (DRA), ` +
          'could not be created (500 InternalError: injected fault); the pod is refused rather than left waiting for a claim that cannot be made: create it again',
      },
    });
    expect((await admit(p)).answer.response.allowed).toBe(true);
    expect(templates('faulty').map((t) => t.metadata.name)).toEqual([name]);
  });

  it('gives the claim to each inject container once, and takes the share resource and our claim from every other container', async () => {
    const p = pod({
      name: 'multi',
      namespace: 'apps',
      annotations: { ...ask, 'tensor-fusion.ai/inject-container': 'a,b' },
      containers: ['a', 'b', 'side'],
    }) as any;
    p.spec.containers[0].resources = { claims: [{ name: 'tensor-fusion-gpu' }, { name: 'tensor-fusion-gpu' }, { name: 'mine' }] };
    p.spec.containers[2].resources = { limits: { [SHARE_RESOURCE]: '1' }, claims: [{ name: 'tensor-fusion-gpu' }] };
    p.spec.initContainers = [{ name: 'init', image: 'x', resources: { claims: [{ name: 'tensor-fusion-gpu' }] } }];
    p.spec.resourceClaims = [
      { name: 'mine', resourceClaimName: 'other' },
      { name: 'tensor-fusion-gpu', resourceClaimName: 'stolen' },
    ];
    const { answer, pod: out } = await admit(p);
    expect(answer.response.allowed).toBe(true);
    const template = out.spec.resourceClaims[1].resourceClaimTemplateName;
    expect(out.spec.resourceClaims).toEqual([
      { name: 'mine', resourceClaimName: 'other' },
      { name: 'tensor-fusion-gpu', resourceClaimTemplateName: template },
    ]);
    expect(out.spec.containers.map((c: any) => c.resources)).toEqual([
      { claims: [{ name: 'mine' }, { name: 'tensor-fusion-gpu' }] },
      { claims: [{ name: 'tensor-fusion-gpu' }] },
      { limits: {} },
    ]);
    expect(out.spec.initContainers[0].resources).toEqual({});
    expect(answer.response.warnings).toContain(
      `spec.containers[2].resources: removed ${SHARE_RESOURCE}, which only the webhook gives: this pod holds none (its pool is not hard-isolated or delivers shares by DRA, or it is a remote-GPU client)`,
    );
  });

  it('refuses a pod of a DRA pool whose isolation is shared (the props refuse the pool; the CRD cannot)', async () => {
    const { answer } = await admit(
      pod({ name: 's', namespace: 'apps', annotations: { ...ask, 'tensor-fusion.ai/gpupool': 'dra-shared' } }),
    );
    expect(answer.response.status.message).toBe(
      'GPUPool "dra-shared" spec.nodeManagerConfig.defaultIsolationMode: got "shared", expected "hard" while spec.nodeManagerConfig.shareDelivery is "DRA" (DRA delivers a share with its MPS daemon): fix the pool',
    );
    expect(creates()).toEqual([]);
  });

  it("remote mode: the client pod gets no claim; the workload's worker pod, the local half, gets its claim from the template of its share", async () => {
    const client = await admit(
      pod({
        name: 'client',
        namespace: 'ml',
        annotations: {
          'tensor-fusion.ai/is-local-gpu': 'false',
          'tensor-fusion.ai/tflops-request': '20',
          'tensor-fusion.ai/vram-request': '2Gi',
          'tensor-fusion.ai/workload': 'remote',
        },
      }),
    );
    expect(client.answer.response.status?.message).toBeUndefined();
    expect(client.answer.response.allowed).toBe(true);
    expect(client.pod.spec.resourceClaims).toBeUndefined();
    const workload = suite.double.getObject('tensorfusionworkloads', 'remote', 'ml') as never;
    const pool = {
      ...(suite.double.getObject('gpupools', 'default-pool') as object),
      spec: { ...DRA, componentConfig: { worker: { image: 'w:1' } } },
    };
    const { answer, pod: worker } = await admit(workerPod(workload, pool as never, 0) as never);
    expect(answer.response.status?.message).toBeUndefined();
    expect(answer.response.allowed).toBe(true);
    const share = shareOf(worker)!;
    expect(share).toMatchObject({ pool: 'default-pool', tflopsRequest: 20, vramRequest: 2 * 2 ** 30 });
    expect(worker.spec.resourceClaims).toEqual([
      { name: 'tensor-fusion-gpu', resourceClaimTemplateName: claimTemplate('ml', share).metadata.name },
    ]);
    expect(worker.spec.containers[0].resources).toEqual({ claims: [{ name: 'tensor-fusion-gpu' }] });
  });
});
