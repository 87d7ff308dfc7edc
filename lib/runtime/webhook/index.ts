/**
 * The admission webhook: pods labelled `tensor-fusion.ai/enabled: "true"` are validated and resolved
 * (annotations > WorkloadProfile > GPUPool defaults) and marked: local-GPU pods for our scheduler, with
 * their share request recorded and the placement-dependent env read through the downward API; remote
 * pods pointed at their workload's workers.
 *
 * **No API write on the admission path.** Placement is the scheduler extender's (at bind, one
 * allocator at a time, the pod as the record), and generated TensorFusionWorkloads are the
 * controller's, made from pods that exist. So every replica answers from its caches alone, an
 * admission costs no round trip, and a forged AdmissionReview (anyone who reaches the port can send
 * one) changes nothing in the cluster.
 *
 * **TLS.** See lib/runtime/serving/tls.ts: self-managed CA and serving certificate rotated by the leader and hot-reloaded
 * by every replica, or cert-manager's mounted files.
 */
export { admitPod, COPIED_RECORD_KEYS, WORKER_INIT_CONTAINER } from './admit';
export type { AdmissionView } from './admit';
export { createViewInformers, InformerView } from './cluster-view';
export type { ViewInformers } from './cluster-view';
export { topOwnerName } from './owner';
export { mergeEnv, podPatch } from './patch';
export type { PodMutation } from './patch';
export { ADMISSION_API_VERSION, parseReview, toReview } from './review';
export type { AdmissionRequest, AdmissionResponse, AdmissionReview, Decision } from './review';
export { DEFAULT_SCHEDULER_NAME, isT9kPod, priorityFor, schedulerIssue } from './scheduling';
export { AdmissionServer, KEEP_ALIVE_MS, MAX_BODY_BYTES } from './admission-server';
export { startWebhook } from './start';
export { webhookComponent } from './component';
export type { StartWebhookOptions, WebhookEnv, WebhookHandle } from './start';
export { planWorkers, workerPod, WORKER_CONTAINER } from './workers';
export type { WorkerPlan } from './workers';
