/**
 * The Dockerfile is not built here (no Docker daemon in CI); this keeps it in step with the bundle
 * path and with the pod's securityContext, which the `image` mode relies on.
 */
import { readFileSync } from 'fs';
import * as path from 'path';
import { CONTROLLER_BUNDLE_FILE, packageRoot } from '../../lib/controller-bundle';
import { CONTROLLER_UID, renderController } from '../../lib/render/controller';
import { podSpec } from './fixtures';

const instructions = readFileSync(path.join(packageRoot(), 'Dockerfile'), 'utf8')
  .split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'))
  .map((l) => { const [op, ...rest] = l.trim().split(/\s+/); return [op.toUpperCase(), rest.join(' ')] as const; });
const all = (op: string) => instructions.filter(([o]) => o === op).map(([, arg]) => arg);

describe('Dockerfile', () => {
  it('runs on the official Node.js 20 image', () => {
    expect(all('FROM')).toHaveLength(1);
    expect(all('FROM')[0]).toMatch(/^node:20(\.[0-9.]+)?(-alpine|-slim|-bookworm-slim)?$/);
  });

  it('copies the shipped bundle and runs it as the non-root uid the pod declares', () => {
    const [src, dest] = all('COPY')[0].split(' ').filter((a) => !a.startsWith('--'));
    expect(src).toBe(CONTROLLER_BUNDLE_FILE.split(path.sep).join('/'));
    expect(all('ENTRYPOINT')).toEqual([JSON.stringify(['node', dest]).replace(/,/g, ', ')]);
    expect(all('USER')).toEqual([`${CONTROLLER_UID}:${CONTROLLER_UID}`]);
    const spec = podSpec(renderController({ image: 'example/tf:1' }));
    expect(spec.securityContext.runAsUser).toBe(CONTROLLER_UID);
    expect(spec.containers[0].command).toBeUndefined();
  });

  it('exposes the ports the pod declares', () => {
    const spec = podSpec(renderController({ image: 'example/tf:1' }));
    expect(all('EXPOSE')[0].split(' ').map(Number).sort()).toEqual(spec.containers[0].ports.map((p: { containerPort: number }) => p.containerPort).sort());
  });
});
