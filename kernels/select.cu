// select: (being written)
#include "lkv_gpu.h"
