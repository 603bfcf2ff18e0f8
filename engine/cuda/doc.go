// Package cuda drives NVIDIA GPUs from Go without CUDA at build time: it finds and dlopens the CUDA libraries
// (the driver libcuda.so.1, cuBLAS, NVRTC) when a program runs, binds their entry points by exact symbol name,
// and compiles the CUDA C kernels embedded in the binary with NVRTC (../../../shared/reference/gpu_engine.md
// in the project's shared folder gives the design; DEVELOPERS.md says how to run its GPU part).
//
// What is here so far: the library search (SearchDirs, DriverDirs), the loader with errors that list every
// folder tried, NVRTC (LoadNVRTC, NVRTC.Compile), the driver calls of Device (memory, copies and fills, modules,
// launches), cuBLAS's row-major Gemm and the kernel sources (Kernels: seqflow.cu for encoding and decoding,
// train.cu for the training step of engine/gpustep), which make test compiles for sm_90 with Debian's NVRTC
// 11.8; on a GPU (NFBO_GPU=1, scripts/gpu-check.sh) every kernel is tested against a float64 reference, here
// (seqflow.cu's) or in engine/gpustep (train.cu's). A build without cgo has the same API and returns ErrNoCUDA.
//
// Libraries are searched in this order (SearchDirs): the folders of NFBO_CUDA_LIB_DIRS, those of
// LD_LIBRARY_PATH, the nvidia/cu13/lib, nvidia/cublas/lib, nvidia/cuda_nvrtc/lib and nvidia/cuda_runtime/lib
// folders of the Python environments where PyTorch's and CuPy's wheels put them ($VIRTUAL_ENV, $CONDA_PREFIX,
// /opt/*/.venv, /usr/local, /usr), $CUDA_HOME, $CUDA_PATH and /usr/local/cuda, then the system's own search.
// Folders named stubs are skipped: the toolkit's stub libraries only return errors.
package cuda
