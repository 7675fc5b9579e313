/* Every kernel entry point of the .cu files in kernels/, one line each: the
 * host resolves them by name from the loaded module (cuModuleGetFunction,
 * hipModuleGetFunction) and the emulator binds them by address, all from this
 * list, so a kernel is added in one place. Expanded with
 * LKV_GPU_KERNEL(name) defined by the includer. */

/* attend (kernels/attend.cu) */
/* LKV_GPU_KERNELS_ATTEND_END */

/* observe, score, select, compact (kernels/observe.cu ... compact.cu) */
/* LKV_GPU_KERNELS_EVICT_END */
