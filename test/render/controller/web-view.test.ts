/** The `webView` prop: off by default, passed to the controller process as WEB_VIEW, a boolean only. */
import { KubeObject } from '../../../lib/k8s/object';
import { renderController } from '../../../lib/render/controller';
import { FAKE_BUNDLE } from './fixtures';

type Json = any;
const controllerEnv = (objects: KubeObject[]) =>
  (objects.find((o) => o.kind === 'Deployment') as Json).spec.template.spec.containers.find((c: Json) => c.name === 'controller').env;

describe('webView', () => {
  it('is off unless asked for, and reaches the process as WEB_VIEW', () => {
    expect(controllerEnv(renderController({}, FAKE_BUNDLE))).toContainEqual({ name: 'WEB_VIEW', value: 'false' });
    expect(controllerEnv(renderController({ webView: true }, FAKE_BUNDLE))).toContainEqual({ name: 'WEB_VIEW', value: 'true' });
  });

  it('refuses what is not a boolean', () => {
    expect(() => renderController({ webView: 'yes' } as never, FAKE_BUNDLE)).toThrow(
      'TensorFusionController: webView: got "yes", expected true or false',
    );
  });
});
