/* Placeholder so the library has a source until the suite lands. */
int lkv_conformance_placeholder(void);
int lkv_conformance_placeholder(void) { return 0; }
