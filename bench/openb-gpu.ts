/**
 * The GPU every trace GPU becomes when the openb trace is placed through kube-scheduler: 1000 TFLOPS
 * and 16000 MiB, so that `gpu_milli` g asks for g TFLOPS and 16·g MiB, the same fraction on any model.
 */
export const GPU_TFLOPS = 1000;
export const GPU_VRAM_MIB = 16000;
