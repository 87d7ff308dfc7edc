/**
 * Issue 14 on the real API server: generated TensorFusionWorkloads are owned by their pods' top owner
 * and collected by the garbage collector with it; an orphan is deleted by the controller; warnings
 * reach kubectl; a pod contradicting a hand-written workload it reuses is refused with both values.
 * No scheduler runs: admission and workload generation need the pods to exist, not to run.
 */
import { ENABLED_LABEL, GENERATED_WORKLOAD_LABEL } from '../../lib/model/metadata-keys';
import { API_VERSION } from '../../lib/model/group';
import { renderGpuPool } from '../../lib/render/gpu-pool';
import { describeControlPlane, waitFor } from '../support/control-plane';
import { controllerSuite, installController, type Obj, RunningController, writeYaml } from '../support/e2e';
import { eventually } from '../runtime/fixtures';

const { synth, user } = controllerSuite(120_000);

const POOL = 'admission';
const NS = 'apps-14';
/** A namespace enforcing Pod Security "restricted". */
const RESTRICTED = 'restricted-14';
const REMOTE = {
  'tensor-fusion.ai/gpupool': POOL,
  'tensor-fusion.ai/is-local-gpu': 'false',
  'tensor-fusion.ai/tflops-request': '10',
  'tensor-fusion.ai/vram-request': '1Gi',
};
const podTemplate = (annotations: Record<string, string>) => ({
  metadata: { labels: { [ENABLED_LABEL]: 'true', app: 'web' }, annotations },
  spec: { containers: [{ name: 'main', image: 'example.io/app:1' }] },
});

