import {
  assertGpuNodeSpec,
  assertGpuPoolSpec,
  assertGpuStatus,
  assertObject,
  assertTensorFusionWorkloadSpec,
  assertWorkloadProfileSpec,
  validateObject,
  validateSpec,
  validateStatus,
  WorkloadProfileSpec,
} from '../../lib/api';
import {
  exampleGpu,
  exampleGpuNode,
  exampleGpuPool,
  exampleObjects,
  exampleTensorFusionWorkload,
  exampleWorkloadProfile,
  fullWorkloadProfileSpec,
  seedWorkloadProfileSpec,
} from '../support/api-examples';
import { ValidationError } from '../../lib/model/errors';
import { checkGpuCount, checkReplicas } from '../../lib/model/rules';

const messages = (issues: { message: string }[]) => issues.map((i) => i.message);
const profile = (patch: Record<string, unknown>) => ({ ...seedWorkloadProfileSpec(), ...patch });
const wp = (spec: unknown) => messages(validateSpec('WorkloadProfile', spec));
const resources = (requests: Record<string, unknown>, limits: Record<string, unknown>) =>
  profile({ resources: { requests: { tflops: '10', vram: '4Gi', ...requests }, limits: { tflops: '20', vram: '4Gi', ...limits } } });

describe('valid objects', () => {
  it('accepts every sample object and the seed profiles', () => {
    for (const obj of exampleObjects()) expect([obj.kind, validateObject(obj)]).toEqual([obj.kind, []]);
    expect(wp(seedWorkloadProfileSpec())).toEqual([]);
    expect(wp(fullWorkloadProfileSpec())).toEqual([]);
    expect(wp({})).toEqual([]);
  });

  it('changes nothing in the input (no defaults applied)', () => {
    const pool = exampleGpuPool();
    delete pool.spec.placement;
    const before = JSON.stringify(pool);
    validateObject(pool);
    expect(JSON.stringify(pool)).toBe(before);
  });

  it('accepts anything inside an embedded pod template', () => {
    const spec = exampleGpuPool().spec;
    spec.componentConfig = { worker: { podTemplate: { anything: { goes: [1, 'two'] } } } };
    expect(validateSpec('GPUPool', spec)).toEqual([]);
  });
});

