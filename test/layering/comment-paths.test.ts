/**
 * Comments and notes that name a file of the repository name one that exists: a moved file fails
 * here with the comment's place, instead of leaving a pointer to nowhere.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, resolve } from 'node:path';

const REPO = resolve(__dirname, '../..');
const FROM_ROOT = /(?<![\w/.])((?:lib|test|components|scripts|bench|docs|examples)\/[\w./-]+\.(?:ts|md|js|json|cjs))/g;
const RELATIVE = /(?<![\w/.])(\.\.?\/[\w./-]+\.(?:ts|md|js))/g;
/** Not files of the repository: the shared data beside a checkout, and build output. */
const ELSEWHERE = /^(\.\.\/shared\/|(\.\/)?build\/)/;

/** `file:line: path` for each path a comment of `file` names that exists neither from the root nor beside the file. */
export function missingPaths(file: string, text: string, exists: (path: string) => boolean): string[] {
  const missing: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (file.endsWith('.ts') && !/^\s*(\/\/|\*|\/\*)/.test(line)) return;
    for (const [re, fromRoot] of [
      [FROM_ROOT, true],
      [RELATIVE, false],
    ] as const) {
      for (const m of line.matchAll(re)) {
        const path = m[1].replace(/\.$/, '');
        if (ELSEWHERE.test(path)) continue;
        const beside = normalize(join(dirname(file), path));
        if (!(fromRoot && exists(path)) && !exists(beside)) missing.push(`${file}:${i + 1}: ${path}`);
      }
    }
  });
  return missing;
}

test('every file a comment or a note of the repository names exists', () => {
  const files = execFileSync('git', ['ls-files', 'lib', 'components', 'test', 'scripts', 'bench', 'examples', 'docs', 'CONTRIBUTING.md'], {
    cwd: REPO,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => /\.(ts|md)$/.test(f) && existsSync(join(REPO, f)));
  const exists = (p: string) => existsSync(join(REPO, p));
  expect(files.length).toBeGreaterThan(100);
  expect(files.flatMap((f) => missingPaths(f, readFileSync(join(REPO, f), 'utf8'), exists))).toEqual([]);
});

test('a comment naming a moved file is found, from the root and beside the file; code lines are not comments', () => {
  const exists = (p: string) => ['lib/a.ts', 'lib/sub/b.ts'].includes(p);
  const text = ['/** See lib/a.ts and lib/gone.ts. */', ' * beside: ./b.ts and ../a.ts, not ./c.ts', "const s = 'lib/also-gone.ts';"].join(
    '\n',
  );
  expect(missingPaths('lib/sub/x.ts', text, exists)).toEqual(['lib/sub/x.ts:1: lib/gone.ts', 'lib/sub/x.ts:2: ./c.ts']);
});
