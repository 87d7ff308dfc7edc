/**
 * Writes crds/<group>_<plural>.yaml for every kind from lib/api (`npm run gen:crds`).
 * Usage: gen-crds [outDir]   (default: crds/ next to package.json)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { renderCrd, crdFileName, crdYaml, KIND_NAMES } from '../lib/api';

const outDir = resolve(process.argv[2] ?? join(__dirname, '..', 'crds'));
mkdirSync(outDir, { recursive: true });
for (const kind of KIND_NAMES) {
  const file = join(outDir, crdFileName(kind));
  writeFileSync(file, crdYaml(renderCrd(kind)));
  console.log(`wrote ${file}`);
}
