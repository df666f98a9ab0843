/* SPDX-License-Identifier: MIT */
/*
 * deepbind deep|plain: loads libtestext.so by its bare name, found only
 * through this program's RUNPATH ($ORIGIN) - which works only if the
 * dynamic loader sees this program, not the shim, as dlopen's caller -
 * with RTLD_DEEPBIND ("deep") or without ("plain"). Then 4096 bytes are
 * allocated through the library (its runtime calls bypass the shim under
 * RTLD_DEEPBIND) and 1000 by the program itself; both stay allocated.
 */
#include <dlfcn.h>
#include <string.h>

#include "prog-common.h"

int main(int argc, char **argv)
{
	int deep = argc > 1 && strcmp(argv[1], "deep") == 0;
	int (*ext_alloc)(size_t, void **);
	void *handle, *sym, *p, *q;

	handle = dlopen("libtestext.so",
			RTLD_NOW | RTLD_LOCAL | (deep ? RTLD_DEEPBIND : 0));
	if (!handle) {
		fprintf(stderr, "deepbind: %s\n", dlerror());
		return 1;
	}
	sym = dlsym(handle, "testext_alloc");
	if (!sym)
		return 1;
	memcpy(&ext_alloc, &sym, sizeof(ext_alloc));
	if (ext_alloc(4096, &p) != 0)
		return 1;
	CHECK_CUDA(cudaMalloc(&q, 1000));
	printf("ok\n");
	return 0;
}
