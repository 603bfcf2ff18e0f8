// A stand-in for the CUDA toolkit's crt/host_defines.h, which the headers of NVIDIA's pip wheels include but do
// not ship: abi_check.c only needs the host-side meaning of these qualifiers, which is none.
#pragma once
#define __host__
#define __device__
#define __global__
#define __shared__
#define __constant__
#define __managed__
#define __forceinline__ inline
#define __noinline__
#define __no_return__
#define __thread__
#define __import__
#define __export__
#define __cdecl
#define __annotate__(a)
#define __location__(a)
#define __specialization_static
#define __builtin_align__(a) __attribute__((aligned(a)))
#define __align__(n) __attribute__((aligned(n)))
#define __device_builtin__
#define __device_builtin_texture_type__
#define __device_builtin_surface_type__
#define __cudart_builtin__
#define CUDARTAPI
#define CUDARTAPI_CDECL
#define __CUDA_DEPRECATED __attribute__((deprecated))
#define __CUDA_ARCH_HAS_FEATURE__(x) 0
