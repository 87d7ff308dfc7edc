/** The node agent DaemonSet rendered by TensorFusionController (`nodeAgent`, on by default), and the props it adds. */
import { KubeObject } from '../../../lib/k8s/object';
import { renderController } from '../../../lib/render/controller';
import { AGENT_DEFAULTS } from '../../../lib/contract/agent';
import { FAKE_BUNDLE } from './fixtures';

type Json = any;
const of = (objects: KubeObject[], kind: string) => objects.filter((o) => o.kind === kind) as Json[];

describe('node agent', () => {
  it("is rendered by default, since hard isolation (the default pool's) needs it; nodeAgent: false leaves out all of it", () => {
    const names = (objects: KubeObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`);
    const defaults = renderController({}, FAKE_BUNDLE);
    expect(of(defaults, 'DaemonSet').map((d) => d.metadata.name)).toEqual(['tensor-fusion-node-agent']);
    const off = renderController({ nodeAgent: false }, FAKE_BUNDLE);
    expect(names(off)).toEqual(names(defaults).filter((n) => names(off).includes(n)));
    expect(names(defaults).filter((n) => !names(off).includes(n))).toEqual([
      'Namespace/tensor-fusion-system-agent',
      `ConfigMap/tensor-fusion-node-agent-bundle-0.1.0-${FAKE_BUNDLE.agent!.sha256.slice(0, 12)}`,
      'ServiceAccount/tensor-fusion-node-agent',
      'ClusterRole/tensor-fusion-node-agent',
      'ClusterRoleBinding/tensor-fusion-node-agent',
      'DaemonSet/tensor-fusion-node-agent',
      'Service/tensor-fusion-node-agent',
    ]);
  });

  it('needs the agent bundle when no image is set', () => {
    expect(() => renderController({}, { ...FAKE_BUNDLE, agent: undefined })).toThrow(
      'TensorFusionController: the node agent bundle is required when no image is set',
    );
  });

  it('runs its own bundle on GPU nodes, sharing the host PID namespace, in a privileged namespace of its own', () => {
    const objects = renderController({}, FAKE_BUNDLE);
    const [ds] = of(objects, 'DaemonSet');
    expect(ds.metadata).toMatchObject({ name: 'tensor-fusion-node-agent', namespace: 'tensor-fusion-system-agent' });
    const pod = ds.spec.template.spec;
    expect(pod).toMatchObject({
      hostPID: true,
      nodeSelector: { 'nvidia.com/gpu.present': 'true' },
      tolerations: [{ operator: 'Exists' }],
      serviceAccountName: 'tensor-fusion-node-agent',
    });
    const [c] = pod.containers;
    expect(c.image).toBe('node:24-bookworm-slim');
    expect(c.command).toEqual(['node', '/app/agent.js']);
    expect(c.args).toBeUndefined();
    expect(c.ports).toEqual([{ name: 'metrics', containerPort: AGENT_DEFAULTS.port, protocol: 'TCP' }]);
    // Ready once the kubelet has the share's device plugin (runtime/agent/agent.test.ts).
    expect(c.readinessProbe).toEqual({ httpGet: { path: '/readyz', port: 'metrics' }, periodSeconds: 2, timeoutSeconds: 2 });
    expect(c.env[0]).toEqual({ name: 'NODE_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } } });
    // The agent's own bundle, in its namespace (a volume cannot cross namespaces), unpacked and checked.
    const volume = pod.volumes.find((v: Json) => v.configMap);
    const [map] = of(objects, 'ConfigMap').filter((m) => m.metadata.name === volume.configMap.name);
    expect(map.metadata.namespace).toBe('tensor-fusion-system-agent');
    expect(map.binaryData).toEqual({ 'agent.js.gz': FAKE_BUNDLE.agent!.gzipBase64 });
    expect(pod.initContainers[0].command[2]).toContain(`'${FAKE_BUNDLE.agent!.sha256}'`);
    expect(pod.initContainers[0].command[2]).toContain(`fs.writeFileSync('/app/agent.js',code)`);
    const ns = of(objects, 'Namespace').find((n) => n.metadata.name === 'tensor-fusion-system-agent');
    expect(ns.metadata.labels['pod-security.kubernetes.io/enforce']).toBe('privileged');
    expect(of(objects, 'ClusterRole').find((r) => r.metadata.name === 'tensor-fusion-node-agent').rules).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
      { apiGroups: ['tensor-fusion.ai'], resources: ['gpus/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
      { apiGroups: ['tensor-fusion.ai'], resources: ['gpupools'], verbs: ['get'] },
    ]);
    // The node side of hard isolation: the kubelet's plugin folder and the shares' MPS folders, at the same paths.
    expect(pod.volumes).toEqual(
      expect.arrayContaining([
        { name: 'mps', hostPath: { path: '/run/tensor-fusion/mps', type: 'DirectoryOrCreate' } },
        { name: 'device-plugins', hostPath: { path: '/var/lib/kubelet/device-plugins', type: 'Directory' } },
        { name: 'plugins-registry', hostPath: { path: '/var/lib/kubelet/plugins_registry', type: 'DirectoryOrCreate' } },
        { name: 'dra-plugin', hostPath: { path: '/var/lib/kubelet/plugins/gpu.tensor-fusion.ai', type: 'DirectoryOrCreate' } },
      ]),
    );
    expect(ds.spec.updateStrategy).toEqual({ type: 'OnDelete' });
    expect(of(objects, 'Service').find((s) => s.metadata.namespace === 'tensor-fusion-system-agent').spec.clusterIP).toBe('None');
  });

  it('mounts the host\'s daemon cgroup folder and its cgroup mounts away from its own /sys/fs/cgroup and names them to the agent; "" leaves them out', () => {
    const agentPod = (props: object) => of(renderController(props, FAKE_BUNDLE), 'DaemonSet')[0].spec.template.spec;
    const cgroupParts = (pod: Json) => ({
      volumes: pod.volumes.filter((v: Json) => /cgroup/.test(v.name)),
      mounts: pod.containers[0].volumeMounts.filter((m: Json) => /cgroup/.test(m.name)),
      env: pod.containers[0].env.filter((e: Json) => /CGROUP/.test(e.name)),
    });
    expect(cgroupParts(agentPod({}))).toEqual({
      volumes: [
        { name: 'daemon-cgroup', hostPath: { path: '/sys/fs/cgroup/tensor-fusion-mps', type: 'DirectoryOrCreate' } },
        { name: 'host-cgroup', hostPath: { path: '/sys/fs/cgroup', type: 'Directory' } },
      ],
      mounts: [
        { name: 'daemon-cgroup', mountPath: '/daemon-cgroup' },
        { name: 'host-cgroup', mountPath: '/host-cgroup' },
      ],
      env: [
        { name: 'MPS_DAEMON_CGROUP', value: '/daemon-cgroup' },
        { name: 'HOST_CGROUP', value: '/host-cgroup' },
        { name: 'MPS_DAEMON_CGROUP_NAME', value: 'tensor-fusion-mps' },
      ],
    });
    const custom = cgroupParts(agentPod({ nodeAgentDaemonCgroup: '/sys/fs/cgroup/gpu.slice/mps' }));
    expect(custom.volumes[0]).toEqual({
      name: 'daemon-cgroup',
      hostPath: { path: '/sys/fs/cgroup/gpu.slice/mps', type: 'DirectoryOrCreate' },
    });
    expect(custom.env[2]).toEqual({ name: 'MPS_DAEMON_CGROUP_NAME', value: 'mps' });
    expect(cgroupParts(agentPod({ nodeAgentDaemonCgroup: '' }))).toEqual({ volumes: [], mounts: [], env: [] });
  });

  it("with a prebuilt image runs the agent's file in that image", () => {
    const [ds] = of(renderController({ nodeAgent: true, image: 'registry.example.com/tf:1.0' }), 'DaemonSet');
    const [c] = ds.spec.template.spec.containers;
    expect(c).toMatchObject({ image: 'registry.example.com/tf:1.0', command: ['node', '/app/agent.js'] });
    expect(c.args).toBeUndefined();
  });

  it('passes prometheusUrl to the controller and grants what autoSetReplicas needs, only then', () => {
    const rulesOf = (objects: KubeObject[]) => of(objects, 'ClusterRole').find((r) => r.metadata.name === 'tensor-fusion-controller').rules;
    const withUrl = renderController({ prometheusUrl: 'http://prometheus.monitoring:9090' }, FAKE_BUNDLE);
    const controller = of(withUrl, 'Deployment')[0].spec.template.spec.containers.find((c: Json) => c.name === 'controller');
    expect(controller.env).toContainEqual({ name: 'PROMETHEUS_URL', value: 'http://prometheus.monitoring:9090' });
    expect(rulesOf(withUrl)).toEqual(
      expect.arrayContaining([
        { apiGroups: ['apps'], resources: ['deployments', 'statefulsets'], verbs: ['get'] },
        { apiGroups: ['apps'], resources: ['deployments/scale', 'statefulsets/scale'], verbs: ['patch'] },
        { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: ['list'] },
      ]),
    );
    expect(JSON.stringify(rulesOf(renderController({}, FAKE_BUNDLE)))).not.toContain('scale');
  });

  it.each<[object, string]>([
    [{ nodeAgent: 'yes' }, 'TensorFusionController: nodeAgent: got "yes", expected true or false'],
    ...['/var/run/mps', '/sys/fs/cgroup', '/sys/fs/cgroup/', '/sys/fs/cgroup/../etc', '/sys/fs/cgroup/a b', 'sys/fs/cgroup/tf'].map(
      (v): [object, string] => [
        { nodeAgentDaemonCgroup: v },
        `TensorFusionController: nodeAgentDaemonCgroup: got "${v}", expected a cgroup v2 folder under /sys/fs/cgroup/ (letters, digits, ".", "_", "-" per level) such as /sys/fs/cgroup/tensor-fusion-mps, or "" for none`,
      ],
    ),
    [
      { prometheusUrl: 'prometheus:9090' },
      'TensorFusionController: prometheusUrl: got "prometheus:9090", expected an http or https URL of the Prometheus HTTP API such as http://prometheus.monitoring:9090',
    ],
    [
      { prometheusUrl: 'http://p:9090/?x=1' },
      'TensorFusionController: prometheusUrl: got "http://p:9090/?x=1", expected an http or https URL of the Prometheus HTTP API such as http://prometheus.monitoring:9090',
    ],
  ])('refuses %j', (props, message) => {
    expect(() => renderController(props as never, FAKE_BUNDLE)).toThrow(message);
  });
});
