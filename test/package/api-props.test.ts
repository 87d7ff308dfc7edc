/**
 * lib/api/generated/api-props.ts, the documented interfaces of the spec fields props expose, is generated from the
 * TypeBox schemas (`npm run gen:api-props`): it must be current and describe the same types.
 */
import { readFileSync } from 'fs';
import type { Static } from '@sinclair/typebox';
import type {
  Conditions,
  GpuResources,
  GPUNodeSpec,
  GPUNodeStatus,
  GPUPoolSpec,
  GPUPoolStatus,
  GPUResourceQuotaSpec,
  GPUResourceQuotaStatus,
  GPUStatus,
  NodeSelector,
  TensorFusionWorkloadStatus,
  WorkloadProfileSpec,
} from '../../lib/api';
import type * as props from '../../lib/api/generated/api-props';
import { API_PROPS_FILE, apiPropsSource } from '../../scripts/gen-api-props';

/** True when A and B are assignable to each other (checked by the type check of the tests). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Each generated type against the static type of its schema (the exported types are the generated ones). */
const sameTypes: [
  Same<props.WorkloadProfileSpecProps, Static<typeof WorkloadProfileSpec>>,
  Same<props.NodeSelectorProps, NodeSelector>,
  Same<props.GpuResourcesFields, Static<typeof GpuResources>>,
  Same<props.GPUPoolSpecFields, Static<typeof GPUPoolSpec>>,
  Same<props.GPUPoolStatusFields, Static<typeof GPUPoolStatus>>,
  Same<props.GPUNodeSpecFields, Static<typeof GPUNodeSpec>>,
  Same<props.GPUNodeStatusFields, Static<typeof GPUNodeStatus>>,
  Same<props.GPUStatusFields, Static<typeof GPUStatus>>,
  Same<props.GPUResourceQuotaSpecFields, Static<typeof GPUResourceQuotaSpec>>,
  Same<props.GPUResourceQuotaStatusFields, Static<typeof GPUResourceQuotaStatus>>,
  Same<props.TensorFusionWorkloadStatusFields, Static<typeof TensorFusionWorkloadStatus>>,
  Same<props.ConditionFields, Static<typeof Conditions>[number]>,
] = [true, true, true, true, true, true, true, true, true, true, true, true];

describe('lib/api/generated/api-props.ts', () => {
  it('is what the generator writes from the current schemas', () => {
    expect(readFileSync(API_PROPS_FILE, 'utf8')).toBe(apiPropsSource());
  });

  it('has the types of the schemas (see the type check) and documents every member with @default or as required', () => {
    expect(sameTypes.every((same) => same)).toBe(true);
    const source = apiPropsSource();
    expect(source).toContain(
      "   * Format: a ratio from 0 to 1 such as 0.8 or 80%.\n       * @default unset\n       * @example '0.8'\n       */\n      targetTFlopsOfLimits?: string;",
    );
    expect(source).toContain('   * @default medium\n   */\n  qos?:');
  });
});
