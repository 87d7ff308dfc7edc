/**
 * The controller install running as pods on a real node, as in a cluster: the synthesized
 * `controller.k8s.yaml` (TensorFusionController with the Node.js image made on the machine) applied
 * with kubectl; the bundle's digest checked by the init container; both replicas Ready, the controller
 * and scheduler Leases held by them; kube-apiserver reaching the webhook through its Service and kube-scheduler (the
 * release's own binary, under the official image's name) reaching the extender on loopback in its
 * pod, with no URL rewriting: kube-proxy routes the Services. A tampered bundle keeps a pod from
 * starting, and its status says why.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { gzipSync } from 'node:zlib';
import { App, Chart } from 'cdk8s';
import { parseAllDocuments } from 'yaml';
import { TensorFusionController } from '../../../components/cdk8s';
import { controller as exampleController } from '../../../examples/platform';
import { CONTROLLER_NAMES, SCHEDULER_NAME } from '../../../lib/contract/object-names';
import { ALLOCATION_ANNOTATION, CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION, ENABLED_LABEL } from '../../../lib/model/metadata-keys';
import { renderGpuNode } from '../../../lib/render/gpu-node';
import { renderGpuPool } from '../../../lib/render/gpu-pool';
import { BUNDLE_KEY } from '../../../lib/render/controller';
import { IMAGE_REFS } from '../../envtest/images';
import { writeYaml } from '../../support/control-plane/install';
import { busyboxContainer, defaultServiceAccount, describeRealNode, NODE_NAME } from '../../support/node';
import { eventually } from '../../runtime/fixtures';

jest.setTimeout(300_000);

type Obj = Record<string, any>;

const NS = 'apps';
const POOL = 'install';

/** `npm run synth`'s controller chart, with the example's props and the node's own Node.js image. */
function synthController(): { file: string; docs: Obj[] } {
  const outdir = mkdtempSync(path.join(tmpdir(), 'tf-install-'));
  const app = new App({ outdir });
  new TensorFusionController(new Chart(app, 'controller'), 'tensor-fusion', { ...exampleController, nodeImage: IMAGE_REFS.node });
  app.synth();
  const file = path.join(outdir, 'controller.k8s.yaml');
  return {
    file,
    docs: parseAllDocuments(readFileSync(file, 'utf8'))
      .map((d) => d.toJS())
      .filter(Boolean),
  };
}

