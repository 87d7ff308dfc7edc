/**
 * GPU pods on a real node (kubelet, containerd, runc, bridge CNI), in a pool of `shared` isolation
 * (hard isolation's delivery through the node agent is test/e2e/node/isolation.test.ts): what the
 * README promises a container is read inside the running container with `kubectl exec`: the downward-API variables
 * filled from the Binding's annotations, the MPS limit files, refreshed in place by a resize; the
 * worker init container under Pod Security "restricted"; a remote workload's worker pods; and no
 * packet leaving the test network namespace, from the test process or from a pod.
 */
import { IMAGE_REFS } from '../../envtest/images';
import { ALLOCATION_ANNOTATION, ENABLED_LABEL, PLACEMENT_ANNOTATIONS } from '../../../lib/model/metadata-keys';
import { renderGpuNode } from '../../../lib/render/gpu-node';
import { renderGpuPool } from '../../../lib/render/gpu-pool';
import { LIMITS_MOUNT_PATH } from '../../../lib/runtime/shared/pod-share/limits-volume';
import { controllerSuite, installController, type Obj, RunningController, writeYaml } from '../../support/e2e';
import { waitFor } from '../../support/control-plane';
import { busyboxContainer, defaultServiceAccount, describeRealNode, dialOutside, NODE_NAME, OUTSIDE_ADDRESS } from '../../support/node';
import { SEED_002_ANNOTATIONS } from '../../support/seed';
import { eventually } from '../../runtime/fixtures';

const { synth, user } = controllerSuite(240_000);

const NS = 'ml';
const RESTRICTED = 'restricted-apps';
const GPU_NODE = renderGpuNode({
  nodeName: NODE_NAME,
  pools: ['default-pool'],
  gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 2, memory: '80Gi' },
});
/** What Pod Security "restricted" asks of every container. */
const RESTRICTED_CONTAINER = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
const RESTRICTED_POD = { runAsNonRoot: true, runAsUser: 65534, seccompProfile: { type: 'RuntimeDefault' } };

/** Seed 002's Deployment (TensorFusion's documented example), its app container on the node's busybox image. */
function seedDeployment(): Obj {
  const d = synth.platform.find((o) => o.kind === 'Deployment' && o.metadata.name === 'pytorch-example')!;
  const out = structuredClone(d);
  out.spec.template.spec.containers = [busyboxContainer('python')];
  return out;
}

