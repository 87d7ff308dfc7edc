/** Reading a daemon's limits back (lib/runtime/agent/mps/limits.ts): the forms driver 580 prints, and answers that are missing. */
import { defaultsQuery, mismatches, parseMemLimit, serversIn, serversQuery } from '../../../lib/runtime/agent/mps/limits';

const limits = { devices: 2, vramLimitBytes: 2 * 2 ** 30, threadPercentage: 25 };

test('pinned-memory limits in the forms the daemon prints, and undefined for anything else', () => {
  expect([parseMemLimit('2G'), parseMemLimit('2048M'), parseMemLimit('2048MB'), parseMemLimit(' 1.5G ')]).toEqual([
    2 ** 31,
    2 ** 31,
    2 ** 31,
    1.5 * 2 ** 30,
  ]);
  expect(parseMemLimit('Server 12 not found')).toBeUndefined();
});

test('the defaults query ends with the server list, whose pids follow the defaults in the answer', () => {
  expect(defaultsQuery(2)).toEqual([
    'get_default_active_thread_percentage',
    'get_default_device_pinned_mem_limit 0',
    'get_default_device_pinned_mem_limit 1',
    'get_server_list',
  ]);
  expect(serversIn('25.0\n2G\n2048M\n481\n502', 2)).toEqual([481, 502]);
  expect(serversQuery(1, [481])).toEqual(['get_active_thread_percentage 481', 'get_device_pinned_mem_limit 481 0']);
});

test("limits equal in another unit are no mismatch; a server's raised limit is, with the command that sets it back", () => {
  expect(mismatches(limits, '25.0\n2G\n2048M\n481', [481], '100.0\n8G\n2G')).toEqual([
    { server: 481, setting: 'active_thread_percentage', found: '100.0', expected: '25', fix: 'set_active_thread_percentage 481 25' },
    { server: 481, setting: 'device_pinned_mem_limit 0', found: '8G', expected: '2048M', fix: 'set_device_pinned_mem_limit 481 0 2048M' },
  ]);
});

test('a server that ended between the questions is skipped; a daemon that answered part of them is an error', () => {
  expect(mismatches(limits, '25.0\n2G\n2G\n481', [481], 'Server 481 not found\nServer 481 not found\nServer 481 not found')).toEqual([]);
  expect(() => mismatches(limits, '25.0\n2G', [], '')).toThrow('the daemon answered 2 of 3 limit questions');
});
