/** Which pool a GPUNode, which node a GPU belongs to: the managed-by label where a name fits one, else the controlling owner. */
import { MANAGED_BY_LABEL } from '../../../lib/model/metadata-keys';
import { managedBy, managedByLabels } from '../../../lib/runtime/shared/managed-by';

const name63 = `n${'x'.repeat(62)}`;
const name64 = `${name63}x`;

test('the label names a name of up to 63 characters; none for a longer one, which no label value holds', () => {
  expect(managedByLabels(name63)).toEqual({ [MANAGED_BY_LABEL]: name63 });
  expect(managedByLabels(name64)).toEqual({});
});

test('the owner: by the label, else by the controlling owner reference, else none', () => {
  const owner = (name: string, controller?: boolean) => ({
    apiVersion: 'tensor-fusion.ai/v1',
    kind: 'GPUNode',
    name,
    uid: 'u',
    controller,
  });
  expect(managedBy({ metadata: { labels: managedByLabels('gpu-0'), ownerReferences: [owner('gpu-0', true)] } })).toEqual(['gpu-0']);
  expect(managedBy({ metadata: { labels: managedByLabels(name64), ownerReferences: [owner('other'), owner(name64, true)] } })).toEqual([
    name64,
  ]);
  expect(managedBy({ metadata: { ownerReferences: [owner('not-the-controller')] } })).toEqual([]);
  expect(managedBy({ metadata: {} })).toEqual([]);
});
