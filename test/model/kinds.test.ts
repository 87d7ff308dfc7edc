import { KIND_NAMES, KINDS } from '../../lib/api/kinds';
import { KIND_SCOPES } from '../../lib/model/kinds';

describe('KIND_SCOPES', () => {
  it('names every kind of the registry with the scope the registry gives it', () => {
    expect(Object.keys(KIND_SCOPES).sort()).toEqual([...KIND_NAMES].sort());
    for (const kind of KIND_NAMES) expect([kind, KIND_SCOPES[kind]]).toEqual([kind, KINDS[kind].scope]);
  });
});
