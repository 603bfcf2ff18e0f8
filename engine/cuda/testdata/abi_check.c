// abi_check.c checks the prototypes engine/cuda calls through dlsym against the CUDA headers of the machine it
// is compiled on; it compiles (gcc -fsyntax-only) only if every one matches. engine/cuda declares handles as
// void* and enums as int so that it builds without CUDA; each line below writes that same prototype in the
// header's types, and the size checks at the end prove the substitution ABI-neutral. When a binding in
// driver_cgo.go, cublas_cgo.go or nvrtc_cgo.go changes, change its line here.
//
//	gcc -std=gnu11 -fsyntax-only -I<dir of cuda.h> -I<dir of cublas_v2.h> -I<dir of nvrtc.h> abi_check.c
#include <stddef.h>
#include <cuda.h>
#include <cublas_v2.h>
#include <nvrtc.h>

#define SAME(sym, type) _Static_assert(__builtin_types_compatible_p(__typeof__(&sym), type), #sym " differs from engine/cuda's prototype")

// driver_cgo.go: exact symbol names (the _v2 memory calls, never the legacy 32-bit ones).
SAME(cuInit, CUresult (*)(unsigned int));
SAME(cuDriverGetVersion, CUresult (*)(int *));
SAME(cuGetErrorName, CUresult (*)(CUresult, const char **));
SAME(cuGetErrorString, CUresult (*)(CUresult, const char **));
SAME(cuDeviceGetCount, CUresult (*)(int *));
SAME(cuDeviceGet, CUresult (*)(CUdevice *, int));
SAME(cuDeviceGetName, CUresult (*)(char *, int, CUdevice));
SAME(cuDeviceGetAttribute, CUresult (*)(int *, CUdevice_attribute, CUdevice));
SAME(cuDeviceTotalMem_v2, CUresult (*)(size_t *, CUdevice));
SAME(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext *, CUdevice));
SAME(cuDevicePrimaryCtxRelease_v2, CUresult (*)(CUdevice));
SAME(cuCtxSetCurrent, CUresult (*)(CUcontext));
SAME(cuMemAlloc_v2, CUresult (*)(CUdeviceptr *, size_t));
SAME(cuMemFree_v2, CUresult (*)(CUdeviceptr));
SAME(cuMemcpyHtoD_v2, CUresult (*)(CUdeviceptr, const void *, size_t));
SAME(cuMemcpyDtoH_v2, CUresult (*)(void *, CUdeviceptr, size_t));
SAME(cuMemcpyDtoD_v2, CUresult (*)(CUdeviceptr, CUdeviceptr, size_t));
SAME(cuMemcpyHtoDAsync_v2, CUresult (*)(CUdeviceptr, const void *, size_t, CUstream));
SAME(cuMemAllocHost_v2, CUresult (*)(void **, size_t));
SAME(cuMemFreeHost, CUresult (*)(void *));
SAME(cuMemsetD32Async, CUresult (*)(CUdeviceptr, unsigned int, size_t, CUstream));
SAME(cuModuleLoadData, CUresult (*)(CUmodule *, const void *));
SAME(cuModuleGetFunction, CUresult (*)(CUfunction *, CUmodule, const char *));
SAME(cuModuleUnload, CUresult (*)(CUmodule));
SAME(cuLaunchKernel, CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
	unsigned int, unsigned int, CUstream, void **, void **));

// cuCtxSynchronize: engine/cuda binds the symbol "cuCtxSynchronize" as CUresult (*)(void). Headers that map the
// name to a _v2 with another signature would not declare it, so it is checked only where it is declared as such.
#ifndef cuCtxSynchronize
SAME(cuCtxSynchronize, CUresult (*)(void));
#else
#warning "cuCtxSynchronize is remapped by this cuda.h: its prototype is not checked"
#endif

// cublas_cgo.go.
SAME(cublasCreate_v2, cublasStatus_t (*)(cublasHandle_t *));
SAME(cublasDestroy_v2, cublasStatus_t (*)(cublasHandle_t));
SAME(cublasGetVersion_v2, cublasStatus_t (*)(cublasHandle_t, int *));
SAME(cublasSetMathMode, cublasStatus_t (*)(cublasHandle_t, cublasMath_t));
SAME(cublasGetStatusString, const char *(*)(cublasStatus_t));
SAME(cublasSgemm_v2, cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
	const float *, const float *, int, const float *, int, const float *, float *, int));

// nvrtc_cgo.go.
SAME(nvrtcVersion, nvrtcResult (*)(int *, int *));
SAME(nvrtcGetErrorString, const char *(*)(nvrtcResult));
SAME(nvrtcCreateProgram, nvrtcResult (*)(nvrtcProgram *, const char *, const char *, int, const char *const *,
	const char *const *));
SAME(nvrtcCompileProgram, nvrtcResult (*)(nvrtcProgram, int, const char *const *));
SAME(nvrtcDestroyProgram, nvrtcResult (*)(nvrtcProgram *));
SAME(nvrtcGetProgramLogSize, nvrtcResult (*)(nvrtcProgram, size_t *));
SAME(nvrtcGetProgramLog, nvrtcResult (*)(nvrtcProgram, char *));
SAME(nvrtcGetPTXSize, nvrtcResult (*)(nvrtcProgram, size_t *));
SAME(nvrtcGetPTX, nvrtcResult (*)(nvrtcProgram, char *));
SAME(nvrtcGetCUBINSize, nvrtcResult (*)(nvrtcProgram, size_t *));
SAME(nvrtcGetCUBIN, nvrtcResult (*)(nvrtcProgram, char *));

// The substitutions engine/cuda makes: enums passed as int, handles as void*, device pointers as 8 bytes.
_Static_assert(sizeof(CUresult) == sizeof(int), "CUresult");
_Static_assert(sizeof(CUdevice) == sizeof(int), "CUdevice");
_Static_assert(sizeof(CUdevice_attribute) == sizeof(int), "CUdevice_attribute");
_Static_assert(sizeof(CUdeviceptr) == 8, "CUdeviceptr");
_Static_assert(sizeof(CUcontext) == sizeof(void *), "CUcontext");
_Static_assert(sizeof(CUstream) == sizeof(void *), "CUstream");
_Static_assert(sizeof(cublasStatus_t) == sizeof(int), "cublasStatus_t");
_Static_assert(sizeof(cublasOperation_t) == sizeof(int), "cublasOperation_t");
_Static_assert(sizeof(cublasMath_t) == sizeof(int), "cublasMath_t");
_Static_assert(sizeof(nvrtcResult) == sizeof(int), "nvrtcResult");

// The enum values engine/cuda writes as numbers.
_Static_assert(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK == 1, "attrMaxThreadsPerBlock");
_Static_assert(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == 16, "attrSMCount");
_Static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == 75, "attrCCMajor");
_Static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == 76, "attrCCMinor");
_Static_assert(CUBLAS_PEDANTIC_MATH == 2, "cublasMathPedantic");
_Static_assert(CUBLAS_OP_N == 0 && CUBLAS_OP_T == 1, "cublasOperation_t values");
_Static_assert(CUDA_SUCCESS == 0 && CUBLAS_STATUS_SUCCESS == 0 && NVRTC_SUCCESS == 0, "success codes");