describeRealNode('the controller install as pods on a real node', { controllerManager: true, scheduler: true }, {}, (h) => {
  const cp = () => h().cp;
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
  const synth = synthController();
  const deployment = synth.docs.find((d) => d.kind === 'Deployment' && d.metadata.name === CONTROLLER_NAMES.controller)!;
  const ns = deployment.metadata.namespace as string;
  afterAll(() => rmSync(path.dirname(synth.file), { recursive: true, force: true }));
  const controllerPods = async (): Promise<Obj[]> =>
    (
      await get([
        'pods',
        '-n',
        ns,
        '-l',
        Object.entries(deployment.spec.selector.matchLabels)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      ])
    ).items;

  test('kubectl apply of the synthesized YAML: the bundle digest checks, both replicas become Ready and hold the Leases', async () => {
    expect(deployment.spec.replicas).toBe(2);
    await cp().kubectlOk(['apply', '--server-side', '-f', synth.file]);
    const rollout = await cp().kubectl(['rollout', 'status', '-n', ns, `deployment/${CONTROLLER_NAMES.controller}`, '--timeout=240s'], {
      timeoutMs: 250_000,
    });
    expect(rollout.stderr).toBe('');
    const pods = await controllerPods();
    expect(pods.map((p) => [p.spec.nodeName, p.status.phase, p.status.containerStatuses.every((c: Obj) => c.ready)])).toEqual([
      [NODE_NAME, 'Running', true],
      [NODE_NAME, 'Running', true],
    ]);
    for (const p of pods)
      expect(p.status.initContainerStatuses[0]).toMatchObject({ name: 'unpack', state: { terminated: { exitCode: 0 } } });
    const names = pods.map((p) => p.metadata.name);
    await eventually(
      async () => {
        const holders = await Promise.all(
          [CONTROLLER_NAMES.lease, CONTROLLER_NAMES.schedulerLease].map(
            async (l) => (await get(['lease', '-n', ns, l])).spec.holderIdentity as string,
          ),
        );
        // Our identity is `<pod>_<uuid>`, kube-scheduler's `<pod hostname>_<uuid>`. The two elections are
        // independent (every replica's extender serves its own kube-scheduler), so either pod may hold either.
        for (const holder of holders.map((x) => x.replace(/_[0-9a-f-]{36}$/, ''))) expect(names).toContain(holder);
      },
      120_000,
      1_000,
    );
  });

  test('a GPU pod is admitted through the webhook Service and placed by the in-pod kube-scheduler and extender, on the real node', async () => {
    await cp().kubectlOk([
      'apply',
      '--server-side',
      '-f',
      writeYaml(path.dirname(synth.file), 'platform.yaml', [
        renderGpuNode({ nodeName: NODE_NAME, pools: [POOL], gpu: { model: 'NVIDIA-A100-SXM4-80GB', count: 1, memory: '80Gi' } }),
        // Shared isolation: hard isolation's node side (the agent's device plugin) is test/e2e/node/isolation.test.ts.
        renderGpuPool(POOL, { tflopsOversellRatio: 100, isolation: 'shared' }),
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      ]),
    ]);
    await eventually(
      async () => expect((await get(['gpupool', POOL])).status).toMatchObject({ totalNodes: 1, totalGPUs: 1 }),
      120_000,
      1_000,
    );
    await defaultServiceAccount(cp(), NS);
    // The leader publishes its CA into the webhook configuration before the API server can call it.
    await eventually(
      async () =>
        expect(
          (await get(['mutatingwebhookconfiguration', CONTROLLER_NAMES.webhookConfiguration])).webhooks[0].clientConfig.caBundle,
        ).toBeTruthy(),
      60_000,
      500,
    );
    const webhook = (await get(['mutatingwebhookconfiguration', CONTROLLER_NAMES.webhookConfiguration])).webhooks[0];
    expect(webhook.clientConfig.service).toMatchObject({ name: CONTROLLER_NAMES.webhookService, namespace: ns });
    expect(webhook.clientConfig.url).toBeUndefined();
    const trainer = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'trainer',
        namespace: NS,
        labels: { [ENABLED_LABEL]: 'true' },
        annotations: {
          'tensor-fusion.ai/gpupool': POOL,
          'tensor-fusion.ai/is-local-gpu': 'true',
          'tensor-fusion.ai/tflops-request': '10',
          'tensor-fusion.ai/vram-request': '2Gi',
        },
      },
      spec: { terminationGracePeriodSeconds: 1, containers: [busyboxContainer('main')] },
    });
    // Until kube-proxy has the webhook Service's endpoints, its rule answers "no route to host" (seen
    // once in four runs): a server dry run reaches the webhook once the Service routes.
    await eventually(
      async () => expect((await cp().kubectl(['create', '--dry-run=server', '-f', '-'], { input: trainer })).code).toBe(0),
      60_000,
      1_000,
    );
    await cp().kubectlOk(['create', '-f', '-'], { input: trainer });
    let pod: Obj = {};
    await eventually(
      async () => {
        pod = await get(['pod', '-n', NS, 'trainer']);
        expect(pod.status.phase).toBe('Running');
      },
      120_000,
      500,
    );
    expect(pod.spec.schedulerName).toBe(SCHEDULER_NAME);
    expect(pod.spec.nodeName).toBe(NODE_NAME);
    expect(JSON.parse(pod.metadata.annotations[ALLOCATION_ANNOTATION])).toMatchObject({ id: pod.metadata.uid, node: NODE_NAME });
  });

  test('a tampered bundle ConfigMap keeps the controller pods from starting, and their status says why', async () => {
    const configMap = synth.docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name.startsWith(CONTROLLER_NAMES.bundleConfigMap))!;
    const expected = configMap.metadata.annotations[CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION] as string;
    // The kubelet keeps an immutable ConfigMap's content while a pod of the node mounts it, so the
    // replicas go first; then the ConfigMap is replaced, as anyone with write access to the namespace could.
    await cp().kubectlOk(['scale', '-n', ns, `deployment/${CONTROLLER_NAMES.controller}`, '--replicas=0']);
    await eventually(async () => expect(await controllerPods()).toEqual([]), 120_000, 1_000);
    await cp().kubectlOk(['delete', 'configmap', '-n', ns, configMap.metadata.name]);
    await cp().kubectlOk(['create', '-f', '-'], {
      input: JSON.stringify({ ...configMap, binaryData: { [BUNDLE_KEY]: gzipSync('process.exit(0)').toString('base64') } }),
    });
    await cp().kubectlOk(['scale', '-n', ns, `deployment/${CONTROLLER_NAMES.controller}`, '--replicas=1']);
    await eventually(
      async () => {
        const [pod] = await controllerPods();
        const init = pod?.status.initContainerStatuses?.[0];
        const terminated = init?.state.terminated ?? init?.lastState.terminated;
        expect(terminated?.exitCode).toBe(1);
        expect(terminated.message).toMatch(new RegExp(`controller bundle sha256: got [0-9a-f]{64}, expected ${expected}`));
        expect(pod.status.containerStatuses.every((c: Obj) => !c.ready && !c.state.running)).toBe(true);
      },
      120_000,
      1_000,
    );
  });
});
