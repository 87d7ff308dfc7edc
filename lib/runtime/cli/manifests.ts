/**
 * Manifests read from files: the workloads `kubectl tf plan -f` places, and the synthesized platform
 * `--from` plans against. A platform's Nodes (with their GPU Feature Discovery labels) become the GPU
 * nodes and GPUs the controller's node reconciler would make of them, as if every node were Ready.
 */
import { parseAllDocuments } from 'yaml';
import type { GPU, GPUNode, GPUPool, GPUResourceQuota, WorkloadProfile } from '../../api';
import { API_VERSION } from '../../model/group';
import { MANAGED_BY_LABEL, poolMembershipLabel } from '../../model/metadata-keys';
import type { K8sObject } from '../kube/cluster';
import { gpuName, gpuStatus, NodeLike, nodeInventory } from '../shared/capacity';
import { matchingPools } from '../reconcile/node-selector';
import type { ClusterObjects } from './cluster-objects';
import { CliError, EXIT } from './cli-error';

/** The objects of YAML or JSON files, `List` items flattened; a parse error names the file and line. */
export function readManifests(files: readonly string[], read: (file: string) => string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = read(file);
    } catch (err) {
      throw new CliError(`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, EXIT.usage);
    }
    parseAllDocuments(text).forEach((doc, i) => {
      const error = doc.errors[0];
      if (error) throw new CliError(`${file}: document ${i + 1}: ${error.message.split('\n')[0]}`, EXIT.usage);
      const value = doc.toJS() as unknown;
      if (value === null || value === undefined) return;
      if (typeof value !== 'object' || Array.isArray(value) || typeof (value as K8sObject).kind !== 'string') {
        throw new CliError(`${file}: document ${i + 1}: expected a Kubernetes object with a kind`, EXIT.usage);
      }
      const o = value as K8sObject & { items?: K8sObject[] };
      if (o.kind?.endsWith('List') && Array.isArray(o.items)) out.push(...o.items);
      else out.push(o);
    });
  }
  return out;
}

const ofKind = <T>(objects: readonly K8sObject[], kind: string) => objects.filter((o) => o.kind === kind) as unknown as (T & K8sObject)[];

/**
 * A cluster as a synthesized platform declares it: its pools, profiles and quotas, and for each Node
 * its pool picks (the first by name whose selector matches), a GPUNode and one Running GPU per device
 * from the node's labels. Nodes count as Ready: the plan is for the cluster as declared.
 */
export function clusterFromManifests(objects: readonly K8sObject[]): ClusterObjects {
  const pools = ofKind<GPUPool>(objects, 'GPUPool');
  const nodes = ofKind<NodeLike>(objects, 'Node').map((n) => ({
    ...n,
    status: { ...(n.status as object), conditions: [{ type: 'Ready', status: 'True' }] },
  }));
  const gpuNodes: (GPUNode & K8sObject)[] = [];
  const gpus: (GPU & K8sObject)[] = [];
  for (const node of nodes) {
    const pool = matchingPools(pools, node)[0];
    const inv = pool && nodeInventory(node.metadata.labels, pool.spec.capacityConfig?.gpuTflops);
    if (!pool || !inv) continue;
    const name = node.metadata.name ?? '';
    const poolName = pool.metadata.name ?? '';
    gpuNodes.push({
      apiVersion: API_VERSION,
      kind: 'GPUNode',
      metadata: { name, labels: { [MANAGED_BY_LABEL]: poolName, [poolMembershipLabel(poolName)]: 'true' } },
      spec: { manageMode: 'AutoSelect' },
    } as GPUNode & K8sObject);
    for (let i = 0; i < inv.count; i++) {
      gpus.push({
        apiVersion: API_VERSION,
        kind: 'GPU',
        metadata: { name: gpuName(name, i), labels: { [MANAGED_BY_LABEL]: name } },
        status: gpuStatus(node, inv, i, undefined),
      } as GPU & K8sObject);
    }
  }
  return {
    nodes,
    pods: [],
    pools,
    gpuNodes,
    gpus,
    workloads: [],
    profiles: ofKind<WorkloadProfile>(objects, 'WorkloadProfile'),
    quotas: ofKind<GPUResourceQuota>(objects, 'GPUResourceQuota'),
  };
}
