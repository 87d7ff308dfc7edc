"""One CUDA client of `npm run check:gpu`, with nothing but the driver: Python ctypes on libcuda.so.1
(no PyTorch needed), doing what a pod's process would, started with the environment (and, through
the check's CDI-like launch, the mounts and device nodes) a pod's container gets. It prints JSON
lines on stdout; the last one is its result.

Modes (argv[1], argv[2]):
  info    -            the SM count and memory the process's context sees, then exit
  alloc   <max MiB>    allocate 512 MiB blocks until CUDA runs out of memory or <max MiB> are held
  hold    <MiB>        hold <MiB>, print a ready line, and exit at a line (or end) on stdin
  burn    <seconds>    load an FMA kernel (PTX, JIT-compiled by the driver), print a ready line, wait
                       for a line on stdin, run it for <seconds> and report fp32 TFLOPS; where the
                       driver cannot load it, PyTorch's bf16 matmul if PyTorch is there
Failures are reported as {"error": ...} with exit status 1. $CHECK_GPU_LIBCUDA names another
libcuda (the tests' fake); $CHECK_GPU_AS_UID makes the client drop to that uid (and gid) first, as a
pod's non-root process (the launch needs root for its mounts).
"""
import ctypes
import json
import os
import sys
import time

MIB = 2**20
BLOCK_MIB = 512
CUDA_ERROR_OUT_OF_MEMORY = 2
SM_COUNT_ATTRIBUTE = 16  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
CHAINS = 8  # independent FMA chains per thread (each FMA is 2 flops)

# Eight independent fp32 FMA chains per thread, `iters` times; the sum is stored so none is dropped.
PTX = (
    """.version 7.0
.target sm_70
.address_size 64
.visible .entry burn(.param .u64 out, .param .u32 iters)
{
  .reg .pred %p;
  .reg .b32 %r<4>;
  .reg .f32 %f<12>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, %tid.x;
  cvt.rn.f32.u32 %f0, %r2;
  mov.f32 %f9, 0f3F000000;
  mov.f32 %f10, 0f3F800000;
"""
    + "".join(f"  mov.f32 %f{i}, %f0;\n" for i in range(1, CHAINS + 1))
    + """  mov.u32 %r3, 0;
LOOP:
"""
    + "".join(f"  fma.rn.f32 %f{i}, %f{i}, %f9, %f10;\n" for i in range(1, CHAINS + 1))
    + """  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p, %r3, %r1;
  @%p bra LOOP;
"""
    + "".join(f"  add.f32 %f1, %f1, %f{i};\n" for i in range(2, CHAINS + 1))
    + """  cvta.to.global.u64 %rd2, %rd1;
  st.global.f32 [%rd2], %f1;
  ret;
}
"""
)


class CudaError(Exception):
    def __init__(self, call, code, name):
        super().__init__(f"{call}: {name} ({code})")
        self.code = code


class Driver:
    def __init__(self):
        self.lib = ctypes.CDLL(os.environ.get("CHECK_GPU_LIBCUDA", "libcuda.so.1"))

    def __call__(self, call, *args):
        code = getattr(self.lib, call)(*args)
        if code != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(code, ctypes.byref(name))
            raise CudaError(call, code, (name.value or b"?").decode())

    def context(self):
        """The device's primary context (as the CUDA runtime makes it); under MPS the client joins its server here."""
        self("cuInit", 0)
        dev = ctypes.c_int()
        self("cuDeviceGet", ctypes.byref(dev), 0)
        ctx = ctypes.c_void_p()
        self("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self("cuCtxSetCurrent", ctx)
        sms = ctypes.c_int()
        self("cuDeviceGetAttribute", ctypes.byref(sms), SM_COUNT_ATTRIBUTE, dev)
        return sms.value

    def mem_info(self):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
        return [free.value // MIB, total.value // MIB]

    def alloc(self, mib):
        ptr = ctypes.c_uint64()
        self("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(mib * MIB))
        return ptr


def report(**fields):
    print(json.dumps(fields), flush=True)


def allocate(cuda, max_mib):
    """Blocks of 512 MiB until out of memory or `max_mib` held: (held MiB, out of memory, blocks)."""
    held = []
    while len(held) * BLOCK_MIB < max_mib:
        try:
            held.append(cuda.alloc(BLOCK_MIB))
        except CudaError as err:
            if err.code == CUDA_ERROR_OUT_OF_MEMORY:
                return len(held) * BLOCK_MIB, True, held
            raise
    return len(held) * BLOCK_MIB, False, held


def ptx_burner(cuda, sms):
    """A function that runs the FMA kernel over every SM the context sees once, returning its flops."""
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    cuda("cuModuleLoadData", ctypes.byref(mod), ctypes.c_char_p(PTX.encode()))
    cuda("cuModuleGetFunction", ctypes.byref(fn), mod, b"burn")
    out = cuda.alloc(1)
    iters = ctypes.c_uint32(100000)  # about 7 ms a launch on a whole H200: launches and syncs cost little
    params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(out), ctypes.c_void_p), ctypes.cast(ctypes.byref(iters), ctypes.c_void_p))
    grid, block = sms * 8, 256

    def run():
        cuda("cuLaunchKernel", fn, grid, 1, 1, block, 1, 1, 0, None, params, None)
        cuda("cuCtxSynchronize")
        return 2 * CHAINS * iters.value * grid * block

    # `params` holds the addresses of `out` and `iters`, not references: both must outlive the
    # launches (a collected `out` made the kernel store through a stale pointer on the H200).
    run.keep = (mod, out, iters, params)
    return run


def torch_burner():
    import torch

    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)

    def run():
        for _ in range(10):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        return 10 * 2 * n**3

    return run


def main():
    mode, arg = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    uid = os.environ.pop("CHECK_GPU_AS_UID", "")
    if uid:
        os.setgroups([])
        os.setgid(int(uid))
        os.setuid(int(uid))
    cuda = Driver()
    start = time.perf_counter()
    sms = cuda.context()
    seen = {"pid": os.getpid(), "uid": os.getuid(), "ctxS": round(time.perf_counter() - start, 3), "sms": sms, "memInfoMiB": cuda.mem_info()}
    if mode == "info":
        report(**seen)
    elif mode == "alloc":
        mib, oom, _ = allocate(cuda, arg)
        report(**seen, allocatedMiB=mib, oom=oom)
    elif mode == "hold":
        mib, oom, held = allocate(cuda, arg)
        report(**seen, ready=True, heldMiB=mib, oom=oom)
        sys.stdin.readline()
        report(**seen, heldMiB=mib, oom=oom)
        del held
    elif mode == "burn":
        try:
            run, engine = ptx_burner(cuda, sms), "ptx-fma-fp32"
            run()
        except Exception as err:  # no JIT here: PyTorch's matmul where it is installed
            try:
                run, engine = torch_burner(), "torch-matmul-bf16"
                run()
            except ImportError:
                raise RuntimeError(f"the FMA kernel did not run ({err}) and PyTorch is not installed") from err
        report(**seen, ready=True, engine=engine)
        sys.stdin.readline()
        flops, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < arg:
            flops += run()
        elapsed = time.perf_counter() - t0
        report(**seen, engine=engine, tflops=round(flops / elapsed / 1e12, 1), seconds=round(elapsed, 2))
    else:
        raise ValueError(f"unknown mode {mode}")


if __name__ == "__main__":
    try:
        main()
    except Exception as err:  # reported, so that the check records why rather than a stack
        report(error=f"{type(err).__name__}: {err}"[:300])
        sys.exit(1)
