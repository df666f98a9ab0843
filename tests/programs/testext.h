/* SPDX-License-Identifier: MIT */
/*
 * libtestext.so: a native "extension" that links the CUDA runtime, the way a
 * Python extension module does. Loaded with RTLD_LOCAL, its libcudart.so.13
 * lands in a local scope, out of reach of dlsym(RTLD_NEXT, ...).
 */
#ifndef TESTEXT_H
#define TESTEXT_H

#include <stddef.h>

/* cudaMalloc(out, size); returns its cudaError_t as an int. */
int testext_alloc(size_t size, void **out);

/* cudaFree(ptr); returns its cudaError_t as an int. */
int testext_free(void *ptr);

#endif
