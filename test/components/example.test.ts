/** The cdk8s example writes seed 002's Deployment and seed 004's T9k pods to YAML, as the seeds write them. */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { parseAllDocuments } from 'yaml';
import { synthExample } from '../../examples/cdk8s/main';
import { SEED_002_ANNOTATIONS } from '../support/seed';

interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, any>;
}

describe('cdk8s example (npm run synth)', () => {
  let dir: string;
  let docs: Doc[];
  const find = (kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name)!;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tf-example-'));
    synthExample(dir);
    const files = readdirSync(dir).filter((f) => f.endsWith('.k8s.yaml'));
    expect(files).toContain('platform.k8s.yaml');
    docs = files.flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Doc));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("writes the pytorch-example Deployment with exactly seed 002's annotation strings and the enabled label", () => {
    const template = find('Deployment', 'pytorch-example').spec.template;
    expect(template.metadata.annotations).toStrictEqual(SEED_002_ANNOTATIONS);
    expect(template.metadata.labels['tensor-fusion.ai/enabled']).toBe('true');
  });

  it('quotes the string values in the YAML as strings (not numbers or booleans)', () => {
    const text = readFileSync(join(dir, 'platform.k8s.yaml'), 'utf8');
    expect(text).toMatch(/tensor-fusion\.ai\/replicas: "1"/);
    expect(text).toMatch(/tensor-fusion\.ai\/enabled: "true"/);
  });

  it('has the WorkloadProfile the Deployment references, in the same namespace', () => {
    const deployment = find('Deployment', 'pytorch-example');
    const name = deployment.spec.template.metadata.annotations['tensor-fusion.ai/workload-profile'];
    const profile = find('WorkloadProfile', name);
    expect(profile).toBeDefined();
    expect(profile.metadata.namespace).toBe(deployment.metadata.namespace);
    expect(deployment.metadata.namespace).toBe('ml');
  });

  it.each([
    ['exclusive-gpu', 'exclusive', { limits: { 'tensorstack.dev/nvidia-gpu': 2 } }],
    ['shared-gpu', 'shared', { limits: { 'tensorstack.dev/nvidia-gpu-percent': 30 }, requests: { cpu: '500m', memory: '200Mi' } }],
    ['exclusive-node', 'exclusive', { limits: { 'tensorstack.dev/nvidia-gpu-node': 1 } }],
  ])("writes the T9k pod %s with seed 004's resources, scheduler and group label", (name, container, resources) => {
    const pod = find('Pod', name);
    expect(pod.metadata.labels).toEqual({ 'scheduler.tensorstack.dev/group-name': 'gpu-usage' });
    expect(pod.spec.schedulerName).toBe('t9k-scheduler');
    expect(pod.spec.containers).toHaveLength(1);
    expect(pod.spec.containers[0].name).toBe(container);
    expect(pod.spec.containers[0].resources).toStrictEqual(resources);
  });
});