describeRealNode('GPU pods on a real node', { controllerManager: true, scheduler: true, users: [user] }, {}, (h) => {
  let ctl: RunningController;
  const cp = () => h().cp;
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
  const exec = (ns: string, pod: string, script: string, container?: string) =>
    cp().kubectlOk(['exec', '-n', ns, pod, ...(container ? ['-c', container] : []), '--', 'sh', '-c', script]);
  /** The one pod of a label selector once its containers run. */
  const running = async (ns: string, selector: string): Promise<Obj> => {
    let pod: Obj = {};
    await eventually(
      async () => {
        const pods = (await get(['pods', '-n', ns, '-l', selector])).items as Obj[];
        expect(pods.map((p) => p.status.phase)).toEqual(['Running']);
        pod = pods[0];
      },
      120_000,
      500,
    );
    return pod;
  };

  beforeAll(async () => {
    ctl = await installController(cp(), synth.controller, synth.dir, { replicas: 1, schedulers: true });
    // The node as GpuNode labels it, applied server-side the way the example is.
    const docs = synth.platform.filter((o) => ['Namespace', 'GPUPool', 'WorkloadProfile'].includes(o.kind)).map((o) => structuredClone(o));
    for (const pool of docs.filter((o) => o.kind === 'GPUPool')) pool.spec.nodeManagerConfig.defaultIsolationMode = 'shared';
    await cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, 'real-node.yaml', [GPU_NODE, ...docs])]);
    await waitFor('controller ready', () => ctl.replicas[0].ready(), 60_000, 200);
    await eventually(
      async () => expect((await get(['gpupool', 'default-pool'])).status).toMatchObject({ totalNodes: 1, totalGPUs: 2 }),
      60_000,
      500,
    );
    await defaultServiceAccount(cp(), NS);
  }, 240_000);

  afterAll(async () => {
    await ctl?.stop();
  });

  test('nothing leaves the test network namespace: a dial to an outside address fails at once, from the test and from a pod', async () => {
    const dial = await dialOutside();
    expect(dial.code).toBe('ENETUNREACH');
    expect(dial.ms).toBeLessThan(1_000);

    await cp().kubectlOk(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'dialer', namespace: NS, labels: { app: 'dialer' } },
        spec: { containers: [busyboxContainer('c')], terminationGracePeriodSeconds: 1 },
      }),
    });
    const pod = await running(NS, 'app=dialer');
    expect(pod.status.podIP).toMatch(/^198\.19\.0\./);
    // busybox nc: "can't connect to remote host ...: Network is unreachable", the node side's ICMP answer,
    // not a timeout (whole seconds, so "at once" reads as at most 2).
    const r = await cp().kubectl([
      'exec',
      '-n',
      NS,
      'dialer',
      '--',
      'sh',
      '-c',
      `start=$(date +%s); nc -w 20 ${OUTSIDE_ADDRESS} 443 </dev/null; echo "exit=$? took=$(( $(date +%s) - start ))"`,
    ]);
    expect(r.stderr).toMatch(/Network is unreachable/);
    expect(r.stdout).toMatch(/^exit=1 took=[012]\n$/);
    await cp().kubectlOk(['delete', 'pod', '-n', NS, 'dialer', '--wait=false']);
  });

  test("seed 002's Deployment runs on the node; inside its container the variables and limit files hold its allocation", async () => {
    const d = seedDeployment();
    expect(d.spec.template.metadata.annotations).toEqual(SEED_002_ANNOTATIONS);
    await cp().kubectlOk(['apply', '--server-side', '-f', writeYaml(synth.dir, 'seed-002.yaml', [d])]);
    const pod = await running(NS, 'app=pytorch-example');
    expect(pod.spec.nodeName).toBe(NODE_NAME);
    const a = pod.metadata.annotations;
    const allocation = JSON.parse(a[ALLOCATION_ANNOTATION]);
    expect(allocation).toMatchObject({ id: pod.metadata.uid, node: NODE_NAME });
    // 4Gi limit -> 4096 MiB; 20 TFLOPS of an A100's 312 -> 7 %.
    expect(a[PLACEMENT_ANNOTATIONS.mpsMemoryLimit]).toBe('0=4096M');
    expect(a[PLACEMENT_ANNOTATIONS.mpsThreadPercentage]).toBe('7');

    const env = Object.fromEntries(
      (await exec(NS, pod.metadata.name, 'env', 'python'))
        .trim()
        .split('\n')
        .map((l) => {
          const i = l.indexOf('=');
          return [l.slice(0, i), l.slice(i + 1)];
        }),
    );
    expect(env).toMatchObject({
      NVIDIA_VISIBLE_DEVICES: a[PLACEMENT_ANNOTATIONS.visibleDevices],
      CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: '0=4096M',
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '7',
      TENSOR_FUSION_ALLOCATION_ID: pod.metadata.uid,
      TENSOR_FUSION_POOL: 'default-pool',
      TENSOR_FUSION_MODE: 'local',
      TENSOR_FUSION_TFLOPS_LIMIT: '20',
      TENSOR_FUSION_VRAM_LIMIT: String(4 * 2 ** 30),
    });
    expect(env.NVIDIA_VISIBLE_DEVICES).toMatch(/^\d$/);
    const files = await exec(NS, pod.metadata.name, `cd ${LIMITS_MOUNT_PATH} && for f in *; do echo "$f=$(cat $f)"; done`, 'python');
    expect(files.trim().split('\n')).toEqual(['CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=7', 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M']);
  });

  test('an in-place resize changes the limit files in the running container, which is not restarted', async () => {
    await cp().kubectlOk(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'resizable',
          namespace: NS,
          labels: { [ENABLED_LABEL]: 'true', app: 'resizable' },
          annotations: {
            'tensor-fusion.ai/gpupool': 'default-pool',
            'tensor-fusion.ai/is-local-gpu': 'true',
            'tensor-fusion.ai/workload': 'resizable',
            'tensor-fusion.ai/tflops-request': '10',
            'tensor-fusion.ai/tflops-limit': '20',
            'tensor-fusion.ai/vram-request': '4Gi',
            'tensor-fusion.ai/auto-requests': 'true',
            'tensor-fusion.ai/auto-limits': 'true',
          },
        },
        spec: { containers: [busyboxContainer('main')], terminationGracePeriodSeconds: 1 },
      }),
    });
    const pod = await running(NS, 'app=resizable');
    expect(pod.metadata.annotations[PLACEMENT_ANNOTATIONS.mpsMemoryLimit]).toBe('0=4096M');
    // The recommendation as the leader's loop writes it (here by hand: this suite runs no Prometheus).
    await eventually(
      async () => expect((await get(['tensorfusionworkload', '-n', NS, 'resizable'])).spec.autoScalingConfig).toBeTruthy(),
      60_000,
      500,
    );
    const recommendation = { requests: { tflops: '15', vram: '6Gi' }, limits: { tflops: '40', vram: '6Gi' } };
    await cp().kubectlOk([
      'patch',
      'tensorfusionworkload',
      '-n',
      NS,
      'resizable',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { autoscaling: { recommendation } } }),
    ]);
    // The resize happens on the replica kube-scheduler calls: a pending pod of our scheduler keeps it calling.
    let pokes = 0;
    await eventually(
      async () => {
        await cp().kubectl(['create', '-f', '-'], {
          input: JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: `poke-${pokes++}`, namespace: NS, labels: { app: 'poke' } },
            spec: { schedulerName: 'tensor-fusion-scheduler', containers: [busyboxContainer('c')], nodeSelector: { none: 'none' } },
          }),
        });
        const p = await get(['pod', '-n', NS, 'resizable']);
        expect(p.metadata.annotations[PLACEMENT_ANNOTATIONS.mpsMemoryLimit]).toBe('0=6144M');
      },
      120_000,
      3_000,
    );
    await cp().kubectl(['delete', 'pods', '-n', NS, '-l', 'app=poke', '--wait=false']);
    // 40 of 312 TFLOPS -> 13 %. The kubelet rewrites the downward-API files when it syncs the updated pod.
    await eventually(
      async () => {
        const files = await exec(
          NS,
          'resizable',
          `cat ${LIMITS_MOUNT_PATH}/CUDA_MPS_PINNED_DEVICE_MEM_LIMIT; echo; cat ${LIMITS_MOUNT_PATH}/CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`,
          'main',
        );
        expect(files.trim().split('\n')).toEqual(['0=6144M', '13']);
      },
      120_000,
      1_000,
    );
    // The variables were fixed at the container's start, and the container was not restarted.
    expect((await exec(NS, 'resizable', 'echo $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT', 'main')).trim()).toBe('0=4096M');
    expect((await get(['pod', '-n', NS, 'resizable'])).status.containerStatuses[0].restartCount).toBe(0);
    await cp().kubectlOk(['delete', 'pod', '-n', NS, 'resizable', '--wait=false']);
  });

  test('the worker init container of no-standalone-worker-mode runs under Pod Security "restricted"', async () => {
    await cp().kubectlOk([
      'apply',
      '--server-side',
      '--force-conflicts',
      '-f',
      writeYaml(synth.dir, 'restricted.yaml', [
        {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: RESTRICTED, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
        },
        renderGpuPool('default-pool', {
          isDefault: true,
          defaultQos: 'medium',
          placement: 'MinFragmentation',
          tflopsOversellRatio: 500,
          workerImage: IMAGE_REFS.busybox,
        }),
      ]),
    ]);
    await defaultServiceAccount(cp(), RESTRICTED);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'no-standalone',
        namespace: RESTRICTED,
        labels: { [ENABLED_LABEL]: 'true', app: 'no-standalone' },
        annotations: {
          'tensor-fusion.ai/gpupool': 'default-pool',
          'tensor-fusion.ai/is-local-gpu': 'true',
          'tensor-fusion.ai/tflops-request': '10',
          'tensor-fusion.ai/vram-request': '1Gi',
          'tensor-fusion.ai/no-standalone-worker-mode': 'true',
        },
      },
      spec: {
        securityContext: RESTRICTED_POD,
        containers: [{ ...busyboxContainer('app'), securityContext: RESTRICTED_CONTAINER }],
        terminationGracePeriodSeconds: 1,
      },
    };
    const created = await cp().kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
    expect(created.stderr).not.toMatch(/violate PodSecurity/);
    expect(created.code).toBe(0);
    const p = await running(RESTRICTED, 'app=no-standalone');
    const init = p.status.initContainerStatuses.find((s: Obj) => s.name === 'tensor-fusion-worker');
    expect(init.state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    expect(p.spec.initContainers[0].securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect((await exec(RESTRICTED, 'no-standalone', 'id -u', 'app')).trim()).toBe('65534');
    await cp().kubectlOk(['delete', 'pod', '-n', RESTRICTED, 'no-standalone', '--wait=false']);
  });

  test("a remote-mode workload's worker pods start on the node, each with a share", async () => {
    await cp().kubectlOk([
      'apply',
      '--server-side',
      '--force-conflicts',
      '-f',
      writeYaml(synth.dir, 'workers.yaml', [
        renderGpuPool('default-pool', {
          isDefault: true,
          defaultQos: 'medium',
          placement: 'MinFragmentation',
          tflopsOversellRatio: 500,
          workerImage: IMAGE_REFS.busybox,
          workerPodTemplate: {
            spec: {
              containers: [{ name: 'worker', imagePullPolicy: 'Never', command: busyboxContainer('worker').command }],
              terminationGracePeriodSeconds: 1,
            },
          },
        }),
      ]),
    ]);
    await cp().kubectlOk(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'remote-client',
          namespace: NS,
          labels: { [ENABLED_LABEL]: 'true', app: 'remote-client' },
          annotations: {
            'tensor-fusion.ai/gpupool': 'default-pool',
            'tensor-fusion.ai/is-local-gpu': 'false',
            'tensor-fusion.ai/workload': 'remote',
            'tensor-fusion.ai/replicas': '2',
            'tensor-fusion.ai/tflops-request': '10',
            'tensor-fusion.ai/vram-request': '1Gi',
          },
        },
        spec: { containers: [busyboxContainer('app')], terminationGracePeriodSeconds: 1 },
      }),
    });
    const client = await running(NS, 'app=remote-client');
    expect(client.metadata.annotations?.[ALLOCATION_ANNOTATION]).toBeUndefined();
    await eventually(
      async () => {
        const workers = (await get(['pods', '-n', NS, '-l', 'tensor-fusion.ai/workload=remote'])).items as Obj[];
        const started = workers.filter((w) => w.metadata.name !== 'remote-client');
        expect(started.map((w) => [w.spec.nodeName, w.status.phase, Boolean(w.metadata.annotations?.[ALLOCATION_ANNOTATION])])).toEqual([
          [NODE_NAME, 'Running', true],
          [NODE_NAME, 'Running', true],
        ]);
      },
      180_000,
      1_000,
    );
  });
});