describeControlPlane('admission and generated workloads (issue 14)', { controllerManager: true, users: [user] }, (cp) => {
  let ctl: RunningController;
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
  const exists = async (args: string[]) => (await cp().kubectl(['get', ...args, '-o', 'name'])).code === 0;
  const create = (o: Obj) => cp().kubectl(['create', '-f', '-'], { input: JSON.stringify(o) });

  beforeAll(async () => {
    ctl = await installController(cp(), synth.controller, synth.dir, { replicas: 1 });
    await cp().kubectlOk([
      'apply',
      '--server-side',
      '-f',
      writeYaml(synth.dir, 'admission.yaml', [
        renderGpuPool(POOL, {}),
        renderGpuPool(`${POOL}-worker`, { workerImage: 'example.io/worker:1' }),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
        {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: RESTRICTED, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
        },
      ]),
    ]);
    await waitFor('controller ready', () => ctl.replicas[0].ready(), 60_000, 200);
  }, 180_000);

  afterAll(async () => {
    await ctl?.stop();
  });

  test("a Deployment's generated workload is owned by the Deployment and collected with it", async () => {
    expect(
      (
        await create({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: NS },
          spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: podTemplate(REMOTE) },
        })
      ).code,
    ).toBe(0);
    const deployment = await get(['deployment', '-n', NS, 'web']);
    await eventually(async () => {
      const wl = await get(['tensorfusionworkload', '-n', NS, 'web']);
      expect(wl.metadata.labels[GENERATED_WORKLOAD_LABEL]).toBe('true');
      expect(wl.metadata.ownerReferences).toEqual([
        { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: deployment.metadata.uid },
      ]);
    }, 60_000);
    await cp().kubectlOk(['delete', 'deployment', '-n', NS, 'web', '--wait=false']);
    await eventually(async () => expect(await exists(['tensorfusionworkload', '-n', NS, 'web'])).toBe(false), 60_000);
  });

  test('a generated workload with no owner and no pod is deleted by the controller', async () => {
    expect(
      (
        await create({
          apiVersion: API_VERSION,
          kind: 'TensorFusionWorkload',
          metadata: { name: 'orphan', namespace: NS, labels: { [GENERATED_WORKLOAD_LABEL]: 'true' } },
          spec: { poolName: POOL, isLocalGPU: false, replicas: 0 },
        })
      ).code,
    ).toBe(0);
    await eventually(async () => expect(await exists(['tensorfusionworkload', '-n', NS, 'orphan'])).toBe(false), 60_000);
  });

  test('kubectl prints the warnings: an upstream key not acted on, remote mode without a worker image', async () => {
    const r = await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'warned', namespace: NS, ...podTemplate({ ...REMOTE, 'tensor-fusion.ai/gang-enabled': 'true' }).metadata },
      spec: podTemplate({}).spec,
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('Warning: tensor-fusion.ai/gang-enabled: "true" is not acted on: there is no gang scheduling');
    expect(r.stderr).toContain(
      `Warning: tensor-fusion.ai/is-local-gpu: remote mode, but GPUPool "${POOL}" names no worker image (spec.componentConfig.worker), so TensorFusionWorkload ${NS}/warned gets no worker pods and this pod no GPU until one is set`,
    );
    // A bare pod owns its own workload: deleting it collects the workload.
    const pod = await get(['pod', '-n', NS, 'warned']);
    await eventually(
      async () =>
        expect((await get(['tensorfusionworkload', '-n', NS, 'warned'])).metadata.ownerReferences).toEqual([
          { apiVersion: 'v1', kind: 'Pod', name: 'warned', uid: pod.metadata.uid },
        ]),
      60_000,
    );
    await cp().kubectlOk(['delete', 'pod', '-n', NS, 'warned', '--grace-period=0', '--force']);
    await eventually(async () => expect(await exists(['tensorfusionworkload', '-n', NS, 'warned'])).toBe(false), 60_000);
  });

  test('a pod contradicting a hand-written workload it reuses is refused with both values, and the workload is unchanged', async () => {
    const fixed = {
      apiVersion: API_VERSION,
      kind: 'TensorFusionWorkload',
      metadata: { name: 'fixed', namespace: NS },
      spec: {
        poolName: POOL,
        isLocalGPU: false,
        replicas: 2,
        qos: 'high',
        resources: { requests: { tflops: '50', vram: '1Gi' }, limits: { tflops: '50', vram: '1Gi' } },
      },
    };
    expect((await create(fixed)).code).toBe(0);
    const contra = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'contra', namespace: NS, ...podTemplate({ ...REMOTE, 'tensor-fusion.ai/workload': 'fixed' }).metadata },
      spec: podTemplate({}).spec,
    };
    // The webhook reads workloads from its cache only: until the watch brings `fixed`, a pod is
    // admitted as generating it (and the controller leaves the hand-written one as it is).
    let r = await create(contra);
    await eventually(async () => {
      if (r.code === 0) {
        await cp().kubectlOk(['delete', 'pod', '-n', NS, 'contra', '--grace-period=0', '--force']);
        r = await create(contra);
      }
      expect(r.code).not.toBe(0);
    });
    expect(r.stderr).toContain('tensor-fusion.ai/qos: got "medium", expected "high", the spec.qos of TensorFusionWorkload apps-14/fixed');
    expect(r.stderr).toContain(
      'tensor-fusion.ai/tflops-request: got "10", expected "50", the spec.resources.requests.tflops of TensorFusionWorkload apps-14/fixed',
    );
    expect((await get(['tensorfusionworkload', '-n', NS, 'fixed'])).spec).toMatchObject(fixed.spec);
  });

  test('a namespace enforcing Pod Security "restricted" admits a pod with the injected worker init container', async () => {
    const compliant = {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    };
    const r = await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'nsw',
        namespace: RESTRICTED,
        labels: { [ENABLED_LABEL]: 'true' },
        annotations: {
          'tensor-fusion.ai/gpupool': `${POOL}-worker`,
          'tensor-fusion.ai/is-local-gpu': 'true',
          'tensor-fusion.ai/no-standalone-worker-mode': 'true',
          'tensor-fusion.ai/tflops-request': '10',
          'tensor-fusion.ai/vram-request': '1Gi',
        },
      },
      spec: { containers: [{ name: 'main', image: 'example.io/app:1', securityContext: compliant }] },
    });
    expect(r.stderr).not.toContain('violate PodSecurity');
    expect(r.code).toBe(0);
    expect((await get(['pod', '-n', RESTRICTED, 'nsw'])).spec.initContainers[0]).toMatchObject({
      name: 'tensor-fusion-worker',
      securityContext: compliant,
    });
  });
});
