/**
 * The README stays a short user's document whose detail lives in docs/: at most 350 lines, and every
 * relative link of the user documents points at a file that exists (and a heading there, for `#anchors`).
 */
import { existsSync, readdirSync, readFileSync } from 'fs';
import { dirname, join, resolve } from 'path';

const REPO = resolve(__dirname, '../..');
const README_MAX_LINES = 350;

/** GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as dashes. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#+ (.*)$/gm)].map((m) => anchorOf(m[1])));
}

/** The relative links (`[text](path#anchor)`) of a document, outside code blocks, that reach nothing. */
function brokenLinks(doc: string, markdown = readFileSync(join(REPO, doc), 'utf8')): string[] {
  const text = markdown.replace(/```[\s\S]*?```/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1])
    .filter((link) => !/^[a-z]+:/.test(link))
    .filter((link) => {
      const [path, anchor] = link.split('#');
      const target = path ? resolve(REPO, dirname(doc), path) : join(REPO, doc);
      if (!existsSync(target)) return true;
      return anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor);
    })
    .map((link) => `${doc}: ${link}`);
}

const docs = (dir: string): string[] =>
  readdirSync(join(REPO, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? docs(`${dir}/${e.name}`) : e.name.endsWith('.md') ? [`${dir}/${e.name}`] : [],
  );

test(`the README has at most ${README_MAX_LINES} lines`, () => {
  const lines = readFileSync(join(REPO, 'README.md'), 'utf8').trimEnd().split('\n').length;
  expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
});

test('every relative link of the README, CONTRIBUTING.md and docs/ reaches a file and heading that exist', () => {
  expect(['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', ...docs('docs')].flatMap((d) => brokenLinks(d))).toEqual([]);
});

test('the link check finds a missing file and a missing heading, and passes URLs and headings that exist', () => {
  const text = [
    '[a](docs/t9k.md) [b](docs/nowhere.md) [c](#gpu-isolation-what-the-limits-guarantee) [d](#no-such-heading)',
    '[e](https://example.com/x) [f](docs/runtime/install.md#upgrading-and-uninstalling) [g](docs/t9k.md#nope)',
  ].join('\n');
  expect(brokenLinks('README.md', text)).toEqual([
    'README.md: docs/nowhere.md',
    'README.md: #no-such-heading',
    'README.md: docs/t9k.md#nope',
  ]);
});
