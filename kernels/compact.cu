// compact: (being written)
#include "lkv_gpu.h"
