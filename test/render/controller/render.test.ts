import { execFileSync } from 'child_process';
import { createHash } from 'crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { gunzipSync, gzipSync } from 'zlib';
import { KubeObject } from '../../../lib/k8s/object';
import {
  CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION,
  ENABLED_LABEL,
  SCHEDULER_CONFIG_CHECKSUM_ANNOTATION,
} from '../../../lib/model/metadata-keys';
import { NAMESPACE_NAME_LABEL, POD_SECURITY_ENFORCE_LABEL } from '../../../lib/k8s/labels';
import { renderCrds } from '../../../lib/api/crd';
import { isClusterScoped } from '../../../lib/model/kind-scope';
import {
  BUNDLE_KEY,
  bundleConfigMapName,
  CONTROLLER_ENV,
  renderController,
  TensorFusionControllerProps,
} from '../../../lib/render/controller';
import { validateAll } from '../../support/validate-k8s';
import { controllerObjects, FAKE_BUNDLE, find, Json, MODES, podSpec } from './fixtures';

const BUNDLE_CONFIGMAP = `tensor-fusion-controller-bundle-0.1.0-${FAKE_BUNDLE.sha256.slice(0, 12)}`;
const render = (props: TensorFusionControllerProps = {}) => renderController(props, FAKE_BUNDLE);
const kinds = (objects: KubeObject[]) => objects.map((o) => o.kind);
const envOf = (objects: KubeObject[]) =>
  Object.fromEntries((podSpec(objects).containers[0].env as Json[]).map((e) => [e.name, e.value ?? e.valueFrom.fieldRef.fieldPath]));

