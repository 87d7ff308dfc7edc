/**
 * lib/api/props.ts, the documented interfaces of the spec fields props expose, is generated from the
 * TypeBox schemas (`npm run gen:api-props`): it must be current and describe the same types.
 */
import { readFileSync } from 'fs';
import type { NodeSelector, WorkloadProfileSpec } from '../../lib/api';
import type { NodeSelectorProps, WorkloadProfileSpecProps } from '../../lib/api/props';
import { API_PROPS_FILE, apiPropsSource } from '../../scripts/gen-api-props';

/** True when A and B are assignable to each other (checked by the type check of the tests). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameTypes: [Same<WorkloadProfileSpecProps, WorkloadProfileSpec>, Same<NodeSelectorProps, NodeSelector>] = [true, true];

describe('lib/api/props.ts', () => {
  it('is what the generator writes from the current schemas', () => {
    expect(readFileSync(API_PROPS_FILE, 'utf8')).toBe(apiPropsSource());
  });

  it('has the types of the schemas (see the type check) and documents every member with @default or as required', () => {
    expect(sameTypes).toEqual([true, true]);
    const source = apiPropsSource();
    expect(source).toContain("   * Format: a ratio from 0 to 1 such as 0.8 or 80%.\n       * @default unset\n       * @example '0.8'\n       */\n      targetTFlopsOfLimits?: string;");
    expect(source).toContain('   * @default medium\n   */\n  qos?:');
  });
});
