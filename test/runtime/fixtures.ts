/** Objects and helpers shared by the runtime tests and the controller benchmark. */
import pino from 'pino';
import { GFD, GPU_IDS_ANNOTATION, WORKLOAD_LABEL } from '../../lib/model/metadata-keys';
import { T9K } from '../../lib/t9k/keys';
import { Controller, ControllerOptions } from '../../lib/runtime/reconcile/controller';
import { ApiServerDouble, Obj, clusterFor } from '../support/api-server';

export const silent = pino({ level: 'silent' });

export function gpuNodeObj(
  name: string,
  opts: { product?: string; count?: number; memMiB?: number; pool?: string; xgn?: boolean; ready?: boolean; taints?: unknown[] } = {},
): Obj {
  const labels: Record<string, string> = {
    'kubernetes.io/hostname': name,
    [GFD.product]: opts.product ?? 'NVIDIA-A100-SXM4-80GB',
    [GFD.count]: String(opts.count ?? 2),
    [GFD.memory]: String(opts.memMiB ?? 81920),
    'example.com/gpu-pool': opts.pool ?? 'a',
  };
  if (opts.xgn) labels[T9K.allocModeLabel] = 'xgn';
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels },
    spec: opts.taints ? { taints: opts.taints } : {},
    status: { conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }] },
  };
}

export function poolObj(name: string, selectorValue: string, extra: Record<string, unknown> = {}): Obj {
  return {
    apiVersion: 'tensor-fusion.ai/v1',
    kind: 'GPUPool',
    metadata: { name },
    spec: {
      nodeManagerConfig: {
        nodeSelector: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'example.com/gpu-pool', operator: 'In', values: [selectorValue] }] }],
        },
      },
      capacityConfig: { oversubscription: { tflopsOversellRatio: 200 }, ...extra },
    },
  };
}

export function podObj(
  name: string,
  node: string,
  opts: { gpus?: string; tflops?: string; vram?: string; workload?: string; ready?: boolean; phase?: string } = {},
): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      labels: opts.workload ? { [WORKLOAD_LABEL]: opts.workload } : {},
      annotations: opts.gpus
        ? {
            [GPU_IDS_ANNOTATION]: opts.gpus,
            'tensor-fusion.ai/tflops-request': opts.tflops ?? '10',
            'tensor-fusion.ai/vram-request': opts.vram ?? '4Gi',
          }
        : {},
    },
    spec: { nodeName: node, containers: [{ name: 'main', image: 'example.io/app:1', env: [{ name: 'A', value: 'x'.repeat(200) }] }] },
    status: { phase: opts.phase ?? 'Running', conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }] },
  };
}

export function workloadObj(name: string, replicas: number): Obj {
  return { apiVersion: 'tensor-fusion.ai/v1', kind: 'TensorFusionWorkload', metadata: { name, namespace: 'default' }, spec: { replicas } };
}

/** A controller with short timings, reading and writing through its own client. */
export function testController(api: ApiServerDouble, name = 'ctl', extra: Partial<ControllerOptions> = {}): Controller {
  return new Controller({
    ...extra,
    cluster: clusterFor(api, name),
    logger: silent,
    informer: { minWatchTimeoutSeconds: 5, idleTimeoutMs: 1500, backoffInitialMs: 20, backoffMaxMs: 200, unhealthyAfterMs: 2000 },
    queue: { baseDelayMs: 5, maxDelayMs: 200, qps: 1000, burst: 1000 },
  });
}

export { eventually } from '../support/poll';
