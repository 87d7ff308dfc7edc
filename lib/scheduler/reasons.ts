/**
 * Explains a failed placement. Runs only on failure, so it may look at every GPU of the pool: each
 * node is counted once under CPU or memory, and otherwise each GPU of an allowed model under the
 * first resource it lacks.
 */
import { Need, NodeState } from './state';
import { PlacementReason } from './types';

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function explain(pool: string, nodes: Iterable<NodeState>, need: Need, oversell: number): PlacementReason[] {
  let nodeCount = 0;
  let gpuCount = 0;
  let modelGpus = 0;
  let cpu = 0;
  let mem = 0;
  let vram = 0;
  let tflops = 0;
  let oversold = 0;
  let shortNodes = 0;
  let mostOnOne = 0;
  for (const node of nodes) {
    nodeCount++;
    gpuCount += node.gpus.length;
    if (node.cpuUsed + need.cpu > node.cpuCap) {
      cpu++;
      continue;
    }
    if (node.memUsed + need.mem > node.memCap) {
      mem++;
      continue;
    }
    let fitting = 0;
    let allowed = 0;
    for (const g of node.gpus) {
      if (need.models !== null && !need.models.has(g.model)) continue;
      allowed++;
      if (g.usedV + need.v > g.capV) vram++;
      else if (g.usedT + need.t > g.capT) tflops++;
      else if ((g.limT + need.tl) * 100 > g.capT * oversell) oversold++;
      else fitting++;
    }
    modelGpus += allowed;
    // One GPU that lacks something is explained per GPU above; a node short of GPUs is explained here.
    if (need.k > 0 && fitting < need.k && (need.k > 1 || allowed === 0) && (allowed > 0 || need.models === null)) {
      shortNodes++;
      mostOnOne = Math.max(mostOnOne, fitting);
    }
  }
  const reasons: PlacementReason[] = [];
  if (nodeCount === 0) {
    return [{ kind: 'NoNodesInPool', pool, message: `pool ${JSON.stringify(pool)} has no nodes` }];
  }
  if (need.k > 0 && need.models !== null && modelGpus === 0 && cpu + mem < nodeCount) {
    const models = [...need.models].sort();
    reasons.push({
      kind: 'NoGpuOfModel',
      models,
      gpus: gpuCount,
      message: `none of the pool's ${plural(gpuCount, 'GPU')} is a ${models.join(' or ')}`,
    });
  }
  if (cpu > 0) reasons.push({ kind: 'InsufficientCpu', nodes: cpu, message: `${plural(cpu, 'node')}: not enough CPU` });
  if (mem > 0) reasons.push({ kind: 'InsufficientMemory', nodes: mem, message: `${plural(mem, 'node')}: not enough memory` });
  if (need.k > 0) {
    if (vram > 0) reasons.push({ kind: 'InsufficientVram', gpus: vram, message: `${plural(vram, 'GPU')}: not enough free VRAM` });
    if (tflops > 0) reasons.push({ kind: 'InsufficientTflops', gpus: tflops, message: `${plural(tflops, 'GPU')}: not enough free TFLOPS` });
    if (oversold > 0) {
      reasons.push({
        kind: 'TflopsOversellExceeded',
        gpus: oversold,
        ratio: oversell,
        message: `${plural(oversold, 'GPU')}: TFLOPS limits would exceed ${oversell}% of capacity`,
      });
    }
    if (shortNodes > 0) {
      reasons.push({
        kind: 'NotEnoughGpusOnOneNode',
        nodes: shortNodes,
        needed: need.k,
        mostOnOneNode: mostOnOne,
        message: `${plural(shortNodes, 'node')}: fewer than ${plural(need.k, 'fitting GPU')} (at most ${mostOnOne} on one node)`,
      });
    }
  }
  return reasons;
}
