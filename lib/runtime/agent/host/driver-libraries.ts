/**
 * The NVIDIA driver's user-space libraries a CUDA process loads (libcuda and what it opens), found on
 * the host so that a share's CDI spec mounts them itself: the NVIDIA container toolkit adds them only
 * when it honours NVIDIA_VISIBLE_DEVICES, which hardened setups (and Bottlerocket by default) turn off.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';

/** Where the container finds them: the folder CUDA images put on their library path (/usr/local/nvidia/lib64). */
export const DRIVER_LIBRARY_DIR = '/usr/local/nvidia/lib64';

/** Folders under the driver root that hold the libraries, by distribution. */
const SEARCH_DIRS = ['usr/lib/x86_64-linux-gnu', 'usr/lib/aarch64-linux-gnu', 'usr/lib64', 'usr/lib', 'usr/local/nvidia/lib64'];

/** The libraries, by the name before `.so`: CUDA's driver API, NVML, the JIT compilers it opens. */
const LIBRARIES = ['libcuda', 'libnvidia-ml', 'libnvidia-ptxjitcompiler', 'libnvidia-nvvm', 'libnvidia-gpucomp', 'libcudadebugger'];

/** A library file on the host and the names the container sees it by (the full version, then the soname). */
export interface DriverLibrary {
  readonly hostPath: string;
  readonly containerPaths: readonly string[];
}

/** `libcuda.so.580.159.04` -> `{ base: 'libcuda', soname: 'libcuda.so.1' }`; undefined for other files. */
export function driverLibraryName(file: string): { base: string; soname: string } | undefined {
  const m = /^(lib[\w-]+)\.so\.(\d+)\.(\d+)(?:\.(\d+))?$/.exec(file);
  if (!m || !LIBRARIES.includes(m[1])) return undefined;
  // Every one of them has soname major 1 (libcuda.so.1, libnvidia-ml.so.1, ...) but libnvidia-nvvm's 4.
  return { base: m[1], soname: `${m[1]}.so.${m[1] === 'libnvidia-nvvm' ? 4 : 1}` };
}

/**
 * The driver's libraries under `mount` (where the agent sees the driver root), with their host paths
 * under `root`: the first folder that holds libcuda wins, so a host with two driver installs mounts one.
 */
export function findDriverLibraries(mount: string, root: string): DriverLibrary[] {
  for (const dir of SEARCH_DIRS) {
    let files: string[];
    try {
      files = readdirSync(join(mount, dir));
    } catch {
      continue;
    }
    const libs = files
      .map((f) => ({ f, name: driverLibraryName(f) }))
      .filter((x): x is { f: string; name: { base: string; soname: string } } => !!x.name && isFile(join(mount, dir, x.f)));
    if (!libs.some((l) => l.name.base === 'libcuda')) continue;
    return libs.map((l) => ({
      hostPath: posix.join(root, dir, l.f),
      containerPaths: [posix.join(DRIVER_LIBRARY_DIR, l.f), posix.join(DRIVER_LIBRARY_DIR, l.name.soname)],
    }));
  }
  return [];
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
