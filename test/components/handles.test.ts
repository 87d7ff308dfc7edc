/**
 * Both frameworks name a component's child object(s) alike: `apiObject`, and `apiObjects` on the
 * controller. Pulumi's earlier names (`resource`, `resources`, `patch`) remain as deprecated aliases.
 */
import { Chart } from 'cdk8s';
import * as cdk8s from '../../components/cdk8s';
import * as pulumi from '../../components/pulumi';
import { synthChart } from '../support/cdk8s';
import { capture } from '../support/pulumi-mocks';

const NODE = { nodeName: 'gpu-0', pools: ['p'] };
const QUOTA = { namespace: 'ml', total: { maxWorkers: 4 } };
const PROFILE = { resources: { requests: { tflops: '10', vram: '4Gi' }, limits: { tflops: '20', vram: '4Gi' } } };

describe('child handles', () => {
  it('cdk8s: apiObject on each kind, apiObjects on the controller', () => {
    let built: Record<string, unknown> = {};
    synthChart((chart: Chart) => {
      built = {
        pool: new cdk8s.GpuPool(chart, 'p'),
        node: new cdk8s.GpuNode(chart, 'n', NODE),
        profile: new cdk8s.WorkloadProfile(chart, 'wp', PROFILE),
        workload: new cdk8s.TensorFusionWorkload(chart, 'w', { poolName: 'p', ...PROFILE }),
        quota: new cdk8s.GpuResourceQuota(chart, 'q', QUOTA),
        controller: new cdk8s.TensorFusionController(chart, 'c'),
      };
    });
    for (const k of ['pool', 'node', 'profile', 'workload', 'quota']) expect((built[k] as { apiObject: unknown }).apiObject).toBeDefined();
    expect((built.controller as cdk8s.TensorFusionController).apiObjects.length).toBeGreaterThan(5);
  });

  it('Pulumi: the same names, and the deprecated aliases return the same objects', async () => {
    let built: {
      pool?: pulumi.GpuPool;
      node?: pulumi.GpuNode;
      profile?: pulumi.WorkloadProfile;
      workload?: pulumi.TensorFusionWorkload;
      quota?: pulumi.GpuResourceQuota;
      controller?: pulumi.TensorFusionController;
    } = {};
    await capture(() => {
      built = {
        pool: new pulumi.GpuPool('p'),
        node: new pulumi.GpuNode('n', NODE),
        profile: new pulumi.WorkloadProfile('wp', PROFILE),
        workload: new pulumi.TensorFusionWorkload('w', { poolName: 'p', ...PROFILE }),
        quota: new pulumi.GpuResourceQuota('q', QUOTA),
        controller: new pulumi.TensorFusionController('c'),
      };
    });
    const { pool, node, profile, workload, quota, controller } = built as Required<typeof built>;
    // A new component: apiObject only, no deprecated alias.
    expect(quota.apiObject).toBeDefined();
    for (const c of [pool, profile, workload]) {
      expect(c.apiObject).toBeDefined();
      expect(c.resource).toBe(c.apiObject);
    }
    expect(node.apiObject).toBeDefined();
    expect(node.patch).toBe(node.apiObject);
    expect(controller.apiObjects.length).toBeGreaterThan(5);
    expect(controller.resources).toBe(controller.apiObjects);
  });
});
