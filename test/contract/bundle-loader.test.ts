import { createHash } from 'crypto';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { gunzipSync } from 'zlib';
import {
  AGENT_BUNDLE_FILE,
  agentBundlePath,
  CONTROLLER_BUNDLE_FILE,
  controllerBundlePath,
  loadControllerBundle,
  packageRoot,
} from '../../lib/contract/bundle-loader';

describe('loadControllerBundle', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-bundle-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('resolves the bundle relative to the package root', () => {
    expect(packageRoot()).toBe(path.resolve(__dirname, '..', '..'));
    expect(controllerBundlePath()).toBe(path.resolve(__dirname, '..', '..', 'build', 'controller', 'controller.js'));
    expect(CONTROLLER_BUNDLE_FILE).toBe(path.join('build', 'controller', 'controller.js'));
    expect(agentBundlePath()).toBe(path.resolve(__dirname, '..', '..', 'build', 'controller', 'agent.js'));
    expect(AGENT_BUNDLE_FILE).toBe(path.join('build', 'controller', 'agent.js'));
  });

  it('loads the agent bundle beside the controller bundle, each with its own digest', () => {
    const controller = path.join(dir, 'c.js');
    const agent = path.join(dir, 'a.js');
    writeFileSync(controller, 'controller');
    writeFileSync(agent, 'agent');
    const bundle = loadControllerBundle(controller, agent);
    expect(gunzipSync(Buffer.from(bundle.agent.gzipBase64, 'base64')).toString()).toBe('agent');
    expect(bundle.agent.sha256).toBe(createHash('sha256').update('agent').digest('hex'));
    expect(bundle.sha256).toBe(createHash('sha256').update('controller').digest('hex'));
  });

  it('gzips the file and hashes its uncompressed content', () => {
    const file = path.join(dir, 'controller.js');
    const source = 'console.log("hello");\n'.repeat(500);
    writeFileSync(file, source);
    const bundle = loadControllerBundle(file);
    expect(gunzipSync(Buffer.from(bundle.gzipBase64, 'base64')).toString()).toBe(source);
    expect(bundle.sha256).toBe(createHash('sha256').update(source).digest('hex'));
    expect(bundle.size).toBe(source.length);
    expect(bundle.gzippedSize).toBe(Buffer.from(bundle.gzipBase64, 'base64').length);
    expect(bundle.gzippedSize).toBeLessThan(bundle.size / 10);
  });

  it('reads the file again when it changes', () => {
    const file = path.join(dir, 'changing.js');
    writeFileSync(file, 'one');
    const first = loadControllerBundle(file);
    writeFileSync(file, 'two');
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    expect(loadControllerBundle(file).sha256).not.toBe(first.sha256);
  });

  it('names the missing file and the way out', () => {
    const file = path.join(dir, 'missing.js');
    expect(() => loadControllerBundle(file)).toThrow(
      `TensorFusionController: the controller bundle ${file} does not exist; build it with \`npm run build\` or set the image prop`,
    );
    const agent = path.join(dir, 'missing-agent.js');
    expect(() => loadControllerBundle(controllerBundlePath(), agent)).toThrow(
      `TensorFusionController: the node agent bundle ${agent} does not exist; build it with \`npm run build\` or set the image prop`,
    );
  });
});
