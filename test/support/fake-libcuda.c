/*
 * A fake libcuda.so.1 for the GPU check's ctypes client (scripts/check-gpu/client.py) where there is
 * no GPU: the driver calls the client makes, answering from the environment:
 *   FAKE_CUDA_SMS        SMs the context sees (default 132)
 *   FAKE_CUDA_TOTAL_MIB  device memory (default 143771); FAKE_CUDA_LIMIT_MIB: allocations past it
 *                        fail with CUDA_ERROR_OUT_OF_MEMORY (default: the total)
 *   FAKE_CUDA_NO_JIT=1   cuModuleLoadData fails with CUDA_ERROR_INVALID_PTX (a driver without the JIT)
 *   FAKE_CUDA_INIT_ERROR cuInit fails with this code (e.g. 100, CUDA_ERROR_NO_DEVICE)
 * and, as a real client does, from the MPS daemon at $CUDA_MPS_PIPE_DIRECTORY (the fake one,
 * test/support/fake-mps-control.c): the context joins its server there and takes the server's
 * thread percentage (SMs in whole TPCs) and device-0 memory limit, less what a context takes. Where
 * no daemon answers, the client runs off MPS without limits (CUDA fails open).
 * Built by the tests with the system's cc: cc -shared -fPIC -o libcuda.so.1 fake-libcuda.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static size_t held;
static long env(const char *name, long fallback) {
  const char *v = getenv(name);
  return v && *v ? atol(v) : fallback;
}
static const size_t MIB = 1 << 20;
/** What the MPS server gave the context: -1 while off MPS. */
static long mps_pct = -1, mps_limit_mib = -1;
/** MiB a context takes under MPS (the H100 run: 3 of 4 GiB allocatable). */
static const long CONTEXT_MIB = 300;

static long limit_mib(void) {
  long total = env("FAKE_CUDA_TOTAL_MIB", 143771), lim = env("FAKE_CUDA_LIMIT_MIB", total);
  if (mps_limit_mib > 0 && mps_limit_mib - CONTEXT_MIB < lim) lim = mps_limit_mib - CONTEXT_MIB;
  return lim;
}

/** Joins the daemon's server as a client (its socket stays open for the process's life); off MPS where none answers. */
static void join_mps(void) {
  const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s/control", dir ? dir : "/tmp/nvidia-mps");
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) return;
  char line[256];
  int n = snprintf(line, sizeof line, "uid %d\nclient %d %d\n", (int)getuid(), (int)getpid(), (int)getuid());
  if (write(fd, line, (size_t)n) != n) return;
  ssize_t got = 0, r;
  while (got < (ssize_t)sizeof line - 1 && (r = read(fd, line + got, 1)) == 1 && line[got] != '\n') got++;
  line[got] = 0;
  long server, mem;
  char unit = 'M';
  if (sscanf(line, "ready %ld %ld 0=%ld%c", &server, &mps_pct, &mem, &unit) >= 3) mps_limit_mib = unit == 'G' ? mem * 1024 : mem;
  else if (sscanf(line, "ready %ld %ld", &server, &mps_pct) < 2) mps_pct = -1;
}

int cuGetErrorName(int code, const char **name) {
  *name = code == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : code == 100 ? "CUDA_ERROR_NO_DEVICE" : code == 218 ? "CUDA_ERROR_INVALID_PTX" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuInit(unsigned flags) { (void)flags; return (int)env("FAKE_CUDA_INIT_ERROR", 0); }
int cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  (void)dev;
  join_mps();
  *ctx = (void *)&held;
  return 0;
}
int cuCtxSetCurrent(void *ctx) { (void)ctx; return 0; }
int cuDeviceGetAttribute(int *value, int attribute, int dev) {
  (void)dev;
  long sms = env("FAKE_CUDA_SMS", 132);
  // MPS gives whole TPCs (2 SMs): 32 of 132 at 25 %.
  if (mps_pct >= 0 && mps_pct < 100) sms = sms * mps_pct / 100 / 2 * 2;
  *value = attribute == 16 ? (int)sms : 0;
  return 0;
}
int cuMemGetInfo_v2(size_t *free, size_t *total) {
  size_t limit = (size_t)limit_mib() * MIB;
  *total = (size_t)env("FAKE_CUDA_TOTAL_MIB", 143771) * MIB;
  *free = limit - held;
  return 0;
}
int cuMemAlloc_v2(uint64_t *ptr, size_t bytes) {
  size_t limit = (size_t)limit_mib() * MIB;
  if (held + bytes > limit) return 2;
  held += bytes;
  *ptr = 0x100000 + held;
  return 0;
}
int cuModuleLoadData(void **module, const void *image) {
  (void)image;
  *module = (void *)&held;
  return env("FAKE_CUDA_NO_JIT", 0) ? 218 : 0;
}
int cuModuleGetFunction(void **fn, void *module, const char *name) { (void)module; (void)name; *fn = (void *)&held; return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)stream; (void)params; (void)extra;
  usleep(10000);
  return 0;
}
int cuCtxSynchronize(void) { return 0; }
