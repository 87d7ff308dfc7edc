/**
 * `pulumi up` for real: the example platform of `examples/pulumi` brought up by the Pulumi engine and
 * the Kubernetes provider (built by `npm run envtest:setup`), changed, refreshed and destroyed on the
 * real control plane, with the controller running as pods on the real node. What the test cluster
 * adds to the example, and why: test/support/pulumi-example.ts.
 */
import { nodes, pool as examplePool, pytorchGpu, NAMESPACE } from '../../../examples/platform';
import { CONTROLLER_NAMES } from '../../../lib/contract/object-names';
import { ALLOCATION_ANNOTATION, GPU_NODE_ANNOTATION } from '../../../lib/model/metadata-keys';
import { nodeGuardMessage } from '../../../lib/render/controller';
import { renderGpuNode } from '../../../lib/render/gpu-node';
import { T9K } from '../../../lib/t9k/keys';
import { eventually } from '../../runtime/fixtures';
import { policyDenial } from '../../support/control-plane';
import {
  createExampleNodes,
  exampleProgram as program,
  OTHER_MANAGER,
  OTHER_TAINT,
  TAINTED_NODE as TAINTED,
} from '../../support/pulumi-example';
import { describeEngineOnNode, engineStack, EngineStack, Step } from '../../support/pulumi-engine';

jest.setTimeout(600_000);

type Obj = Record<string, any>;

/**
 * The steps that change a cluster object, as `<op> <Kind> <name>`: not the unchanged ones, not the
 * stack and components (no objects of their own), not the reads of the GpuNodes' Nodes (read again,
 * refreshed and discarded on every run).
 */
function changed(steps: Step[]): string[] {
  return steps
    .filter((s) => s.op !== 'same' && s.type !== 'kubernetes:core/v1:Node' && s.type.startsWith('kubernetes:'))
    .map((s) => `${s.op} ${s.type.slice(s.type.lastIndexOf(':') + 1)} ${s.name}`);
}

