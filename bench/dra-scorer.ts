/**
 * The node-scoring lever of bench:schedule's DRA side: a loopback scheduler extender that answers only
 * prioritize, ranking the nodes kube-scheduler found feasible (DRA filter included) as our allocator
 * would (lib/allocator, the pool's placement mode and learned workload mix), the best one 10 and the
 * rest 0, as our extender's prioritize does. kube-scheduler's DRA allocator still picks the devices on
 * that node; the allocator is told what it picked (record) before the next pod comes.
 */
import { createServer, IncomingMessage, Server } from 'http';
import type { AddressInfo } from 'net';
import { Allocator, AllocationRequest } from '../lib/allocator';
import { DEFAULT_PLACEMENT_MODE } from '../lib/model/rules';
import { DRA_POD_CLAIM } from '../lib/model/dra';
import type { K8sObject } from '../lib/runtime/kube/cluster';
import { podRequests } from '../lib/runtime/shared/pod-requests';
import type { ClaimTemplate } from '../lib/runtime/shared/dra/claim-template';
import { claimShape, ClaimResult } from '../lib/runtime/extender/dra-score';
import { ExtenderArgs, HostPriority, MAX_EXTENDER_PRIORITY, nodeNamesOf } from '../lib/runtime/extender/protocol';

const POOL = 'dra';

/** A node as the scorer knows it: name, CPU (millicores), memory (bytes) and GPUs. */
export interface ScoredNode {
  name: string;
  cpu: number;
  memory: number;
  model: string;
  gpus: number;
  /** Per GPU: TFLOPS and VRAM bytes, as published. */
  tflops: number;
  vram: number;
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export class DraScorer {
  private readonly allocator: Allocator;
  private server?: Server;
  /** prioritize answers, for the figures. */
  calls = 0;

  constructor(
    nodes: readonly ScoredNode[],
    private readonly templates: ReadonlyMap<string, ClaimTemplate>,
    seed: number,
  ) {
    this.allocator = new Allocator({ seed, pools: { [POOL]: { placementMode: DEFAULT_PLACEMENT_MODE, tflopsOversellRatio: 100 } } });
    for (const n of nodes) {
      this.allocator.addNode({
        name: n.name,
        pool: POOL,
        cpu: n.cpu,
        memory: n.memory,
        gpus: Array.from({ length: n.gpus }, (_, i) => ({
          id: gpuId(n.name, `gpu-${i}`),
          index: i,
          model: n.model,
          tflops: n.tflops,
          vram: n.vram,
        })),
      });
    }
  }

  /** The allocator's request for a pod: its claim template's shape, or its CPU and memory only. */
  private request(pod: K8sObject): AllocationRequest {
    const claims = (pod.spec as { resourceClaims?: { name: string; resourceClaimTemplateName?: string }[] }).resourceClaims ?? [];
    const name = claims.find((c) => c.name === DRA_POD_CLAIM)?.resourceClaimTemplateName;
    const template = name === undefined ? undefined : this.templates.get(name);
    if (name !== undefined && !template) throw new Error(`pod ${pod.metadata.name}: unknown ResourceClaimTemplate ${name}`);
    const shape = template ? claimShape(template.spec.spec.devices) : undefined;
    const { cpu, memory } = podRequests(pod);
    return {
      id: pod.metadata.uid ?? `${pod.metadata.namespace}/${pod.metadata.name}`,
      pool: POOL,
      qos: 'medium',
      gpuCount: shape?.gpuCount ?? 0,
      tflopsRequest: shape?.tflops ?? 0,
      vramRequest: shape?.vram ?? 0,
      cpu,
      memory,
    };
  }

  prioritize(args: ExtenderArgs): HostPriority[] {
    this.calls++;
    const nodes = nodeNamesOf(args);
    const best = this.allocator.best(this.request(args.Pod), nodes);
    return nodes.map((n) => ({ Host: n, Score: n === best ? MAX_EXTENDER_PRIORITY : 0 }));
  }

  /** Counts a bound pod where kube-scheduler put it, on the devices its claim was given. */
  record(pod: K8sObject, node: string, results: readonly ClaimResult[]): void {
    const r = this.request(pod);
    const restored = this.allocator.restore([
      {
        id: r.id,
        pool: POOL,
        node,
        gpuIds: results.map((d) => gpuId(d.pool, d.device)).sort(),
        tflopsRequest: r.tflopsRequest,
        tflopsLimit: r.tflopsRequest,
        vramRequest: r.vramRequest,
        vramLimit: r.vramRequest,
        cpu: r.cpu ?? 0,
        memory: r.memory ?? 0,
        qos: r.qos,
      },
    ]);
    if (restored.skipped.length > 0) throw new Error(`scorer: ${JSON.stringify(restored.skipped)}`);
  }

  /** Serves prioritize on loopback; returns the urlPrefix. */
  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      void body(req).then((text) => {
        try {
          const out = this.prioritize(JSON.parse(text) as ExtenderArgs);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
        } catch (err) {
          res.writeHead(500).end(String(err));
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** The allocator's GPU id of a device: `<node>/<device>` (our slices' pool is the node). */
function gpuId(node: string, device: string): string {
  return `${node}/${device}`;
}
