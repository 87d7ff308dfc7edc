/**
 * The TypeScript blocks of the README, CONTRIBUTING.md and docs/ are programs a user can paste: each is type-checked as a module that
 * imports `tensor-fusion-iac`, `/cdk8s` and `/pulumi` through their entry points (so every name it uses
 * must be exported there), then run: cdk8s programs synthesize into a temp dir, Pulumi programs run
 * under mocks. A block that is not a whole program fails here.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { join, resolve } from 'path';
import * as ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { capture } from '../support/pulumi-mocks';

const REPO = resolve(__dirname, '../..');
const ENTRY_POINTS: Record<string, string> = {
  'tensor-fusion-iac': join(REPO, 'lib/index'),
  'tensor-fusion-iac/cdk8s': join(REPO, 'components/cdk8s/index'),
  'tensor-fusion-iac/pulumi': join(REPO, 'components/pulumi/index'),
};

interface Block {
  /** `<file>:<line>`: the document and the line the block starts on. */
  where: string;
  /** A file name made of `where`. */
  id: string;
  code: string;
}

/** The ```ts blocks of one document (a path from the repository root). */
function tsBlocks(file: string): Block[] {
  const blocks: Block[] = [];
  const lines = readFileSync(join(REPO, file), 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '```ts') continue;
    const start = i + 1;
    while (i + 1 < lines.length && lines[i + 1].trim() !== '```') i++;
    const where = `${file}:${start + 1}`;
    blocks.push({ where, id: where.replace(/[^a-zA-Z0-9]+/g, '-'), code: lines.slice(start, i + 1).join('\n') });
    i++;
  }
  return blocks;
}

/** The user documents: the README, CONTRIBUTING.md and every page under docs/. */
function documents(): string[] {
  const docs = (dir: string): string[] =>
    readdirSync(join(REPO, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? docs(`${dir}/${e.name}`) : e.name.endsWith('.md') ? [`${dir}/${e.name}`] : [],
    );
  return ['README.md', 'CONTRIBUTING.md', ...docs('docs')];
}

const blocks = documents().flatMap(tsBlocks);
const isPulumi = (b: Block) => b.code.includes("'tensor-fusion-iac/pulumi'");

describe('README code blocks', () => {
  let dir: string;
  beforeAll(() => {
    // Inside the repo (so the blocks resolve cdk8s and @pulumi/* from its node_modules), under the
    // git-ignored build/ that the type check does not include.
    mkdirSync(join(REPO, 'build'), { recursive: true });
    dir = mkdtempSync(join(REPO, 'build', 'readme-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has TypeScript blocks for both frameworks', () => {
    expect(blocks.filter(isPulumi).length).toBeGreaterThan(0);
    expect(blocks.filter((b) => !isPulumi(b)).length).toBeGreaterThan(0);
  });

  it('type-checks every block as a user module importing the package entry points', () => {
    const files = blocks.map((b) => {
      const file = join(dir, `${b.id}.ts`);
      writeFileSync(file, b.code);
      return file;
    });
    const paths = Object.fromEntries(Object.entries(ENTRY_POINTS).map(([name, path]) => [name, [path]]));
    const program = ts.createProgram(files, {
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      esModuleInterop: true,
      skipLibCheck: true,
      noEmit: true,
      types: ['node'],
      typeRoots: [join(REPO, 'node_modules/@types')],
      baseUrl: REPO,
      paths,
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file
        ? `${d.file.fileName.replace(dir + '/', '')}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
        : '';
      return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(diagnostics).toEqual([]);
  }, 120_000);

  /** The block with the package imports pointed at the sources, runnable through Jest's TypeScript transform. */
  function runnable(block: Block, name: string): string {
    let code = block.code;
    for (const [specifier, path] of Object.entries(ENTRY_POINTS)) code = code.split(`'${specifier}'`).join(JSON.stringify(path));
    const file = join(dir, `${name}.ts`);
    writeFileSync(file, code);
    return file;
  }

  it.each(blocks.filter((b) => !isPulumi(b)).map((b) => [b.where, b] as const))('synthesizes the cdk8s block at %s', (_, block) => {
    const outdir = join(dir, `out-${block.id}`);
    process.env.CDK8S_OUTDIR = outdir;
    try {
      require(runnable(block, `run-${block.id}`));
    } finally {
      delete process.env.CDK8S_OUTDIR;
    }
    const objects = readdirSync(outdir).flatMap((f) => parseAllDocuments(readFileSync(join(outdir, f), 'utf8')).map((d) => d.toJS()));
    expect(objects.length).toBeGreaterThan(0);
  });

  it.each(blocks.filter(isPulumi).map((b) => [b.where, b] as const))('runs the Pulumi block at %s under mocks', async (_, block) => {
    const registered = await capture(() => {
      require(runnable(block, `run-${block.id}`));
    });
    expect(registered.length).toBeGreaterThan(0);
  });
});
