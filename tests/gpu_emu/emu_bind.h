// Binding a kernel function to the emulator's table entry: a trampoline that
// unpacks `void **args` into the kernel's typed parameters, from the
// function's own type, so a kernel's signature is written once (in its .cu).
#ifndef LKV_EMU_BIND_H
#define LKV_EMU_BIND_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "gpu_emu_api.h"

// A scalar parameter: the bytes args[i] points at.
template <typename T> struct lkv_emu_param {
    static_assert(std::is_arithmetic<T>::value || std::is_enum<T>::value,
                  "a kernel parameter is a device pointer or a scalar");
    static_assert(sizeof(T) <= 8, "kernel scalars are at most 8 bytes");
    static constexpr bool pointer = false;
    static T get(void *p)
    {
        T v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
};

// A device pointer: the host passes an lkv_gpu_ptr, a 64-bit address.
template <typename T> struct lkv_emu_param<T *> {
    static constexpr bool pointer = true;
    static T *get(void *p)
    {
        std::uint64_t a;
        std::memcpy(&a, p, sizeof a);
        return reinterpret_cast<T *>(static_cast<std::uintptr_t>(a));
    }
};

template <typename F> struct lkv_emu_signature;
template <typename... A> struct lkv_emu_signature<void(A...)> {
    static_assert(sizeof...(A) <= 64, "at most 64 kernel parameters");
    static constexpr int count = (int)sizeof...(A);
    static constexpr std::uint64_t pointers()
    {
        std::uint64_t m = 0;
        int i = 0;
        ((m |= lkv_emu_param<A>::pointer ? std::uint64_t(1) << i : 0, i++), ...);
        (void)i;
        return m;
    }
    template <void (*fn)(A...), std::size_t... I>
    static void call(void *const *args, std::index_sequence<I...>)
    {
        (void)args;
        fn(lkv_emu_param<A>::get(args[I])...);
    }
    template <void (*fn)(A...)> static void trampoline(void *const *args)
    {
        call<fn>(args, std::index_sequence_for<A...>{});
    }
};

#define LKV_EMU_SIG(fn) lkv_emu_signature<std::remove_pointer_t<decltype(&fn)>>

// The table entry of kernel `fn` (an LKV_KERNEL function).
#define LKV_EMU_BIND(fn)                                                                  \
    lkv_emu_kernel { #fn, &LKV_EMU_SIG(fn)::trampoline<&fn>, LKV_EMU_SIG(fn)::count,       \
                     LKV_EMU_SIG(fn)::pointers() }

#endif // LKV_EMU_BIND_H
