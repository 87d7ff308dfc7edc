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
import { FieldIssue, fieldIssue } from '../../model/errors';
import { manifestIssues } from './manifest-shape';

/** The objects of YAML or JSON files, `List` items flattened; a parse or shape error names the file, the document and the field. */
export function readManifests(files: readonly string[], read: (file: string) => string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = read(file);
    } catch (err) {
      throw new CliError(`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, EXIT.usage);
    }
    documentsOf(file, text).forEach((value, i) => {
      const at = `${file}: document ${i + 1}`;
      if (value === null || value === undefined) return;
      const list = value as { kind?: unknown; items?: unknown };
      if (typeof list.kind === 'string' && list.kind.endsWith('List') && list.items !== undefined) {
        if (!Array.isArray(list.items)) throw shapeError(at, [fieldIssue('items', list.items, 'a list of objects')]);
        list.items.forEach((item, k) => out.push(checked(`${at}: items[${k}]`, item)));
      } else out.push(checked(at, value));
    });
  }
  return out;
}

/** The documents of one file as plain values; a YAML error (or one built to exhaust the parser) names the file and the document. */
function documentsOf(file: string, text: string): unknown[] {
  let docs: ReturnType<typeof parseAllDocuments>;
  try {
    docs = parseAllDocuments(text);
  } catch (err) {
    throw new CliError(`${file}: not YAML or JSON (${firstLine(err)})`, EXIT.usage);
  }
  // A single stream parses to an array; an empty file to a lone document or an empty list.
  return (Array.isArray(docs) ? docs : [docs]).map((doc, i) => {
    const error = doc.errors[0];
    if (error) throw new CliError(`${file}: document ${i + 1}: ${firstLine(error)}`, EXIT.usage);
    try {
      return doc.toJS({ maxAliasCount: 1000 }) as unknown;
    } catch (err) {
      throw new CliError(`${file}: document ${i + 1}: ${firstLine(err)}`, EXIT.usage);
    }
  });
}

const firstLine = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0];

function shapeError(at: string, issues: readonly FieldIssue[]): CliError {
  return new CliError(`${at}: ${issues.map((x) => x.message).join('; ')}`, EXIT.usage);
}

/** `value` as an object the plan can read, or the error that names what is wrong. */
function checked(at: string, value: unknown): K8sObject {
  const issues = manifestIssues(value);
  if (issues.length > 0) throw shapeError(at, issues);
  return value as K8sObject;
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
