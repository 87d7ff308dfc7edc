/**
 * The same props give the same objects in both frameworks: the example platform (which uses every
 * component) synthesized by cdk8s and registered by Pulumi under mocks.
 */
import { buildController as controllerCdk8s, buildPlatform as buildCdk8s } from '../../examples/cdk8s/main';
import { buildController as controllerPulumi, buildPlatform as buildPulumi } from '../../examples/pulumi/index';
import { synthChart, sortObjects } from '../support/cdk8s';
import { capture, objectsOf } from '../support/pulumi-mocks';
import { validateAll } from '../support/validate-k8s';
import { KubeObject } from '../../lib/k8s/object';

describe('example platform parity', () => {
  const cdk8sObjects = sortObjects(
    synthChart((chart) => {
      controllerCdk8s(chart);
      buildCdk8s(chart);
    }),
  );
  let pulumiObjects: Record<string, unknown>[];

  beforeAll(async () => {
    pulumiObjects = sortObjects(objectsOf(await capture(() => buildPulumi(controllerPulumi()))));
  });

  it('registers the same objects in Pulumi as cdk8s synthesizes', () => {
    expect(pulumiObjects.map((o) => `${o.kind}/${(o.metadata as { name: string }).name}`)).toEqual(
      cdk8sObjects.map((o) => `${o.kind}/${o.metadata.name}`),
    );
    expect(pulumiObjects).toEqual(cdk8sObjects);
  });

  it('synthesizes only valid objects (kubernetes-models and our CRD schemas)', () => {
    expect(() => validateAll(cdk8sObjects)).not.toThrow();
    expect(cdk8sObjects.length).toBeGreaterThanOrEqual(10);
  });

  it('never writes spec.taints on a Node and never namespaces a cluster-scoped object', () => {
    const nodes = cdk8sObjects.filter((o) => o.kind === 'Node');
    expect(nodes).toHaveLength(4);
    for (const node of nodes) expect(Object.keys(node)).toEqual(['apiVersion', 'kind', 'metadata']);
    for (const o of cdk8sObjects.filter((x: KubeObject) => ['Node', 'GPUPool', 'Namespace'].includes(x.kind))) {
      expect(o.metadata.namespace).toBeUndefined();
    }
  });
});
