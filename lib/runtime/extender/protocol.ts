/**
 * The kube-scheduler extender wire format (k8s.io/kube-scheduler/extender/v1). The Go structs have no
 * json tags, so the keys are the Go field names. With `nodeCacheCapable: true` the scheduler sends and
 * expects node names only.
 */
import type { K8sObject } from '../kube/cluster';

/** Filter and prioritize request. */
export interface ExtenderArgs {
  Pod: K8sObject;
  Nodes?: { items?: K8sObject[] } | null;
  NodeNames?: string[] | null;
}

/** Filter response. An empty `Error` means success. */
export interface ExtenderFilterResult {
  Nodes: null;
  NodeNames: string[];
  /** Nodes that failed; preemption may still try them. */
  FailedNodes: Record<string, string>;
  /** Nodes that failed where evicting pods would not help. */
  FailedAndUnresolvableNodes: Record<string, string>;
  Error: string;
}

/** One entry of a prioritize response. */
export interface HostPriority {
  Host: string;
  Score: number;
}

/** Scores are 0..10 (MaxExtenderPriority); the scheduler multiplies them by weight × 10. */
export const MAX_EXTENDER_PRIORITY = 10;

/** Bind request. */
export interface ExtenderBindingArgs {
  PodName: string;
  PodNamespace: string;
  PodUID: string;
  Node: string;
}

export interface ExtenderBindingResult {
  Error: string;
}

/** The node names of a request, whichever form the scheduler sent. */
export function nodeNamesOf(args: ExtenderArgs): string[] {
  if (args.NodeNames) return args.NodeNames;
  return (args.Nodes?.items ?? []).map((n) => n.metadata?.name).filter((n): n is string => typeof n === 'string');
}