describe('WorkloadProfile spec rules', () => {
  it('rejects a VRAM that is not a quantity', () => {
    expect(wp(resources({ vram: '4GB' }, {}))).toEqual([
      'spec.resources.requests.vram: got "4GB", expected a Kubernetes quantity such as 4Gi or 512Mi, at most 1Pi',
    ]);
  });

  it('rejects fractional TFLOPS given as a number', () => {
    expect(wp(resources({ tflops: 0.5 }, {}))).toEqual([
      "spec.resources.requests.tflops: got 0.5, expected a Kubernetes quantity such as '10', '0.5' or 500m (fractions as strings), at most 100000",
    ]);
  });

  it('accepts fractional TFLOPS as strings and milli units', () => {
    expect(wp(resources({ tflops: '0.5' }, { tflops: '500m' }))).toEqual([]);
  });

  it('requires positive TFLOPS and VRAM', () => {
    expect(wp(resources({ tflops: '0', vram: '0' }, {}))).toEqual([
      "spec.resources.requests.tflops: got \"0\", expected a positive number of TFLOPS such as '10' or '0.5'",
      'spec.resources.requests.vram: got "0", expected a positive Kubernetes quantity such as 4Gi or 512Mi',
    ]);
  });

  it('requires each limit to be at least its request', () => {
    expect(wp(resources({ tflops: '10', vram: '4Gi' }, { tflops: '5', vram: '2048Mi' }))).toEqual([
      'spec.resources.limits.tflops: got "5", expected at least spec.resources.requests.tflops (10)',
      'spec.resources.limits.vram: got "2048Mi", expected at least spec.resources.requests.vram (4Gi)',
    ]);
    expect(wp(resources({ vram: '4Gi' }, { vram: '4096Mi' }))).toEqual([]);
  });

  it('requires requests and limits with tflops and vram once resources is set', () => {
    expect(wp(profile({ resources: { requests: { tflops: '10' } } }))).toEqual([
      'spec.resources.limits: got nothing, expected an object with fields tflops, vram (required in spec.resources)',
      'spec.resources.requests.vram: got nothing, expected a Kubernetes quantity such as 4Gi or 512Mi, at most 1Pi (required in spec.resources.requests)',
    ]);
  });

  it('rejects an unknown qos', () => {
    expect(wp(profile({ qos: 'urgent' }))).toEqual(['spec.qos: got "urgent", expected one of low, medium, high, critical']);
  });

  it('rejects gpuCount outside 1..128 or not an integer, with the words of lib/model/rules', () => {
    for (const bad of [0, 129, 1.5]) {
      expect(wp(profile({ gpuCount: bad }))).toEqual([checkGpuCount('spec.gpuCount', bad)?.message]);
    }
    expect(wp(profile({ gpuCount: 0 }))).toEqual(['spec.gpuCount: got 0, expected an integer from 1 to 128']);
    expect(wp(profile({ gpuCount: 128 }))).toEqual([]);
  });

  it('rejects replicas that are negative or not integers, with the words of lib/model/rules', () => {
    for (const bad of [-1, 1.5, '2']) {
      expect(wp(profile({ replicas: bad }))).toEqual([checkReplicas('spec.replicas', bad)?.message]);
    }
    expect(wp(profile({ replicas: -1 }))).toEqual(['spec.replicas: got -1, expected an integer from 0 to 10000']);
    expect(wp(profile({ replicas: 0 }))).toEqual([]);
  });

  it('rejects wrong scalar types', () => {
    expect(wp(profile({ isLocalGPU: 'yes', gpuModel: 100, poolName: ['a'] }))).toEqual([
      'spec.isLocalGPU: got "yes", expected true or false',
      'spec.poolName: got ["a"], expected a string',
      'spec.gpuModel: got 100, expected a string',
    ]);
    expect(wp(profile({ autoScalingConfig: { autoSetLimits: { maxRatioToRequests: 5 } } }))).toEqual([
      'spec.autoScalingConfig.autoSetLimits.maxRatioToRequests: got 5, expected a multiplier of at least 1 such as 5.0',
    ]);
    expect(wp('A100')).toEqual([
      'spec: got "A100", expected an object with fields resources, qos, replicas, isLocalGPU, poolName, gpuCount, gpuModel, nodeAffinity, autoScalingConfig',
    ]);
  });

  it('rejects an unknown field with a did-you-mean hint', () => {
    expect(wp(profile({ gpuModle: 'A100' }))).toEqual([
      'spec.gpuModle: got "A100", expected a known field of spec (did you mean gpuModel?)',
    ]);
    expect(wp(profile({ autoScalingConfig: { autoSetLimit: { enable: true } } }))).toEqual([
      'spec.autoScalingConfig.autoSetLimit: got {"enable":true}, expected a known field of spec.autoScalingConfig (did you mean autoSetLimits?)',
    ]);
  });

  it('lists the known fields when no name is close', () => {
    expect(wp(resources({ compute: '50' }, {}))).toEqual([
      'spec.resources.requests.compute: got "50", expected a known field of spec.resources.requests: tflops, vram',
    ]);
  });

  it("rejects seed 001's autoscaling fields with a pointer to autoScalingConfig", () => {
    expect(wp(profile({ autoScaling: true, minReplicas: 1, maxReplicas: 5 }))).toEqual([
      'spec.autoScaling: got true, expected spec.autoScalingConfig instead: autoScaling is not a WorkloadProfile field',
      'spec.minReplicas: got 1, expected spec.autoScalingConfig instead: minReplicas is not a WorkloadProfile field',
      'spec.maxReplicas: got 5, expected spec.autoScalingConfig instead: maxReplicas is not a WorkloadProfile field',
    ]);
    expect(messages(validateSpec('TensorFusionWorkload', { minReplicas: 1 }, 'props.spec'))).toEqual([
      'props.spec.minReplicas: got 1, expected props.spec.autoScalingConfig instead: minReplicas is not a TensorFusionWorkload field',
    ]);
  });

  it('checks the Kubernetes NodeAffinity shape', () => {
    const affinity = {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'gpu', operator: 'Is', values: ['a'] }, { operator: 'In' }] }],
      },
      preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 0, preference: {} }],
    };
    expect(wp(profile({ nodeAffinity: affinity }))).toEqual([
      'spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: got "Is", expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt',
      'spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].key: got nothing, expected a string (required in spec.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1])',
      'spec.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: got 0, expected an integer from 1 to 100',
    ]);
  });

  it('reports a field path prefix chosen by the caller', () => {
    expect(messages(validateSpec('WorkloadProfile', profile({ qos: 'x' }), 'props'))).toEqual([
      'props.qos: got "x", expected one of low, medium, high, critical',
    ]);
  });
});

