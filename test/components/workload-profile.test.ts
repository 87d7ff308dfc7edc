/** WorkloadProfile and TensorFusionWorkload in cdk8s and Pulumi: every seed 003 field, namespaced. */
import {
  TensorFusionWorkload as Cdk8sTensorFusionWorkload,
  WorkloadProfile as Cdk8sWorkloadProfile,
  WorkloadProfileProps,
} from '../../components/cdk8s';
import { TensorFusionWorkload as PulumiTensorFusionWorkload, WorkloadProfile as PulumiWorkloadProfile } from '../../components/pulumi';
import { synthChart } from '../support/cdk8s';
import { valueOf } from '../support/pulumi-mocks';
import { validateAll } from '../support/validate-k8s';
import { sameInBoth } from './frameworks';

/**
 * Every spec field, nodeAffinity and the full autoScalingConfig included, under the spec's names (so
 * `isLocalGPU`, the deprecated spelling of the `isLocalGpu` prop, which still works).
 */
const fullSpec = {
  resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } },
  qos: 'high' as const,
  replicas: 2,
  isLocalGPU: true,
  poolName: 'default-pool',
  gpuCount: 2,
  gpuModel: 'H100',
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [
        {
          matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In' as const, values: ['zone-a'] }],
          matchFields: [{ key: 'metadata.name', operator: 'NotIn' as const, values: ['gpu-bad-0'] }],
        },
      ],
    },
    preferredDuringSchedulingIgnoredDuringExecution: [
      { weight: 50, preference: { matchExpressions: [{ key: 'nvidia.com/gpu.product', operator: 'Exists' as const }] } },
    ],
  },
  autoScalingConfig: {
    autoSetLimits: {
      enable: true,
      evaluationPeriod: '30s',
      extraTFlopsBufferRatio: '0.1',
      ignoredDeltaRange: '0.05',
      maxRatioToRequests: '5.0',
      scaleUpStep: '0.2',
      targetResource: 'all' as const,
      prediction: { enable: true, historyDataPeriod: '7d', model: 'linear-trend' as const, predictionPeriod: '1h' },
    },
    autoSetReplicas: {
      enable: true,
      evaluationPeriod: '10m',
      scaleDownCoolDownTime: '5m',
      scaleDownStep: '0.1',
      scaleUpCoolDownTime: '1m',
      scaleUpStep: '0.5',
      targetTFlopsOfLimits: '0.8',
    },
    autoSetRequests: {
      enable: true,
      aggregationPeriod: '1d',
      evaluationPeriod: '14d',
      extraBufferRatio: '0.1',
      percentileForAutoRequests: '0.95',
      targetResource: 'vram' as const,
      prediction: { enable: false, historyDataPeriod: '14d', model: 'seasonal-naive' as const, predictionPeriod: '1d' },
    },
  },
};

describe('WorkloadProfile', () => {
  it('renders every seed 003 field under its own name, with metadata, in both frameworks', async () => {
    const props: WorkloadProfileProps = { name: 'full', namespace: 'ml', labels: { team: 'nlp' }, annotations: { note: 'x' }, ...fullSpec };
    const [profile] = await sameInBoth(
      (chart) => new Cdk8sWorkloadProfile(chart, 'full', props),
      () => void new PulumiWorkloadProfile('full', props),
    );
    expect(profile).toEqual({
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'WorkloadProfile',
      metadata: { name: 'full', namespace: 'ml', labels: { team: 'nlp' }, annotations: { note: 'x' } },
      spec: fullSpec,
    });
    validateAll([profile]);
  });

  it('renders the documented example profile (isLocalGpu written as the spec field isLocalGPU) with an empty autoScalingConfig', async () => {
    const props: WorkloadProfileProps = {
      namespace: 'ml',
      resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } },
      isLocalGpu: true,
      poolName: 'default-pool',
      qos: 'medium',
      autoScalingConfig: {},
    };
    const [profile] = await sameInBoth(
      (chart) => new Cdk8sWorkloadProfile(chart, 'example-workload-profile', props),
      () => void new PulumiWorkloadProfile('example-workload-profile', props),
    );
    expect(profile.metadata).toEqual({ name: 'example-workload-profile', namespace: 'ml' });
    expect(profile.spec).toEqual({
      resources: { requests: { tflops: '5', vram: '3Gi' }, limits: { tflops: '15', vram: '3Gi' } },
      isLocalGPU: true,
      poolName: 'default-pool',
      qos: 'medium',
      autoScalingConfig: {},
    });
    validateAll([profile]);
  });

  it("takes the chart's namespace in cdk8s when none is given, and keeps an explicit one", () => {
    const objects = synthChart(
      (chart) => {
        new Cdk8sWorkloadProfile(chart, 'implicit', {});
        new Cdk8sWorkloadProfile(chart, 'explicit', { namespace: 'other' });
      },
      { namespace: 'ml' },
    );
    expect(objects.map((o) => [o.metadata.name, o.metadata.namespace])).toEqual([
      ['implicit', 'ml'],
      ['explicit', 'other'],
    ]);
  });

  it('does not keep references to the props (later changes to them do not leak in)', () => {
    const resources = { requests: { tflops: '1', vram: '1Gi' }, limits: { tflops: '1', vram: '4Gi' } };
    const objects = synthChart((chart) => {
      new Cdk8sWorkloadProfile(chart, 'p', { resources });
      resources.requests.vram = '2Gi';
    });
    expect((objects[0].spec as typeof fullSpec).resources.requests.vram).toBe('1Gi');
  });
});

describe('TensorFusionWorkload', () => {
  it('renders the WorkloadProfile spec fields in both frameworks', async () => {
    const props = { name: 'pytorch-example', namespace: 'ml', ...fullSpec };
    const [workload] = await sameInBoth(
      (chart) => new Cdk8sTensorFusionWorkload(chart, 'w', props),
      () => void new PulumiTensorFusionWorkload('w', props),
    );
    expect(workload).toEqual({
      apiVersion: 'tensor-fusion.ai/v1',
      kind: 'TensorFusionWorkload',
      metadata: { name: 'pytorch-example', namespace: 'ml' },
      spec: fullSpec,
    });
    validateAll([workload]);
  });

  it('exposes the workload and profile names to reference from annotations (Outputs in Pulumi)', async () => {
    synthChart((chart) => {
      expect(new Cdk8sTensorFusionWorkload(chart, 'tfw', {}).workloadName).toBe('tfw');
      expect(new Cdk8sWorkloadProfile(chart, 'wp', { name: 'named' }).profileName).toBe('named');
    });
    expect(await valueOf(new PulumiTensorFusionWorkload('tfw2', {}).workloadName)).toBe('tfw2');
    expect(await valueOf(new PulumiWorkloadProfile('wp2', { name: 'named' }).profileName)).toBe('named');
  });
});
