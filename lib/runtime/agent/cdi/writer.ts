/**
 * The one writer of the agent's CDI specs: a file per device in the runtime's spec folder, written
 * whole or not at all (a temporary file renamed over it), so the runtime never reads half a spec.
 * Each spec carries the pod it was written for, so the specs of a finished pod can be removed.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CDI_KIND, CdiSpec, cdiSpec, ContainerEdits } from './spec';

/** The annotation naming the pod (uid) a spec was written for. */
export const CDI_POD_ANNOTATION = 'tensor-fusion.ai/pod-uid';
const PREFIX = `${CDI_KIND.replace('/', '-')}_`;

export class CdiWriter {
  constructor(private readonly dir: string) {}

  private file(name: string): string {
    return join(this.dir, `${PREFIX}${name}.json`);
  }

  /** Writes the spec of device `name` for the pod `podUid`. */
  write(name: string, edits: ContainerEdits, podUid: string, annotations: Record<string, string> = {}): CdiSpec {
    const spec = cdiSpec(name, edits, { ...annotations, [CDI_POD_ANNOTATION]: podUid });
    mkdirSync(this.dir, { recursive: true });
    // Not `.json` while incomplete: the runtime reads only .json and .yaml files.
    const tmp = `${this.file(name)}.tmp`;
    writeFileSync(tmp, JSON.stringify(spec, null, 2));
    renameSync(tmp, this.file(name));
    return spec;
  }

  /** The spec of device `name`, if written. */
  read(name: string): CdiSpec | undefined {
    try {
      return JSON.parse(readFileSync(this.file(name), 'utf8')) as CdiSpec;
    } catch {
      return undefined;
    }
  }

  /** The pod (uid) the spec of device `name` was written for, if written. */
  podOf(name: string): string | undefined {
    return this.read(name)?.annotations?.[CDI_POD_ANNOTATION];
  }

  /** Removes the spec of device `name` (nothing when there is none). */
  remove(name: string): void {
    rmSync(this.file(name), { force: true });
  }

  /** Every spec of ours: device name and the pod it was written for. */
  list(): { name: string; podUid: string | undefined }[] {
    let files: string[];
    try {
      files = readdirSync(this.dir);
    } catch {
      return [];
    }
    return files
      .filter((f) => f.startsWith(PREFIX) && f.endsWith('.json'))
      .map((f) => {
        const name = f.slice(PREFIX.length, -'.json'.length);
        return { name, podUid: this.podOf(name) };
      });
  }

  /** Removes the specs written for pods `live` does not know. @returns the names removed */
  prune(live: (podUid: string) => boolean): string[] {
    const gone = this.list().filter((s) => !s.podUid || !live(s.podUid));
    for (const s of gone) this.remove(s.name);
    return gone.map((s) => s.name);
  }
}