describe('GPUPool spec rules', () => {
  const pool = (patch: Record<string, unknown>) => messages(validateSpec('GPUPool', { ...exampleGpuPool().spec, ...patch }));

  it('requires nodeManagerConfig', () => {
    expect(messages(validateSpec('GPUPool', {}))).toEqual([
      'spec.nodeManagerConfig: got nothing, expected an object with fields nodeSelector, defaultIsolationMode, shareDelivery (required in spec)',
    ]);
  });

  it('bounds the oversubscription percentages', () => {
    expect(pool({ capacityConfig: { oversubscription: { tflopsOversellRatio: 50, vramExpandToHostMem: 101 } } })).toEqual([
      'spec.capacityConfig.oversubscription.tflopsOversellRatio: got 50, expected an integer from 100 to 100000',
      'spec.capacityConfig.oversubscription.vramExpandToHostMem: got 101, expected an integer from 0 to 100',
    ]);
  });

  it('rejects an unknown share delivery', () => {
    expect(pool({ nodeManagerConfig: { nodeSelector: { nodeSelectorTerms: [] }, shareDelivery: 'dra' } })).toEqual([
      'spec.nodeManagerConfig.shareDelivery: got "dra", expected one of DevicePlugin, DRA',
    ]);
  });

  it('rejects an unknown placement mode and default QoS', () => {
    expect(pool({ placement: { mode: 'Random' }, qosConfig: { defaultQoS: 'best' } })).toEqual([
      'spec.qosConfig.defaultQoS: got "best", expected one of low, medium, high, critical',
      'spec.placement.mode: got "Random", expected one of MinFragmentation, CompactFirst, LowLoadFirst, NodeCompactGPULowLoad',
    ]);
  });

  it('requires maxResources to be at least minResources', () => {
    expect(
      pool({ capacityConfig: { minResources: { tflops: '100', vram: '80Gi' }, maxResources: { tflops: '50', vram: '1Ti' } } }),
    ).toEqual(['spec.capacityConfig.maxResources.tflops: got "50", expected at least spec.capacityConfig.minResources.tflops (100)']);
  });

  it('requires positive TFLOPS quantities in the per-model table', () => {
    expect(pool({ capacityConfig: { gpuTflops: { 'NVIDIA A100': '0', H100: 'fast' } } })).toEqual([
      "spec.capacityConfig.gpuTflops.H100: got \"fast\", expected a Kubernetes quantity such as '10', '0.5' or 500m (fractions as strings)",
      'spec.capacityConfig.gpuTflops["NVIDIA A100"]: got "0", expected a positive number of TFLOPS such as \'10\' or \'0.5\'',
    ]);
  });

  it('rejects an unknown field with a did-you-mean hint', () => {
    expect(pool({ defaultUsingLocalGpu: true })).toEqual([
      'spec.defaultUsingLocalGpu: got true, expected a known field of spec (did you mean defaultUsingLocalGPU?)',
    ]);
  });
});

describe('GPUNode, GPU and status rules', () => {
  it('rejects an unknown manage mode', () => {
    expect(messages(validateSpec('GPUNode', { manageMode: 'Auto' }))).toEqual([
      'spec.manageMode: got "Auto", expected one of Manual, AutoSelect, Provisioned',
    ]);
  });

  it('rejects a spec on GPU, which has only a status', () => {
    expect(messages(validateSpec('GPU', { uuid: 'x' }))).toEqual(['spec: got {"uuid":"x"}, expected nothing: GPU has only a status']);
    expect(validateSpec('GPU', undefined)).toEqual([]);
  });

  it('checks GPU status fields', () => {
    const { uuid: _, ...status } = { ...exampleGpu().status!, usedBy: 'kubelet' };
    expect(messages(validateStatus('GPU', status))).toEqual([
      'status.uuid: got nothing, expected a string (required in status)',
      'status.usedBy: got "kubelet", expected one of tensor-fusion, nvidia-device-plugin',
    ]);
  });

  it('checks conditions like metav1.Condition', () => {
    const status = {
      ...exampleTensorFusionWorkload().status!,
      conditions: [{ type: 'Ready', status: 'Yes', reason: 'ok!', message: '', lastTransitionTime: 'yesterday' }],
    };
    expect(messages(validateStatus('TensorFusionWorkload', status))).toEqual([
      'status.conditions[0].status: got "Yes", expected one of True, False, Unknown',
      'status.conditions[0].reason: got "ok!", expected a non-empty string of at most 1024 characters matching ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
      'status.conditions[0].lastTransitionTime: got "yesterday", expected an RFC 3339 date-time such as 2024-01-31T12:00:00Z',
    ]);
  });

  it('checks workload status phase and counts', () => {
    expect(messages(validateStatus('TensorFusionWorkload', { phase: 'Done', readyWorkers: 1 }))).toEqual([
      'status.workerCount: got nothing, expected a non-negative integer (required in status)',
      'status.phase: got "Done", expected one of Pending, Running, Failed, Unknown',
    ]);
  });
});

