/**
 * Admission of the values that once reached placement unbounded (issue 14.1, 14.2, 14.3, 14.8): each
 * is denied by the admission decision with its field message (403), never admitted and never an
 * internal error.
 */
import { admitPod, AdmissionView } from '../../../lib/runtime/webhook/admit';
import { annotationKey as t } from '../../support/annotations';
import { pod, review } from './fixtures';

/** Codec denials come before any cluster read: a view with one default pool is enough. */
const view: AdmissionView = {
  pool: () => undefined,
  poolNames: () => ['a'],
  defaultPool: () => 'a',
  profile: async () => undefined,
  workload: async () => undefined,
};

it.each([
  ['vram-request', '1Ei', 'expected at most 1Pi of VRAM per GPU'],
  ['vram-request', '2E', 'expected at most 1Pi of VRAM per GPU'],
  ['tflops-request', '1E', 'expected at most 100000 TFLOPS per GPU'],
  ['tflops-request', '1e309', 'expected at most 100000 TFLOPS per GPU'],
  ['tflops-limit', '1e309', 'expected at most 100000 TFLOPS per GPU'],
  ['vram-limit', '8Pi', 'expected at most 1Pi of VRAM per GPU'],
  ['vram-limit', '1e400', 'expected at most 1Pi of VRAM per GPU'],
  ['replicas', '999999999999999', 'expected an integer from 0 to 10000'],
  ['vram-request', '500m', 'expected at least 1Mi of VRAM (a number or a quantity without a unit is bytes): did you mean "500Mi"?'],
  ['tflops-request', ' 10', 'expected "10", without surrounding spaces'],
  ['gpu-count', ' 2', 'expected "2", without surrounding spaces'],
])('%s %j is denied with its bound', async (key, value, expected) => {
  const annotations = { [t('is-local-gpu')]: 'true', [t('tflops-request')]: '10', [t('vram-request')]: '1Gi', [t(key)]: value };
  const decision = await admitPod(review(pod({ name: 'p', annotations })).request!, view);
  expect(decision).toMatchObject({ allowed: false, code: 403, message: `${t(key)}: got ${JSON.stringify(value)}, ${expected}` });
});
