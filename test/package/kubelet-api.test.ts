/**
 * lib/runtime/agent/kubelet/generated/ is generated from the kubelet's own protos in the Go module
 * k8s.io/kubelet, at the version the test loop's kubelet is built from (`npm run gen:kubelet-api`):
 * it must be current, and its descriptors must load as the services the agent serves and calls.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as dp from '../../lib/runtime/agent/kubelet/generated/deviceplugin-v1beta1';
import * as pr from '../../lib/runtime/agent/kubelet/generated/podresources-v1';
import * as dra from '../../lib/runtime/agent/kubelet/generated/dra-v1';
import * as reg from '../../lib/runtime/agent/kubelet/generated/pluginregistration-v1';
import { kubeletServices } from '../../lib/runtime/agent/kubelet/load';
import { GENERATED_DIR, generatedFiles, kubeletModuleDir } from '../../scripts/gen-kubelet-api';

function goMissing(): string | undefined {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'go is not on PATH';
  }
}

const why = goMissing();
if (why && process.env.CI) throw new Error(`kubelet-api.test.ts: ${why} (CI=true: may not skip)`);
// eslint-disable-next-line no-console
if (why) console.log(`kubelet-api.test.ts: the freshness check skips: ${why}`);

(why ? test.skip : test)('the generated files are what `npm run gen:kubelet-api` writes from k8s.io/kubelet', () => {
  const files = generatedFiles(kubeletModuleDir());
  expect([...files.keys()].sort()).toEqual(['deviceplugin-v1beta1.ts', 'dra-v1.ts', 'pluginregistration-v1.ts', 'podresources-v1.ts']);
  for (const [file, text] of files) expect(readFileSync(join(GENERATED_DIR, file), 'utf8')).toBe(text);
});

test('the descriptors load as the services the agent serves and calls, with the methods the kubelet uses', () => {
  const methods = (s: { service: Record<string, unknown> }) => Object.keys(s.service).sort();
  const plugin = kubeletServices(dp.DESCRIPTOR, dp.PACKAGE);
  expect(methods(plugin.DevicePlugin)).toEqual([
    'Allocate',
    'GetDevicePluginOptions',
    'GetPreferredAllocation',
    'ListAndWatch',
    'PreStartContainer',
  ]);
  expect(methods(plugin.Registration)).toEqual(['Register']);
  expect(methods(kubeletServices(pr.DESCRIPTOR, pr.PACKAGE).PodResourcesLister)).toEqual(['Get', 'GetAllocatableResources', 'List']);
  // A dotted package (k8s.io.kubelet.pkg.apis.dra.v1) loads too.
  expect(methods(kubeletServices(dra.DESCRIPTOR, dra.PACKAGE).DRAPlugin)).toEqual(['NodePrepareResources', 'NodeUnprepareResources']);
  expect(methods(kubeletServices(reg.DESCRIPTOR, reg.PACKAGE).Registration)).toEqual(['GetInfo', 'NotifyRegistrationStatus']);
});
