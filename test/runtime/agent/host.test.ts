/**
 * What the agent reads of the host for a share's CDI spec: each GPU's device minor from the driver's
 * per-GPU folders (the lines of a real H200's, driver 580: test/fixtures/gpu/h200-driver-580), and
 * the driver's libraries under a driver root.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { driverLibraryName, findDriverLibraries } from '../../../lib/runtime/agent/host/driver-libraries';
import { parseGpuInformation, readGpuMinors } from '../../../lib/runtime/agent/host/gpu-minors';
import { parseComputeModes } from '../../../lib/runtime/agent/nvidia-smi';

const H200 = join(__dirname, '../../fixtures/gpu/h200-driver-580/information-0000:00:06.0.txt');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tf-host-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('device minors', () => {
  test("reads a real H200's information lines", () => {
    expect(parseGpuInformation(readFileSync(H200, 'utf8'))).toEqual({ uuid: 'GPU-9fca33e6-4022-ad7e-7cc7-e8e787c3d4f7', minor: 0 });
    expect(parseGpuInformation('Model: NVIDIA H200\n')).toBeUndefined();
  });

  test('maps every GPU folder by UUID, minors that are not the indexes included', () => {
    for (const [bus, uuid, minor] of [
      ['0000:07:00.0', 'GPU-a', 3],
      ['0000:0f:00.0', 'GPU-b', 0],
    ] as const) {
      mkdirSync(join(dir, bus));
      writeFileSync(join(dir, bus, 'information'), `Model: \t\t NVIDIA A100\nGPU UUID: \t ${uuid}\nDevice Minor: \t ${minor}\n`);
    }
    mkdirSync(join(dir, '0000:10:00.0')); // a folder without its file
    expect(readGpuMinors(dir)).toEqual(
      new Map([
        ['GPU-a', 3],
        ['GPU-b', 0],
      ]),
    );
    expect(readGpuMinors(join(dir, 'absent'))).toEqual(new Map());
  });
});

describe('compute modes', () => {
  test("reads each GPU's mode by UUID, as a real H200 answers (driver 580), skipping what is not a GPU line", () => {
    expect(
      parseComputeModes('GPU-9fca33e6-4022-ad7e-7cc7-e8e787c3d4f7, Default\nGPU-b, Exclusive_Process\nNo devices were found\n'),
    ).toEqual(
      new Map([
        ['GPU-9fca33e6-4022-ad7e-7cc7-e8e787c3d4f7', 'Default'],
        ['GPU-b', 'Exclusive_Process'],
      ]),
    );
  });
});

describe('driver libraries', () => {
  test('names the libraries CUDA loads by full version and soname, nothing else', () => {
    expect(driverLibraryName('libcuda.so.580.159.04')).toEqual({ base: 'libcuda', soname: 'libcuda.so.1' });
    expect(driverLibraryName('libnvidia-nvvm.so.580.159.04')).toEqual({ base: 'libnvidia-nvvm', soname: 'libnvidia-nvvm.so.4' });
    expect(driverLibraryName('libcuda.so.1')).toBeUndefined();
    expect(driverLibraryName('libnvidia-glcore.so.580.159.04')).toBeUndefined();
  });

  test('finds them in the first folder that holds libcuda, as host paths under the driver root', () => {
    const lib = join(dir, 'usr/lib/x86_64-linux-gnu');
    mkdirSync(lib, { recursive: true });
    mkdirSync(join(dir, 'usr/lib64'), { recursive: true });
    writeFileSync(join(dir, 'usr/lib64/libnvidia-ml.so.470.1.1'), ''); // no libcuda beside it: not this folder
    for (const f of ['libcuda.so.580.159.04', 'libnvidia-ml.so.580.159.04', 'libGL.so.1.7.0']) writeFileSync(join(lib, f), '');
    symlinkSync('libcuda.so.580.159.04', join(lib, 'libcuda.so.1'));
    expect(findDriverLibraries(dir, '/')).toEqual([
      {
        hostPath: '/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04',
        containerPaths: ['/usr/local/nvidia/lib64/libcuda.so.580.159.04', '/usr/local/nvidia/lib64/libcuda.so.1'],
      },
      {
        hostPath: '/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.159.04',
        containerPaths: ['/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04', '/usr/local/nvidia/lib64/libnvidia-ml.so.1'],
      },
    ]);
    expect(findDriverLibraries(join(dir, 'absent'), '/')).toEqual([]);
  });
});
