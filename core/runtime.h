/* The runtime as the rest of core sees it. */
#ifndef LKV_RUNTIME_H
#define LKV_RUNTIME_H

#include "backend.h"

struct lkv_runtime {
    const lkv_backend_ops *ops;
    lkv_device *dev;
    lkv_runtime_info info;
};

#endif
