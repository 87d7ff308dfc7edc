/**
 * Checks one annotation value or one typed option against its kind. Both paths share the rule and the
 * `expected` words; only the spelling of the input differs (`'true'` vs `true`, `'4'` vs `4`).
 */
import { Checked, checked, FieldIssue, fieldIssue, refused } from '../model/errors';
import { checkTflops, checkVram } from '../model/share-quantity';
import { checkGpuCount, checkQos, checkReplicas } from '../model/rules';
import type { AnnotationValueKind } from './reference';
import { checkContainerName, checkObjectName, checkPoolName } from '../model/name-checks';
import { checkUpstreamValue, isUpstreamKind } from './upstream';
import type { ValueContext, ValueSource } from './value-kinds';

export type { ValueContext, ValueSource } from './value-kinds';

/** How a boolean is spelled for each source, for messages. */
export function booleanLiteral(value: boolean, source: ValueSource): string {
  return source === 'annotation' ? `"${value}"` : `${value}`;
}

const fromIssue = (value: unknown, issue: FieldIssue | undefined): Checked => (issue ? refused(issue) : checked(value));

/** Annotation integers are decimal digits; anything else becomes NaN so the shared rule rejects it. */
function annotationInteger(input: unknown): number {
  return typeof input === 'string' && /^[+-]?\d{1,15}$/.test(input) ? Number(input) : Number.NaN;
}

function checkInteger(
  field: string,
  input: unknown,
  ctx: ValueContext,
  rule: (field: string, value: unknown) => FieldIssue | undefined,
): Checked {
  const value = ctx.source === 'annotation' ? annotationInteger(input) : input;
  const issue = rule(field, value);
  // Show what the user wrote ("-1"), not the number we parsed it to.
  return issue ? refused(fieldIssue(field, input, issue.expected)) : checked(value);
}

function checkBoolean(field: string, input: unknown, ctx: ValueContext): Checked {
  if (ctx.source === 'option') {
    return typeof input === 'boolean' ? checked(input) : refused(fieldIssue(field, input, 'true or false'));
  }
  if (input === 'true' || input === 'false') return checked(input === 'true');
  return refused(fieldIssue(field, input, `"true" or "false"`));
}

function checkGpuModel(field: string, input: unknown): Checked {
  return typeof input === 'string' && input.trim() !== '' && input.trim() === input
    ? checked(input)
    : refused(fieldIssue(field, input, 'a GPU model name such as A100 or H100, without surrounding spaces'));
}

function checkContainers(field: string, input: unknown, ctx: ValueContext): Checked {
  let names: unknown[];
  if (ctx.source === 'annotation') {
    if (typeof input !== 'string') return refused(fieldIssue(field, input, 'a comma-separated list of container names'));
    names = input.split(',').map((n) => n.trim());
  } else {
    if (!Array.isArray(input)) return refused(fieldIssue(field, input, 'a list of container names'));
    names = input;
  }
  if (names.length === 0 || (names.length === 1 && names[0] === '')) {
    return refused(fieldIssue(field, input, 'at least one container name'));
  }
  const known = ctx.containers && ctx.containers.length > 0 ? ctx.containers : undefined;
  const issues: FieldIssue[] = [];
  for (const name of names) {
    const issue = checkContainerName(field, name);
    if (issue) issues.push(issue);
    else if (known && !known.includes(name as string)) {
      issues.push(fieldIssue(field, name, `a container of the pod template: one of ${known.join(', ')}`));
    }
  }
  // A name given twice would count as two containers and split the share's MPS limits between them.
  const repeated = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))];
  for (const name of repeated) {
    issues.push(
      fieldIssue(
        field,
        input,
        `each container named once (${JSON.stringify(name)} is named ${names.filter((n) => n === name).length} times)`,
      ),
    );
  }
  return issues.length > 0 ? { issues } : checked(names as string[]);
}

/**
 * Checks `input` as a value of `kind`; the returned value is parsed (numbers, bytes, booleans, lists).
 * One rule for every kind: a value is read as written, so surrounding spaces are refused (as
 * Kubernetes refuses them in quantities); only the commas of a list may have spaces around them.
 */
export function checkValue(kind: AnnotationValueKind, field: string, input: unknown, ctx: ValueContext): Checked {
  if (typeof input === 'string' && input.trim() !== input && input.trim() !== '') {
    return refused(fieldIssue(field, input, `${JSON.stringify(input.trim())}, without surrounding spaces`));
  }
  if (isUpstreamKind(kind)) return checkUpstreamValue(kind, field, input, ctx);
  switch (kind) {
    case 'poolName':
      return fromIssue(input, checkPoolName(field, input));
    case 'objectName':
      return fromIssue(input, checkObjectName(field, input));
    case 'containerNames':
      return checkContainers(field, input, ctx);
    case 'replicas':
      return checkInteger(field, input, ctx, checkReplicas);
    case 'gpuCount':
      return checkInteger(field, input, ctx, checkGpuCount);
    case 'tflops': {
      return checkTflops(field, input);
    }
    case 'vram': {
      return checkVram(field, input);
    }
    case 'qos':
      return fromIssue(input, checkQos(field, input));
    case 'boolean':
      return checkBoolean(field, input, ctx);
    case 'gpuModel':
      return checkGpuModel(field, input);
  }
}
