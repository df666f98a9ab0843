/* SPDX-License-Identifier: MIT */
/*
 * Whose code a frame is, judged from its path alone: the report runs on
 * another machine than the traced interpreter, so it cannot ask that
 * interpreter where its standard library and packages live.
 */
#ifndef LW_ORIGIN_H
#define LW_ORIGIN_H

#include <stdbool.h>
#include <stddef.h>

enum lw_code_origin {
	LW_CODE_USER,		/* the program's own code */
	LW_CODE_STDLIB,		/* the Python standard library */
	LW_CODE_PACKAGE,	/* an installed package */
};

/*
 * Where a Python code object's file (as the code object names it) comes
 * from: an installed package when the path has a site-packages or
 * dist-packages directory; else the standard library when it has
 * lib/python3.X, lib/python2.X or lib64/python3.X, or is a frozen module
 * ("<frozen importlib._bootstrap>"); else the user's own code (so are
 * "<string>" and "<stdin>"). file need not be NUL-terminated.
 */
enum lw_code_origin lw_python_file_origin(const void *file, size_t len);

/*
 * Whether a native module (its path) is part of CUDA, of PyTorch's
 * allocator or of leakwatch itself, whose frames never make a good
 * headline for a site: libcudart*, libcuda.* and libcuda-*, libnvidia*,
 * libc10* (libc10.so, libc10_cuda.so), libleakwatch*.
 */
bool lw_module_is_cuda(const char *path);

/*
 * Whether a native module (its path) is one of the framework's libraries,
 * whose frames between the program's and the allocator are machinery
 * (dispatch, kernels' wrappers, the allocator): PyTorch's (libtorch*,
 * libc10*, libshm, libcaffe2*, torch/_C.*) and CUDA's (the runtime, the
 * driver, libnvidia*, cuBLAS, cuDNN, cuFFT, cuFile, cuRAND, cuSOLVER,
 * cuSPARSE, NCCL, NVRTC, nvJitLink, NVTX, CUPTI).
 */
bool lw_module_is_framework(const char *path);

#endif
