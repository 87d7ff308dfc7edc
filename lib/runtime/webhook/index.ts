/**
 * The admission webhook: pods labelled `tensor-fusion.ai/enabled: "true"` are resolved (annotations >
 * WorkloadProfile > GPUPool defaults), given a GPU share (local mode) or pointed at their workload's
 * workers (remote mode), and patched; allocations are released when pods end.
 *
 * **Concurrency across replicas: optimistic concurrency on a per-pool ledger.** Every replica serves
 * admissions (the API server load-balances over them), so the allocation must be safe without a
 * single writer. Each GPUPool has a ledger ConfigMap listing its allocations; a replica places a
 * request on an in-memory Allocator mirroring the ledger and commits by updating the ConfigMap with
 * the resourceVersion it read as precondition. A 409 means another replica committed first: re-read,
 * re-place, retry. Requests arriving while a write is in flight are placed and written together
 * (group commit), so a burst costs a handful of writes, not one per pod, and the conflict rate stays
 * low with several replicas. A refusal is only given after a fresh read. Chosen over routing through
 * the leader because it needs no replica-to-replica traffic and keeps admissions working (and
 * correct) during a leader change.
 *
 * **Restart safety.** The ledger is the durable state; pods carry their allocation in the
 * `tensor-fusion.ai/allocation` annotation. The leader's sweep releases allocations of finished or
 * deleted pods, collects allocations whose pod never appeared after a grace period, and restores
 * allocations of running pods missing from the ledger. Dry runs are placed on the mirror and taken
 * back: nothing is written.
 *
 * **TLS.** See tls.ts: self-managed CA and serving certificate rotated by the leader and hot-reloaded
 * by every replica, or cert-manager's mounted files.
 */
export { admitPod, recordedAllocation, TOLERATED_TAINT_PREFIXES, WORKER_INIT_CONTAINER } from './admit';
export type { AdmissionServices, AdmissionView, Taint } from './admit';
export { Allocations } from './allocations';
export type { SweepResult } from './allocations';
export { createCa, issueServingCert, notAfter } from './certificates';
export type { KeyPair } from './certificates';
export { createViewInformers, InformerView } from './cluster-view';
export type { ViewInformers } from './cluster-view';
export { localGpuEnv, mpsMemoryLimit, mpsThreadPercentage, NVIDIA_ENV, remoteClientEnv, TF_ENV } from './env';
export { LedgerBusyError, ledgerName, PoolLedger } from './ledger';
export type { LedgerEntry, PoolTopology } from './ledger';
export { planCollection } from './lifecycle';
export { topOwnerName } from './owner';
export { podPatch } from './patch';
export type { PodMutation } from './patch';
export { ADMISSION_API_VERSION, parseReview, toReview } from './review';
export type { AdmissionRequest, AdmissionResponse, AdmissionReview, Decision } from './review';
export { AdmissionServer, KEEP_ALIVE_MS, MAX_BODY_BYTES } from './server';
export { startWebhook } from './start';
export { serviceDnsNames } from '../../names';
export { webhookComponent } from './component';
export type { StartWebhookOptions, WebhookEnv, WebhookHandle } from './start';
export { FileTlsSource, SECRET_KEYS, SelfManagedTlsSource } from './tls';
export type { TlsSource } from './tls';
export { usageFromAllocations } from './usage';
export type { AllocatedUsage } from './usage';
export { planWorkers, workerPod, WORKER_CONTAINER } from './workers';
export type { WorkerPlan } from './workers';
