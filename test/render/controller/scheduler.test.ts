import { createHash } from 'crypto';
import { parse } from 'yaml';
import { KubeObject } from '../../../lib/k8s/object';
import { SCHEDULER_CONFIG_CHECKSUM_ANNOTATION } from '../../../lib/model/metadata-keys';
import { SCHEDULER_NAME } from '../../../lib/contract/object-names';
import {
  CONTROLLER_DEFAULTS,
  CONTROLLER_ENV,
  renderController,
  renderSchedulerConfiguration,
  TensorFusionControllerProps,
} from '../../../lib/render/controller';
import { GO_BUILDS, goModVersion } from '../../envtest/assets';
import { container, FAKE_BUNDLE, find, Json, podSpec } from './fixtures';

const render = (props: TensorFusionControllerProps = {}) => renderController(props, FAKE_BUNDLE);
const configText = (objects: KubeObject[]): string =>
  (find(objects, 'ConfigMap', 'tensor-fusion-scheduler-config') as Json).data['config.yaml'];

describe('scheduler configuration', () => {
  it('is one profile for our scheduler name, its own lease, and the extender on loopback for every verb', () => {
    expect(renderSchedulerConfiguration('gpu-system', 18888)).toEqual({
      apiVersion: 'kubescheduler.config.k8s.io/v1',
      kind: 'KubeSchedulerConfiguration',
      leaderElection: {
        leaderElect: true,
        resourceLock: 'leases',
        resourceNamespace: 'gpu-system',
        resourceName: 'tensor-fusion-scheduler',
      },
      percentageOfNodesToScore: 100,
      profiles: [
        {
          schedulerName: SCHEDULER_NAME,
          pluginConfig: [{ name: 'NodeResourcesFit', args: { ignoredResources: ['tensor-fusion.ai/share'] } }],
        },
      ],
      extenders: [
        {
          urlPrefix: 'http://127.0.0.1:18888/scheduler',
          filterVerb: 'filter',
          prioritizeVerb: 'prioritize',
          weight: 100,
          bindVerb: 'bind',
          enableHTTPS: false,
          nodeCacheCapable: true,
          httpTimeout: '5s',
          ignorable: false,
        },
      ],
    });
  });

  it('calls the extender on the port the controller container is told to serve it on', () => {
    const objects = render();
    const env = Object.fromEntries((container(objects, 'controller').env as Json[]).map((e) => [e.name, e.value]));
    const [extender] = renderSchedulerConfiguration('tensor-fusion-system').extenders;
    expect(extender.urlPrefix).toBe(`http://127.0.0.1:${env[CONTROLLER_ENV.extenderPort]}/scheduler`);
  });

  it('is what the ConfigMap holds (YAML), with its checksum on the pod template so a new one restarts kube-scheduler', () => {
    const objects = render({ namespace: 'gpu-system' });
    const text = configText(objects);
    expect(parse(text)).toEqual(renderSchedulerConfiguration('gpu-system'));
    const annotations = (find(objects, 'Deployment') as Json).spec.template.metadata.annotations;
    expect(annotations[SCHEDULER_CONFIG_CHECKSUM_ANNOTATION]).toBe(createHash('sha256').update(text).digest('hex'));
    const other = (find(render(), 'Deployment') as Json).spec.template.metadata.annotations;
    expect(other[SCHEDULER_CONFIG_CHECKSUM_ANNOTATION]).not.toBe(annotations[SCHEDULER_CONFIG_CHECKSUM_ANNOTATION]);
  });
});

describe('scheduler container', () => {
  it('runs the official kube-scheduler at the default version with the mounted configuration', () => {
    const objects = render();
    const c = container(objects, 'scheduler');
    expect(c.image).toBe('registry.k8s.io/kube-scheduler:v1.36.3');
    expect(c.command).toEqual(['kube-scheduler', '--config=/etc/tensor-fusion-scheduler/config.yaml', '--secure-port=10259']);
    const mount = (c.volumeMounts as Json[]).find((m) => c.command[1] === `--config=${m.mountPath}/config.yaml`);
    expect(mount).toMatchObject({ readOnly: true });
    expect(podSpec(objects).volumes).toContainEqual({
      name: mount.name,
      configMap: { name: 'tensor-fusion-scheduler-config', defaultMode: 0o444 },
    });
  });

  it('runs the version the schedulerVersion prop names', () => {
    expect(container(render({ schedulerVersion: 'v1.35.2' }), 'scheduler').image).toBe('registry.k8s.io/kube-scheduler:v1.35.2');
  });

  it('is probed by the kubelet over HTTPS on the pod IP: no loopback-only bind address', () => {
    const c = container(render(), 'scheduler');
    expect(c.ports).toEqual([{ name: 'scheduler', containerPort: 10259, protocol: 'TCP' }]);
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'scheduler', scheme: 'HTTPS' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'scheduler', scheme: 'HTTPS' });
    expect((c.command as string[]).filter((a) => a.startsWith('--bind-address'))).toEqual([]);
  });

  it("shares the controller container's resources and restricted securityContext", () => {
    const objects = render({ resources: { limits: { memory: '2Gi' } } });
    const scheduler = container(objects, 'scheduler');
    const controller = container(objects, 'controller');
    expect(scheduler.resources).toEqual({ requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '2Gi' } });
    expect(scheduler.securityContext).toEqual(controller.securityContext);
    expect(podSpec(objects).containers.map((x: Json) => x.name)).toEqual(['controller', 'scheduler']);
  });

  it('admits no traffic to the scheduler or the extender port from the network', () => {
    const np = find(render(), 'NetworkPolicy') as Json;
    const ports = (np.spec.ingress as Json[]).flatMap((r) => r.ports.map((p: Json) => p.port));
    expect(ports).not.toContain(10259);
    expect(ports).not.toContain(8888);
  });

  it('defaults to the Kubernetes version the project tests against (test/envtest/kubernetes/go.mod)', () => {
    const kubernetes = GO_BUILDS.find((b) => b.name === 'kubernetes')!;
    expect(CONTROLLER_DEFAULTS.schedulerVersion).toBe(goModVersion(kubernetes));
  });
});
