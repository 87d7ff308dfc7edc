/** Input checks of the allocator. Every rule reports through lib/model/errors.ts. */
import { FieldIssue, fieldIssue } from '../model/errors';
import { OVERSELL_MAX, OVERSELL_MIN } from '../model/limits';
import { checkEnum, checkLimitAtLeastRequest, checkQos, GPU_COUNT_MAX, PLACEMENT_MODES } from '../model/rules';
import { AllocationRequest, NodeSpec, PoolConfig } from './types';

type Check = (field: string, value: unknown) => FieldIssue | undefined;

const nonEmptyString: Check = (field, value) =>
  typeof value === 'string' && value.length > 0 ? undefined : fieldIssue(field, value, 'a non-empty string');

const nonNegativeNumber: Check = (field, value) =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? undefined : fieldIssue(field, value, 'a finite number >= 0');

const positiveNumber: Check = (field, value) =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? undefined : fieldIssue(field, value, 'a finite number > 0');

const nonNegativeInteger: Check = (field, value) =>
  Number.isSafeInteger(value) && (value as number) >= 0 ? undefined : fieldIssue(field, value, 'a non-negative integer');

const positiveInteger: Check = (field, value) =>
  Number.isSafeInteger(value) && (value as number) > 0 ? undefined : fieldIssue(field, value, 'a positive integer');

const gpuCount: Check = (field, value) =>
  Number.isInteger(value) && (value as number) >= 0 && (value as number) <= GPU_COUNT_MAX
    ? undefined
    : fieldIssue(field, value, `an integer from 0 to ${GPU_COUNT_MAX}`);

function optional(check: Check): Check {
  return (field, value) => (value === undefined ? undefined : check(field, value));
}

function push(issues: FieldIssue[], issue: FieldIssue | undefined): void {
  if (issue) issues.push(issue);
}

export function validateRequest(r: AllocationRequest, field = 'request'): FieldIssue[] {
  const issues: FieldIssue[] = [];
  push(issues, nonEmptyString(`${field}.id`, r.id));
  push(issues, nonEmptyString(`${field}.pool`, r.pool));
  push(issues, nonNegativeNumber(`${field}.tflopsRequest`, r.tflopsRequest));
  push(issues, optional(nonNegativeNumber)(`${field}.tflopsLimit`, r.tflopsLimit));
  push(issues, nonNegativeInteger(`${field}.vramRequest`, r.vramRequest));
  push(issues, optional(nonNegativeInteger)(`${field}.vramLimit`, r.vramLimit));
  if (issues.length === 0) {
    push(
      issues,
      checkLimitAtLeastRequest(
        `${field}.tflopsLimit`,
        r.tflopsLimit,
        r.tflopsLimit,
        `${field}.tflopsRequest`,
        r.tflopsRequest,
        r.tflopsRequest,
      ),
    );
    push(
      issues,
      checkLimitAtLeastRequest(`${field}.vramLimit`, r.vramLimit, r.vramLimit, `${field}.vramRequest`, r.vramRequest, r.vramRequest),
    );
  }
  push(issues, gpuCount(`${field}.gpuCount`, r.gpuCount));
  const models = r.gpuModel;
  if (models !== undefined) {
    const list = typeof models === 'string' ? [models] : models;
    if (!Array.isArray(list) || list.length === 0 || list.some((m) => typeof m !== 'string' || m.length === 0)) {
      issues.push(fieldIssue(`${field}.gpuModel`, models, 'a GPU model name or a non-empty list of them'));
    }
  }
  push(issues, checkQos(`${field}.qos`, r.qos));
  push(issues, optional(nonNegativeInteger)(`${field}.cpu`, r.cpu));
  push(issues, optional(nonNegativeInteger)(`${field}.memory`, r.memory));
  if (r.placementMode !== undefined) push(issues, checkEnum(`${field}.placementMode`, r.placementMode, PLACEMENT_MODES));
  return issues;
}

export function validateNode(n: NodeSpec, field = 'node'): FieldIssue[] {
  const issues: FieldIssue[] = [];
  push(issues, nonEmptyString(`${field}.name`, n.name));
  push(issues, nonEmptyString(`${field}.pool`, n.pool));
  push(issues, optional(nonNegativeInteger)(`${field}.cpu`, n.cpu));
  push(issues, optional(nonNegativeInteger)(`${field}.memory`, n.memory));
  if (!Array.isArray(n.gpus)) {
    issues.push(fieldIssue(`${field}.gpus`, n.gpus, 'a list of GPUs'));
    return issues;
  }
  const ids = new Set<string>();
  const indexes = new Set<number>();
  n.gpus.forEach((g, i) => {
    const f = `${field}.gpus[${i}]`;
    const idIssue = nonEmptyString(`${f}.id`, g.id);
    push(issues, idIssue);
    if (!idIssue && ids.has(g.id)) issues.push(fieldIssue(`${f}.id`, g.id, 'an id not used by another GPU of the node'));
    ids.add(g.id);
    const indexIssue = nonNegativeInteger(`${f}.index`, g.index);
    push(issues, indexIssue);
    if (!indexIssue && indexes.has(g.index)) issues.push(fieldIssue(`${f}.index`, g.index, 'an index not used by another GPU of the node'));
    indexes.add(g.index);
    push(issues, nonEmptyString(`${f}.model`, g.model));
    push(issues, positiveNumber(`${f}.tflops`, g.tflops));
    push(issues, positiveInteger(`${f}.vram`, g.vram));
  });
  return issues;
}

export function validatePoolConfig(c: PoolConfig, field = 'pool'): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const ratio = c.tflopsOversellRatio;
  if (ratio !== undefined && !(Number.isInteger(ratio) && ratio >= OVERSELL_MIN && ratio <= OVERSELL_MAX)) {
    issues.push(fieldIssue(`${field}.tflopsOversellRatio`, ratio, `an integer percent from ${OVERSELL_MIN} to ${OVERSELL_MAX}`));
  }
  if (c.placementMode !== undefined) push(issues, checkEnum(`${field}.placementMode`, c.placementMode, PLACEMENT_MODES));
  c.workloadMix?.forEach((m, i) => {
    const f = `${field}.workloadMix[${i}]`;
    push(issues, gpuCount(`${f}.gpuCount`, m.gpuCount));
    push(issues, nonNegativeNumber(`${f}.tflops`, m.tflops));
    push(issues, nonNegativeInteger(`${f}.vram`, m.vram));
    push(issues, optional(nonNegativeInteger)(`${f}.cpu`, m.cpu));
    push(issues, optional(nonNegativeInteger)(`${f}.memory`, m.memory));
    push(issues, positiveNumber(`${f}.weight`, m.weight));
  });
  return issues;
}
