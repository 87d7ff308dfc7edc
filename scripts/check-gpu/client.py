"""One CUDA client of `npm run check:gpu`: a PyTorch process doing what a pod's would, started with
the environment a pod's container gets. It prints JSON lines on stdout; the last one is its result.

Modes (argv[1], argv[2]):
  info    -            the SM count and memory the process sees, then exit
  alloc   <max GiB>    allocate 1 GiB tensors until CUDA runs out of memory or <max GiB> are held
  matmul  <seconds>    warm up a bf16 8192x8192 product, print a ready line, wait for a line on stdin,
                       then multiply for <seconds> and report TFLOPS
  hold    <GiB>        hold <GiB> GiB, print a ready line, and exit at a line (or end) on stdin
Any other failure is reported as {"error": ...} with exit status 1.
"""
import json
import os
import sys
import time

GIB = 2**30
N = 8192


def report(**fields):
    print(json.dumps(fields), flush=True)


def main():
    mode, arg = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    import torch

    # The context first: under MPS the client joins its server here, and the SM count it then reads
    # is the share's (32 of 132 at 25 % on an H100).
    torch.zeros(1, device="cuda")
    free, total = torch.cuda.mem_get_info()
    seen = {
        "pid": os.getpid(),
        "sms": torch.cuda.get_device_properties(0).multi_processor_count,
        "memGetInfoGiB": [round(free / GIB, 2), round(total / GIB, 2)],
    }
    if mode == "info":
        report(**seen)
    elif mode == "alloc":
        held = []
        try:
            while len(held) < arg:
                held.append(torch.empty(GIB, dtype=torch.uint8, device="cuda"))
            report(**seen, allocatedGiB=len(held), oom=False)
        except torch.cuda.OutOfMemoryError as err:
            report(**seen, allocatedGiB=len(held), oom=True, message=str(err)[:200])
    elif mode == "matmul":
        a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
        c = torch.empty_like(a)
        for _ in range(3):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        report(**seen, ready=True)
        sys.stdin.readline()
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < arg:
            for _ in range(10):
                torch.matmul(a, b, out=c)
            torch.cuda.synchronize()
            count += 10
        elapsed = time.perf_counter() - start
        report(**seen, tflops=round(2 * N**3 * count / elapsed / 1e12, 1), seconds=round(elapsed, 2))
    elif mode == "hold":
        held = [torch.empty(GIB, dtype=torch.uint8, device="cuda") for _ in range(int(arg))]
        torch.cuda.synchronize()
        report(**seen, ready=True, heldGiB=len(held))
        sys.stdin.readline()
        report(**seen, heldGiB=len(held))
    else:
        raise ValueError(f"unknown mode {mode}")


if __name__ == "__main__":
    try:
        main()
    except Exception as err:  # reported, so that the check records why rather than a stack
        report(error=f"{type(err).__name__}: {err}"[:300])
        sys.exit(1)
