/*
 * A fake libcuda.so.1 for the GPU check's ctypes client (scripts/check-gpu/client.py) where there is
 * no GPU: the driver calls the client makes, answering from the environment:
 *   FAKE_CUDA_SMS        SMs the context sees (default 132)
 *   FAKE_CUDA_TOTAL_MIB  device memory (default 143771); FAKE_CUDA_LIMIT_MIB: allocations past it
 *                        fail with CUDA_ERROR_OUT_OF_MEMORY (default: the total)
 *   FAKE_CUDA_NO_JIT=1   cuModuleLoadData fails with CUDA_ERROR_INVALID_PTX (a driver without the JIT)
 *   FAKE_CUDA_INIT_ERROR cuInit fails with this code (e.g. 100, CUDA_ERROR_NO_DEVICE)
 * Built by the tests with the system's cc: cc -shared -fPIC -o libcuda.so.1 fake-libcuda.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static size_t held;
static long env(const char *name, long fallback) {
  const char *v = getenv(name);
  return v && *v ? atol(v) : fallback;
}
static const size_t MIB = 1 << 20;

int cuGetErrorName(int code, const char **name) {
  *name = code == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : code == 100 ? "CUDA_ERROR_NO_DEVICE" : code == 218 ? "CUDA_ERROR_INVALID_PTX" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuInit(unsigned flags) { (void)flags; return (int)env("FAKE_CUDA_INIT_ERROR", 0); }
int cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; *ctx = (void *)&held; return 0; }
int cuCtxSetCurrent(void *ctx) { (void)ctx; return 0; }
int cuDeviceGetAttribute(int *value, int attribute, int dev) {
  (void)dev;
  *value = attribute == 16 ? (int)env("FAKE_CUDA_SMS", 132) : 0;
  return 0;
}
int cuMemGetInfo_v2(size_t *free, size_t *total) {
  size_t limit = (size_t)env("FAKE_CUDA_LIMIT_MIB", env("FAKE_CUDA_TOTAL_MIB", 143771)) * MIB;
  *total = (size_t)env("FAKE_CUDA_TOTAL_MIB", 143771) * MIB;
  *free = limit - held;
  return 0;
}
int cuMemAlloc_v2(uint64_t *ptr, size_t bytes) {
  size_t limit = (size_t)env("FAKE_CUDA_LIMIT_MIB", env("FAKE_CUDA_TOTAL_MIB", 143771)) * MIB;
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
