/* Placeholder so the library has a source until the suite lands. */
int lkv_bench_placeholder(void);
int lkv_bench_placeholder(void) { return 0; }
