import { podRequests } from '../../../lib/runtime/shared/pod-requests';

const pod = (...cpu: string[]) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p' },
  spec: { containers: cpu.map((c, i) => ({ name: `c${i}`, resources: { requests: { cpu: c, memory: '1Mi' } } })) },
});

describe('podRequests', () => {
  test('millicores as written, whatever the double of the cores is (32.2 * 1000 = 32200.000000000004)', () => {
    expect(podRequests(pod('32200m')).cpu).toBe(32200);
    expect(podRequests(pod('32.2', '11908m')).cpu).toBe(32200 + 11908);
    expect(podRequests(pod('32200m')).memory).toBe(2 ** 20);
  });

  test('a fraction of a millicore rounds up, as Kubernetes counts it', () => {
    expect(podRequests(pod('100500u')).cpu).toBe(101);
    expect(podRequests(pod('1n')).cpu).toBe(1);
  });
});
