/* SPDX-License-Identifier: MIT */
/*
 * torch_like: allocates through libc10_cuda.so (see c10_cuda.c) and prints
 * PYTORCH_CUDA_ALLOC_CONF as the process sees it, or "(unset)".
 */
#include <stdio.h>
#include <stdlib.h>

void *c10_cuda_raw_alloc(size_t size);

int main(void)
{
	const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");

	for (int i = 0; i < 4; i++)
		if (!c10_cuda_raw_alloc(4096))
			return 1;
	printf("%s\n", conf ? conf : "(unset)");
	return 0;
}