describe('renderController', () => {
  it.each(Object.entries(MODES))('renders only valid objects (%s)', (_, props) => {
    const objects = render(props as TensorFusionControllerProps);
    expect(() => validateAll(objects)).not.toThrow();
  });

  it('renders the full install in apply order by default', () => {
    const objects = render();
    const crds = renderCrds().length;
    expect(kinds(objects)).toEqual([
      'Namespace',
      ...Array(crds).fill('CustomResourceDefinition'),
      ...Array(5).fill('PriorityClass'),
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'ClusterRoleBinding',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
      'RoleBinding',
      'Secret',
      'ConfigMap',
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      // The node agent, in a namespace of its own (agent.test.ts).
      ...['Namespace', 'ConfigMap', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'DaemonSet', 'Service'],
      'Service',
      'Service',
      'NetworkPolicy',
      ...Array(8).fill(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']).flat(),
      'MutatingWebhookConfiguration',
    ]);
    expect(objects.filter((o) => o.kind === 'CustomResourceDefinition')).toEqual(renderCrds());
    const own = controllerObjects(objects);
    const ns = find(own, 'Namespace');
    expect(ns.metadata.name).toBe('tensor-fusion-system');
    expect(ns.metadata.labels?.[POD_SECURITY_ENFORCE_LABEL]).toBe('restricted');
    for (const o of own.filter((x) => !isClusterScoped(x.apiVersion, x.kind) && x.metadata.namespace !== 'kube-system')) {
      expect(`${o.kind} ${o.metadata.namespace}`).toBe(`${o.kind} tensor-fusion-system`);
    }
    for (const o of objects.filter((x) => isClusterScoped(x.apiVersion, x.kind))) expect(o.metadata.namespace).toBeUndefined();
    // The one object outside its namespace: kube-scheduler's authentication reader, by nature in kube-system.
    expect(objects.filter((o) => o.metadata.namespace === 'kube-system').map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'RoleBinding/tensor-fusion-controller-authentication-reader',
    ]);
  });

  describe('webhook configuration', () => {
    it.each(['tensor-fusion-system', 'gpu-system'])(
      'excludes kube-system and its own namespace %s, and admits only opted-in pods',
      (namespace) => {
        const [webhook] = (find(render({ namespace }), 'MutatingWebhookConfiguration') as Json).webhooks;
        expect(webhook.namespaceSelector).toEqual({
          matchExpressions: [{ key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: ['kube-system', namespace] }],
        });
        expect(webhook.objectSelector).toEqual({ matchExpressions: [{ key: ENABLED_LABEL, operator: 'In', values: ['true'] }] });
        expect(webhook.clientConfig).toEqual({ service: { name: 'tensor-fusion-webhook', namespace, path: '/mutate-pods', port: 443 } });
      },
    );

    it('mutates pod creation only, without side effects, within 5 seconds, reinvoked if needed', () => {
      const config = find(render(), 'MutatingWebhookConfiguration') as Json;
      expect(config.metadata.name).toBe('tensor-fusion-webhook');
      const [webhook] = config.webhooks;
      expect(webhook.rules).toEqual([
        { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' },
      ]);
      expect(webhook.sideEffects).toBe('None');
      expect(webhook.timeoutSeconds).toBeLessThanOrEqual(5);
      expect(webhook.reinvocationPolicy).toBe('IfNeeded');
      expect(webhook.failurePolicy).toBe('Fail');
      expect(webhook.admissionReviewVersions).toEqual(['v1']);
      expect(webhook.clientConfig.caBundle).toBeUndefined();
      expect((find(render({ failurePolicy: 'Ignore' }), 'MutatingWebhookConfiguration') as Json).webhooks[0].failurePolicy).toBe('Ignore');
    });

    it('routes the webhook Service 443 to the container port the controller listens on', () => {
      const objects = render();
      const svc = find(objects, 'Service', 'tensor-fusion-webhook') as Json;
      expect(svc.spec.ports).toEqual([{ name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' }]);
      const container = podSpec(objects).containers[0];
      expect(container.ports).toContainEqual({ name: 'webhook', containerPort: 9443, protocol: 'TCP' });
      expect(envOf(objects)[CONTROLLER_ENV.webhookPort]).toBe('9443');
      expect(svc.spec.selector).toEqual((find(objects, 'Deployment') as Json).spec.selector.matchLabels);
    });
  });

  describe('certificates', () => {
    it('self-managed: pre-creates the empty TLS Secret and tells the controller which webhook to patch', () => {
      const objects = render();
      expect(find(objects, 'Secret')).toEqual(
        expect.objectContaining({ metadata: expect.objectContaining({ name: 'tensor-fusion-webhook-tls' }), type: 'Opaque' }),
      );
      expect((find(objects, 'Secret') as Json).data).toBeUndefined();
      const env = envOf(objects);
      expect(env).toMatchObject({
        CERT_MODE: 'self-managed',
        TLS_SECRET_NAME: 'tensor-fusion-webhook-tls',
        WEBHOOK_CONFIG_NAME: 'tensor-fusion-webhook',
        WEBHOOK_SERVICE_NAME: 'tensor-fusion-webhook',
      });
      expect(env.TLS_DIR).toBeUndefined();
      expect(kinds(objects)).not.toContain('Certificate');
    });

    it('cert-manager: a CA Issuer chain (self-signed -> CA certificate -> CA Issuer -> serving certificate), CA injection and the Secret mounted', () => {
      const objects = render({ certificateMode: 'cert-manager' });
      expect(kinds(objects)).not.toContain('Secret');
      const issuers = objects.filter((o) => o.kind === 'Issuer') as Json[];
      expect(issuers.map((i) => [i.metadata.name, i.spec])).toEqual([
        ['tensor-fusion-selfsigned', { selfSigned: {} }],
        ['tensor-fusion-webhook-ca', { ca: { secretName: 'tensor-fusion-webhook-ca' } }],
      ]);
      const [ca, cert] = objects.filter((o) => o.kind === 'Certificate') as Json[];
      expect(ca.metadata.name).toBe('tensor-fusion-webhook-ca');
      expect(ca.spec).toMatchObject({
        isCA: true,
        secretName: 'tensor-fusion-webhook-ca',
        issuerRef: { name: 'tensor-fusion-selfsigned', kind: 'Issuer', group: 'cert-manager.io' },
      });
      expect(ca.spec.privateKey.rotationPolicy).toBe('Never');
      expect(cert.metadata.name).toBe('tensor-fusion-webhook');
      expect(cert.spec.secretName).toBe('tensor-fusion-webhook-tls');
      // The serving certificate is never signed by the self-signed Issuer: renewals keep the CA.
      expect(cert.spec.issuerRef).toEqual({ name: 'tensor-fusion-webhook-ca', kind: 'Issuer', group: 'cert-manager.io' });
      expect(cert.spec.isCA).toBeUndefined();
      expect(cert.spec.dnsNames).toEqual([
        'tensor-fusion-webhook',
        'tensor-fusion-webhook.tensor-fusion-system',
        'tensor-fusion-webhook.tensor-fusion-system.svc',
        'tensor-fusion-webhook.tensor-fusion-system.svc.cluster.local',
      ]);
      const webhookConfig = find(objects, 'MutatingWebhookConfiguration');
      expect(webhookConfig.metadata.annotations).toEqual({
        'cert-manager.io/inject-ca-from': 'tensor-fusion-system/tensor-fusion-webhook',
      });
      const spec = podSpec(objects);
      expect(spec.volumes).toContainEqual({ name: 'tls', secret: { secretName: 'tensor-fusion-webhook-tls', defaultMode: 0o440 } });
      expect(spec.containers[0].volumeMounts).toContainEqual({ name: 'tls', mountPath: '/tls', readOnly: true });
      expect(envOf(objects)).toMatchObject({ CERT_MODE: 'cert-manager', TLS_DIR: '/tls' });
    });
  });

  describe('shipping', () => {
    it('ships the gzipped bundle in an immutable ConfigMap named by version and digest, unpacks it into an emptyDir and rolls pods on a new bundle', () => {
      const objects = render();
      const cm = find(objects, 'ConfigMap', BUNDLE_CONFIGMAP) as Json;
      expect(cm.immutable).toBe(true);
      expect(cm.metadata.annotations).toEqual({ [CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION]: FAKE_BUNDLE.sha256 });
      expect(Object.keys(cm.binaryData)).toEqual([BUNDLE_KEY]);
      expect(gunzipSync(Buffer.from(cm.binaryData[BUNDLE_KEY], 'base64')).toString()).toContain('controller');
      const deployment = find(objects, 'Deployment') as Json;
      expect(deployment.spec.template.metadata.annotations).toEqual({
        [CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION]: FAKE_BUNDLE.sha256,
        [SCHEDULER_CONFIG_CHECKSUM_ANNOTATION]: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      const spec = deployment.spec.template.spec;
      expect(spec.initContainers[0].image).toBe('node:24-alpine');
      expect(spec.containers[0].image).toBe('node:24-alpine');
      expect(spec.containers[0].command).toEqual(['node', '/app/controller.js']);
      expect(spec.volumes).toContainEqual({ name: 'app', emptyDir: { sizeLimit: '64Mi' } });
      expect(spec.volumes).toContainEqual({ name: 'bundle', configMap: { name: BUNDLE_CONFIGMAP, defaultMode: 0o444 } });

      const other = { ...FAKE_BUNDLE, sha256: 'f'.repeat(64), version: '0.2.0' };
      const upgraded = renderController({}, other);
      const rolled = find(upgraded, 'Deployment') as Json;
      expect(rolled.spec.template.metadata.annotations[CONTROLLER_BUNDLE_CHECKSUM_ANNOTATION]).toBe('f'.repeat(64));
      // A reviewer sees the upgrade in the object names: version and digest.
      expect(upgraded.filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata.name)).toContain(
        'tensor-fusion-controller-bundle-0.2.0-ffffffffffff',
      );
      expect(rolled.spec.template.spec.volumes).toContainEqual({
        name: 'bundle',
        configMap: { name: 'tensor-fusion-controller-bundle-0.2.0-ffffffffffff', defaultMode: 0o444 },
      });
    });

    it('names the ConfigMap after any semver as a DNS subdomain', () => {
      expect(bundleConfigMapName({ version: '1.2.3-rc.1+Build.7', sha256: FAKE_BUNDLE.sha256 })).toBe(
        `tensor-fusion-controller-bundle-1.2.3-rc.1.build.7-${FAKE_BUNDLE.sha256.slice(0, 12)}`,
      );
    });

    const unpackIn = (objects: KubeObject[], content: Buffer): { dir: string; run: () => void } => {
      // Runs the init container's script with its paths moved into a temp directory.
      const dir = mkdtempSync(join(tmpdir(), 'tf-unpack-'));
      mkdirSync(join(dir, 'bundle'));
      mkdirSync(join(dir, 'app'));
      writeFileSync(join(dir, 'bundle', BUNDLE_KEY), content);
      const [, , script] = podSpec(objects).initContainers[0].command as string[];
      return {
        dir,
        run: () =>
          execFileSync(process.execPath, ['-e', script.replaceAll("'/bundle/", `'${dir}/bundle/`).replaceAll("'/app/", `'${dir}/app/`)], {
            stdio: 'pipe',
          }),
      };
    };

    it('the unpack command really unpacks the ConfigMap content to the path the controller runs', () => {
      const objects = render();
      const { dir, run } = unpackIn(
        objects,
        Buffer.from((find(objects, 'ConfigMap', BUNDLE_CONFIGMAP) as Json).binaryData[BUNDLE_KEY], 'base64'),
      );
      run();
      const entry = podSpec(objects).containers[0].command[1] as string;
      expect(execFileSync(process.execPath, [join(dir, entry)]).toString()).toBe('controller\n');
      expect(readFileSync(join(dir, 'app', 'controller.js')).toString()).toBe("process.stdout.write('controller\\n');\n");
      rmSync(dir, { recursive: true, force: true });
    });

    it('the unpack command refuses a bundle whose digest is not the one fixed in the pod template, and writes nothing', () => {
      const objects = render();
      const tampered = "process.stdout.write('tampered\\n');\n";
      const { dir, run } = unpackIn(objects, gzipSync(tampered));
      let stderr = '';
      try {
        run();
      } catch (err) {
        stderr = String((err as { stderr: Buffer }).stderr);
      }
      const got = createHash('sha256').update(tampered).digest('hex');
      expect(stderr.trim()).toBe(`controller bundle sha256: got ${got}, expected ${FAKE_BUNDLE.sha256}`);
      expect(existsSync(join(dir, 'app', 'controller.js'))).toBe(false);
      rmSync(dir, { recursive: true, force: true });
    });

    it('with image: runs that image with its own entrypoint, and needs no bundle', () => {
      const objects = renderController({ image: 'registry.example.com/tf:1' });
      expect(objects.filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata.name)).toEqual(['tensor-fusion-scheduler-config']);
      const deployment = find(objects, 'Deployment') as Json;
      expect(Object.keys(deployment.spec.template.metadata.annotations)).toEqual([SCHEDULER_CONFIG_CHECKSUM_ANNOTATION]);
      const spec = deployment.spec.template.spec;
      expect(spec.initContainers).toBeUndefined();
      expect(spec.containers[0].image).toBe('registry.example.com/tf:1');
      expect(spec.containers[0].command).toBeUndefined();
      expect(spec.volumes.map((v: Json) => v.name)).toEqual(['tmp', 'scheduler-config']);
    });

    it('without image and without a bundle it refuses to render', () => {
      expect(() => renderController({})).toThrow('TensorFusionController: the controller bundle is required when no image is set');
    });
  });

  describe('deployment', () => {
    it('runs 2 replicas spread over nodes, with a PodDisruptionBudget and a surge-only rollout', () => {
      const objects = render();
      const deployment = find(objects, 'Deployment') as Json;
      expect(deployment.spec.replicas).toBe(2);
      expect(deployment.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
      const anti = deployment.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0];
      expect(anti.podAffinityTerm).toEqual({
        topologyKey: 'kubernetes.io/hostname',
        labelSelector: { matchLabels: deployment.spec.selector.matchLabels },
      });
      const pdb = find(objects, 'PodDisruptionBudget') as Json;
      expect(pdb.spec).toEqual({ maxUnavailable: 1, selector: deployment.spec.selector });
    });

    it('probes /healthz and /readyz on the metrics port and passes the downward API and settings as env', () => {
      const objects = render({ logLevel: 'warn' });
      const c = podSpec(objects).containers[0];
      expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics', scheme: 'HTTP' });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics', scheme: 'HTTP' });
      expect(envOf(objects)).toMatchObject({
        POD_NAME: 'metadata.name',
        POD_NAMESPACE: 'metadata.namespace',
        LOG_LEVEL: 'warn',
        METRICS_PORT: '8080',
        WEBHOOK_PORT: '9443',
        EXTENDER_PORT: '8888',
        LEADER_ELECTION_ID: 'tensor-fusion-controller',
      });
    });

    it('passes replicas, resources, node selector and tolerations through', () => {
      const objects = render(MODES.tuned as TensorFusionControllerProps);
      expect((find(objects, 'Deployment') as Json).spec.replicas).toBe(3);
      const spec = podSpec(objects);
      expect(spec.nodeSelector).toEqual(MODES.tuned.nodeSelector);
      expect(spec.tolerations).toEqual(MODES.tuned.tolerations);
      expect(spec.containers[0].resources).toEqual({ requests: { cpu: '200m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } });
    });
  });

  describe('metrics', () => {
    it('by default: a metrics Service and the NetworkPolicy admits the webhook and metrics ports only', () => {
      const objects = render();
      expect((find(objects, 'Service', 'tensor-fusion-controller-metrics') as Json).spec.ports).toEqual([
        { name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' },
      ]);
      const np = find(objects, 'NetworkPolicy') as Json;
      expect(np.spec.policyTypes).toEqual(['Ingress']);
      expect(np.spec.ingress).toEqual([
        {
          ports: [
            { port: 9443, protocol: 'TCP' },
            { port: 8080, protocol: 'TCP' },
          ],
        },
      ]);
      expect(np.spec.podSelector).toEqual((find(objects, 'Deployment') as Json).spec.selector);
      expect(kinds(objects)).not.toContain('ServiceMonitor');
    });

    it('metrics off: no metrics Service and only webhook traffic admitted', () => {
      const objects = controllerObjects(render({ metrics: false }));
      expect(objects.filter((o) => o.kind === 'Service').map((o) => o.metadata.name)).toEqual(['tensor-fusion-webhook']);
      expect((find(objects, 'NetworkPolicy') as Json).spec.ingress).toEqual([{ ports: [{ port: 9443, protocol: 'TCP' }] }]);
    });

    it('serviceMonitor: scrapes the metrics port of the controller Services', () => {
      const objects = render({ serviceMonitor: true });
      const sm = find(objects, 'ServiceMonitor') as Json;
      expect(sm.apiVersion).toBe('monitoring.coreos.com/v1');
      expect(sm.spec.endpoints).toEqual([{ port: 'metrics', path: '/metrics', interval: '30s', scheme: 'http' }]);
      const metricsLabels = find(objects, 'Service', 'tensor-fusion-controller-metrics').metadata.labels ?? {};
      for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) expect(metricsLabels[k]).toBe(v);
    });
  });

  it('installCrds false leaves the CRDs out', () => {
    expect(kinds(render({ installCrds: false }))).not.toContain('CustomResourceDefinition');
  });
});