describe('validateObject', () => {
  it('checks apiVersion and kind', () => {
    expect(messages(validateObject({ ...exampleGpuPool(), apiVersion: 'tensor-fusion.ai/v1beta1' }))).toEqual([
      'apiVersion: got "tensor-fusion.ai/v1beta1", expected tensor-fusion.ai/v1',
    ]);
    expect(messages(validateObject({ apiVersion: 'tensor-fusion.ai/v1', kind: 'GpuPool', metadata: { name: 'a' } }))).toEqual([
      'kind: got "GpuPool", expected one of GPUPool, GPUNode, GPU, WorkloadProfile, TensorFusionWorkload, GPUResourceQuota',
    ]);
    expect(messages(validateObject('GPUPool'))).toEqual(['object: got "GPUPool", expected a tensor-fusion.ai/v1 object']);
  });

  it('keeps cluster-scoped kinds out of namespaces', () => {
    for (const obj of [exampleGpuPool(), exampleGpuNode(), exampleGpu()]) {
      obj.metadata.namespace = 'default';
      expect(messages(validateObject(obj))).toEqual([`metadata.namespace: got "default", expected nothing: ${obj.kind} is cluster-scoped`]);
    }
  });

  it('lets namespaced kinds omit the namespace but checks it when given', () => {
    const profileObj = exampleWorkloadProfile();
    delete profileObj.metadata.namespace;
    expect(validateObject(profileObj)).toEqual([]);
    profileObj.metadata.namespace = 'Team_A';
    expect(messages(validateObject(profileObj))).toEqual([
      'metadata.namespace: got "Team_A", expected a lowercase RFC 1123 label of at most 63 characters such as team-a',
    ]);
  });

  it('checks the name', () => {
    expect(messages(validateObject({ ...exampleGpuPool(), metadata: { name: 'Default Pool' } }))).toEqual([
      'metadata.name: got "Default Pool", expected a lowercase RFC 1123 name of at most 253 characters such as default-pool',
    ]);
    expect(messages(validateObject({ ...exampleGpuPool(), metadata: undefined }))).toEqual([
      'metadata: got nothing, expected an object with a name',
    ]);
  });

  it('rejects unknown top-level fields, including spec on GPU', () => {
    expect(messages(validateObject({ ...exampleWorkloadProfile(), specs: {} }))).toEqual([
      'specs: got {}, expected a known field of WorkloadProfile (did you mean spec?)',
    ]);
    expect(messages(validateObject({ ...exampleGpu(), spec: {} }))).toEqual([
      'spec: got {}, expected a known field of GPU: apiVersion, kind, metadata, status',
    ]);
  });

  it('validates spec and status of the object', () => {
    const obj = exampleTensorFusionWorkload();
    (obj.spec as Record<string, unknown>).qos = 'top';
    (obj.status as Record<string, unknown>).readyWorkers = -2;
    expect(messages(validateObject(obj))).toEqual([
      'spec.qos: got "top", expected one of low, medium, high, critical',
      'status.readyWorkers: got -2, expected a non-negative integer',
    ]);
  });
});

describe('assert helpers', () => {
  it('throw a ValidationError carrying every issue', () => {
    const bad: unknown = { qos: 'urgent', gpuCount: 0 };
    expect(() => assertWorkloadProfileSpec(bad)).toThrow(ValidationError);
    try {
      assertWorkloadProfileSpec(bad, 'props');
    } catch (e) {
      expect((e as ValidationError).issues.map((i) => i.field)).toEqual(['props.qos', 'props.gpuCount']);
      expect((e as Error).message).toBe(
        'props.qos: got "urgent", expected one of low, medium, high, critical\n' +
          'props.gpuCount: got 0, expected an integer from 1 to 128',
      );
    }
    expect(() => assertTensorFusionWorkloadSpec({ replicas: -1 })).toThrow('spec.replicas: got -1, expected an integer from 0 to 10000');
    expect(() => assertGpuPoolSpec({})).toThrow('spec.nodeManagerConfig: got nothing');
    expect(() => assertGpuNodeSpec({ manageMode: 'x' })).toThrow('spec.manageMode: got "x"');
    expect(() => assertGpuStatus({})).toThrow('status.uuid: got nothing');
    expect(() => assertObject({ kind: 'GPU' })).toThrow('apiVersion: got nothing, expected tensor-fusion.ai/v1');
  });

  it('narrow the type when they pass', () => {
    const input: unknown = seedWorkloadProfileSpec();
    assertWorkloadProfileSpec(input);
    const typed: WorkloadProfileSpec = input;
    expect(typed.gpuModel).toBe('A100');
  });
});