describeEngineOnNode('examples/pulumi with the real engine', { controllerManager: true, scheduler: true, kwok: true }, (h) => {
  const cp = () => h().cp;
  const get = async (args: string[]): Promise<Obj> => JSON.parse(await cp().kubectlOk(['get', ...args, '-o', 'json']));
  let engine: EngineStack;
  let before: string[];
  let otherManagerFields: Obj;
  /** Every object the cluster has (kind/namespace/name), but for the ones its own controllers churn. */
  const inventory = async (): Promise<string[]> => {
    const kinds = [
      'namespaces',
      'customresourcedefinitions',
      'clusterroles',
      'clusterrolebindings',
      'priorityclasses',
      'mutatingwebhookconfigurations',
      'validatingadmissionpolicies',
      'validatingadmissionpolicybindings',
      'deployments',
      'services',
      'configmaps',
      'pods',
    ];
    const out = await cp().kubectlOk([
      'get',
      kinds.join(','),
      '-A',
      '-o',
      'jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}{"\\n"}{end}',
    ]);
    return out
      .split('\n')
      .filter(Boolean)
      .filter((l) => !l.startsWith('ConfigMap/') || !l.endsWith('/kube-root-ca.crt'))
      .sort();
  };

  beforeAll(async () => {
    await createExampleNodes(cp());
    before = await inventory();
    engine = await engineStack(cp().kubeconfig, 'example', program());
  });
  afterAll(() => {
    if (!process.env.TF_ENVTEST_KEEP) engine?.remove();
  });

  test('up on a fresh stack creates everything in an order the cluster accepts, awaits the controller, and the GPU workload is admitted and placed', async () => {
    const started = Date.now();
    const run = engine.record();
    const result = await engine.stack.up(run.options);
    const seconds = (Date.now() - started) / 1000;
    // eslint-disable-next-line no-console
    console.log(`pulumi up of the example: ${seconds.toFixed(1)} s, ${JSON.stringify(result.summary.resourceChanges)}`);
    expect(result.summary.result).toBe('succeeded');
    expect(new Set(changed(run.outcomes).map((c) => c.split(' ')[0]))).toEqual(new Set(['create']));
    expect(changed(run.outcomes).length).toBeGreaterThanOrEqual(40);
    // No object was sent before what it needs (a retry after "not found" would show here), and the
    // provider is the version the npm SDK asks for. The provider's await of a new workload says
    // "status.observedGeneration not found" until its controller first writes the status: not a retry.
    const lines = result.stdout.split('\n').filter((l) => !/status\.observedGeneration not found/.test(l));
    expect(lines.join('\n')).not.toMatch(/not found|failed|retry|is expected to have version/i);
    const deployment = await get(['deployment', '-n', 'tensor-fusion-system', CONTROLLER_NAMES.controller]);
    expect(deployment.status.readyReplicas).toBe(deployment.spec.replicas);
    const [pod] = (await get(['pods', '-n', NAMESPACE, '-l', 'app=pytorch-example'])).items as Obj[];
    expect(pod.spec.nodeName).toMatch(/^gpu-(a100|h100)-0$/);
    expect(JSON.parse(pod.metadata.annotations[ALLOCATION_ANNOTATION])).toMatchObject({ node: pod.spec.nodeName });
    expect(seconds).toBeLessThan(300);
  });

  test('a second up changes nothing', async () => {
    const run = engine.record();
    await engine.stack.up(run.options);
    expect(changed(run.outcomes)).toEqual([]);
  });

  test('GpuNode leaves the fields another manager owns on the node alone', async () => {
    const node = await get(['node', TAINTED, '--show-managed-fields']);
    expect(node.spec.taints).toEqual([OTHER_TAINT]);
    expect(node.metadata.labels).toMatchObject({ team: 'ml', [T9K.acceleratorLabel]: 'nvidia-gpu' });
    const other = node.metadata.managedFields.find((f: Obj) => f.manager === OTHER_MANAGER && f.operation === 'Apply');
    expect(Object.keys(other.fieldsV1['f:spec'])).toEqual(['f:taints']);
    expect(other.fieldsV1['f:metadata']['f:labels']).toHaveProperty(['f:team']);
    // Pulumi's apply owns only the GpuNode's labels and marker, none of the other manager's fields.
    const ours = node.metadata.managedFields.filter((f: Obj) => f.manager !== OTHER_MANAGER && f.operation === 'Apply');
    expect(ours).toHaveLength(1);
    expect(ours[0].fieldsV1['f:spec']).toBeUndefined();
    expect(ours[0].fieldsV1['f:metadata']['f:labels']).not.toHaveProperty(['f:team']);
    expect(ours[0].fieldsV1['f:metadata']['f:annotations']).toHaveProperty([`f:${GPU_NODE_ANNOTATION}`]);
    otherManagerFields = other.fieldsV1;
  });

  test('preview --diff after changing one prop shows exactly that change, and up applies it in place', async () => {
    const pool = await get(['gpupool', examplePool.name!]);
    engine.stack.workspace.program = program({ pool: { ...examplePool, tflopsOversellRatio: 600 }, pytorchGpu });
    const preview = engine.record();
    const result = await engine.stack.preview({ ...preview.options, diff: true });
    expect(changed(preview.steps)).toEqual(['update GPUPool default-pool']);
    expect(preview.steps.find((s) => s.op === 'update')!.detailedDiff).toEqual([
      'spec.capacityConfig.oversubscription.tflopsOversellRatio',
    ]);
    expect(result.stdout).toMatch(/~ tflopsOversellRatio: 500 => 600/);
    const up = engine.record();
    await engine.stack.up(up.options);
    expect(changed(up.outcomes)).toEqual(['update GPUPool default-pool']);
    const updated = await get(['gpupool', examplePool.name!]);
    expect(updated.metadata.uid).toBe(pool.metadata.uid);
    expect(updated.spec.capacityConfig.oversubscription.tflopsOversellRatio).toBe(600);
  });

  test("a workload's tflopsRequest changed: the Deployment is updated in place, and its new pod admitted and placed with it", async () => {
    engine.stack.workspace.program = program({
      pool: { ...examplePool, tflopsOversellRatio: 600 },
      pytorchGpu: { ...pytorchGpu, tflopsRequest: '12' },
    });
    const preview = engine.record();
    const result = await engine.stack.preview({ ...preview.options, diff: true });
    expect(changed(preview.steps)).toEqual(['update Deployment pytorch-example']);
    expect(preview.steps.find((s) => s.op === 'update')!.detailedDiff).toEqual([
      expect.stringContaining('tensor-fusion.ai/tflops-request'),
    ]);
    expect(result.stdout).toMatch(/~ tensor-fusion.ai\/tflops-request: "10" => "12"/);
    const up = engine.record();
    await engine.stack.up(up.options);
    expect(changed(up.outcomes)).toEqual(['update Deployment pytorch-example']);
    const pods = (await get(['pods', '-n', NAMESPACE, '-l', 'app=pytorch-example'])).items as Obj[];
    const fresh = pods.find((p) => p.metadata.annotations['tensor-fusion.ai/tflops-request'] === '12' && !p.metadata.deletionTimestamp)!;
    expect(fresh.spec.nodeName).toMatch(/^gpu-(a100|h100)-0$/);
    expect(fresh.metadata.annotations).toHaveProperty([ALLOCATION_ANNOTATION]);
  });

  test('renaming a pool shows a replacement', async () => {
    engine.stack.workspace.program = program({
      pool: { ...examplePool, tflopsOversellRatio: 600, name: 'renamed-pool' },
      pytorchGpu: { ...pytorchGpu, tflopsRequest: '12' },
    });
    const preview = engine.record();
    await engine.stack.preview({ ...preview.options, diff: true });
    expect(changed(preview.steps)).toContain('replace GPUPool default-pool');
    expect(new Set(changed(preview.steps).map((c) => c.split(' ').slice(1).join(' ')))).toEqual(new Set(['GPUPool default-pool']));
    engine.stack.workspace.program = program({
      pool: { ...examplePool, tflopsOversellRatio: 600 },
      pytorchGpu: { ...pytorchGpu, tflopsRequest: '12' },
    });
  });

  test('refresh after an object was edited by hand shows the drift, and up puts it back', async () => {
    await cp().kubectlOk([
      'patch',
      'workloadprofile',
      '-n',
      NAMESPACE,
      'default-profile',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { qos: 'high' } }),
    ]);
    const refresh = engine.record();
    await engine.stack.refresh(refresh.options);
    expect(changed(refresh.outcomes)).toEqual(['update WorkloadProfile default-profile']);
    const up = engine.record();
    await engine.stack.up(up.options);
    expect(changed(up.outcomes)).toEqual(['update WorkloadProfile default-profile']);
    expect((await get(['workloadprofile', '-n', NAMESPACE, 'default-profile'])).spec.qos).toBe('medium');
  });

  test('a GpuNode manifest applied with kubectl cannot create a Node either: the install refuses it, naming the node', async () => {
    const ghost = renderGpuNode({ nodeName: 'ghost-node', pools: [examplePool.name!] });
    const result = await cp().kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify(ghost) });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(policyDenial(CONTROLLER_NAMES.nodeGuardPolicy, nodeGuardMessage('ghost-node')));
    expect((await cp().kubectl(['get', 'node', 'ghost-node'])).stderr).toContain('NotFound');
    // The same manifest for a node that exists only labels it.
    await cp().kubectlOk(['apply', '--server-side', '--field-manager=kubectl-e2e', '-f', '-'], {
      input: JSON.stringify(renderGpuNode({ nodeName: 'gpu-a100-0', labels: { 'e2e/kubectl': 'yes' } })),
    });
    expect((await get(['node', 'gpu-a100-0'])).metadata.labels).toHaveProperty(['e2e/kubectl'], 'yes');
    await cp().kubectlOk(['apply', '--server-side', '--field-manager=kubectl-e2e', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'gpu-a100-0' } }),
    });
  });

  test('destroy removes everything in an order the cluster accepts and leaves the cluster as it was', async () => {
    const run = engine.record();
    const result = await engine.stack.destroy(run.options);
    expect(result.summary.result).toBe('succeeded');
    expect(new Set(changed(run.outcomes).map((c) => c.split(' ')[0]))).toEqual(new Set(['delete']));
    expect(result.stdout).not.toMatch(/failed|retry/i);
    // Namespaces finish terminating after the engine has deleted them.
    await eventually(async () => expect(await inventory()).toEqual(before), 120_000, 1_000);
    for (const name of Object.keys(nodes)) {
      const node = await get(['node', name]);
      expect(
        Object.keys(node.metadata.labels).filter(
          (k) => k.startsWith('tensor-fusion.ai/') || k.startsWith('sched.tensorstack.dev/') || k.startsWith('nvidia.com/'),
        ),
      ).toEqual([]);
      expect(node.metadata.annotations).not.toHaveProperty([GPU_NODE_ANNOTATION]);
    }
    const node = await get(['node', TAINTED, '--show-managed-fields']);
    expect(node.spec.taints).toEqual([OTHER_TAINT]);
    expect(node.metadata.labels.team).toBe('ml');
    expect(node.metadata.managedFields.find((f: Obj) => f.manager === OTHER_MANAGER && f.operation === 'Apply').fieldsV1).toEqual(
      otherManagerFields,
    );
  });
});
