/**
 * What the real engine does with bad input: a bad prop fails `preview` once, with the component's
 * name and the field and no stack trace; a GpuNode on a Node that does not exist fails `up`, naming
 * the node, and creates nothing. And the engine runs where nothing can leave the machine.
 */
import { dialOutside, NODE_NET } from '../../support/node/net';
import { describeEngine, runInChild } from '../../support/pulumi-engine';

jest.setTimeout(300_000);

describeEngine('the real engine on bad input', { controllerManager: false }, (cp) => {
  // Outside the namespace (no root) the real-node suites skip, and so does this check.
  (process.env[NODE_NET.reasonEnv] ? test.skip : test)(
    'nothing the engine sends can leave: a dial to an outside address fails at once',
    async () => {
      // The engine and the provider run in this network namespace (scripts/in-netns.ts) too.
      const dial = await dialOutside();
      expect(dial.code).toBe('ENETUNREACH');
      expect(dial.ms).toBeLessThan(1_000);
    },
  );

  test.each([
    ['a plain value', 'bad-plain-prop'],
    ['a value held in an Output', 'bad-output-prop'],
  ])('a bad prop (%s) fails preview once, with the component and the field, and no stack trace', (_, program) => {
    const run = runInChild(program, 'preview', cp().kubeconfig);
    expect(run.ok).toBe(false);
    // The CLI's Diagnostics (its message holds the CLI's output more than once: stdout, stderr, the error).
    const start = run.message!.indexOf('Diagnostics:');
    const diagnostics = run.message!.slice(start, run.message!.indexOf('Resources:', start));
    const expected = 'GpuPool gpu-pool: defaultQos: got "urgent", expected one of low, medium, high, critical';
    // One error: the component's (an Output's) or the program's (a plain value, thrown in the
    // constructor). The Automation API's runner of inline programs also returns what failed the
    // program as the run's result, which the CLI lists once more on the stack: the same text, or
    // "One or more errors occurred: <it>" for errors left unhandled. `pulumi preview` of a program on
    // disk, through the language host, has no such run result.
    const lines = diagnostics.match(/error: .*/g)!.map((l) => l.replace('error: One or more errors occurred: ', 'error: '));
    expect(new Set(lines)).toEqual(new Set([`error: ${expected}`]));
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(run.message).not.toMatch(/\n\s+at |Unhandled exception|ValidationError/);
  });

  test('a GpuNode on a Node that does not exist fails up, naming the node, and creates nothing', async () => {
    const run = runInChild('missing-node', 'up', cp().kubeconfig);
    expect(run.ok).toBe(false);
    expect(run.message).toMatch(/ghost-node/);
    expect((await cp().kubectl(['get', 'node', 'ghost-node'])).stderr).toContain('NotFound');
    expect(run.resources.filter((t) => t.startsWith('kubernetes:'))).toEqual([]);
  });
});
