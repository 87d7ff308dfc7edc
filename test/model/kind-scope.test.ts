import { KIND_NAMES } from '../../lib/api/kinds';
import { KIND_SCOPES } from '../../lib/model/kind-scope';

describe('KIND_SCOPES', () => {
  it('names every kind of the registry (which takes its scopes from it), and no other', () => {
    expect(Object.keys(KIND_SCOPES).sort()).toEqual([...KIND_NAMES].sort());
  });
});
