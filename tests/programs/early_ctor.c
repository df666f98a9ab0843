/* SPDX-License-Identifier: MIT */
/*
 * early_ctor: linked to libearlyctor.so, whose constructor allocated 1 MiB
 * before main() (and before the shim's constructors). Allocates 1000 bytes
 * itself; both stay allocated.
 */
#include "prog-common.h"

extern void *earlyctor_buffer;

int main(void)
{
	void *p;

	if (!earlyctor_buffer) {
		fprintf(stderr, "early_ctor: the library's allocation failed\n");
		return 1;
	}
	prog_check(cudaMalloc(&p, 1000), "cudaMalloc");
	puts("ok");
	return 0;
}
