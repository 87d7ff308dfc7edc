/**
 * The Dockerfile is not built here (no Docker daemon in CI); this keeps it in step with the bundle
 * path and with the pod's securityContext, which the `image` mode relies on.
 */
import { readFileSync } from 'fs';
import * as path from 'path';
import { CONTROLLER_BUNDLE_FILE, packageRoot } from '../../../lib/contract/bundle-loader';
import { CONTROLLER_DEFAULTS, CONTROLLER_UID, renderController } from '../../../lib/render/controller';
import { podSpec } from './fixtures';

const instructions = readFileSync(path.join(packageRoot(), 'Dockerfile'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.trim().startsWith('#'))
  .map((l) => {
    const [op, ...rest] = l.trim().split(/\s+/);
    return [op.toUpperCase(), rest.join(' ')] as const;
  });
const all = (op: string) => instructions.filter(([o]) => o === op).map(([, arg]) => arg);

describe('Dockerfile', () => {
  it('runs on the official Node.js image the component uses by default, a supported LTS line', () => {
    expect(all('FROM')).toEqual([CONTROLLER_DEFAULTS.nodeImage]);
    // Node.js 20 reached its end of life in April 2026; 22 and 24 are the LTS lines after it.
    const major = Number(/^node:(\d+)/.exec(CONTROLLER_DEFAULTS.nodeImage)![1]);
    expect(major).toBeGreaterThanOrEqual(22);
    expect(major % 2).toBe(0);
  });

  it('bundles for the oldest Node.js the package supports, which the default image is not older than', () => {
    const script = readFileSync(path.join(packageRoot(), 'scripts', 'bundle-controller.js'), 'utf8');
    expect(script).toContain('target: TARGET');
    const engines = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')).engines.node as string;
    const oldest = Number(/>=\s*(\d+)/.exec(engines)![1]);
    expect(oldest).toBeLessThanOrEqual(Number(/^node:(\d+)/.exec(CONTROLLER_DEFAULTS.nodeImage)![1]));
  });

  it('copies the shipped bundle and runs it as the non-root uid the pod declares', () => {
    const [src, dest] = all('COPY')[0]
      .split(' ')
      .filter((a) => !a.startsWith('--'));
    expect(src).toBe(CONTROLLER_BUNDLE_FILE.split(path.sep).join('/'));
    expect(all('ENTRYPOINT')).toEqual([JSON.stringify(['node', dest]).replace(/,/g, ', ')]);
    expect(all('USER')).toEqual([`${CONTROLLER_UID}:${CONTROLLER_UID}`]);
    const spec = podSpec(renderController({ image: 'example/tf:1' }));
    expect(spec.securityContext.runAsUser).toBe(CONTROLLER_UID);
    expect(spec.containers[0].command).toBeUndefined();
  });

  it('exposes the ports the pod declares', () => {
    const spec = podSpec(renderController({ image: 'example/tf:1' }));
    expect(all('EXPOSE')[0].split(' ').map(Number).sort()).toEqual(
      spec.containers[0].ports.map((p: { containerPort: number }) => p.containerPort).sort(),
    );
  });
});
