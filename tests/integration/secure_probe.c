/* SPDX-License-Identifier: MIT */
/*
 * secure_probe: built by the secure_exec integration test against
 * libleakwatch.so and the stand-in runtime (no CUDA headers: the two calls
 * it makes are declared here), run with and without its set-user-ID bit.
 * Prints whether it runs in secure-execution mode, what its allocation
 * returned, and what PYTORCH_CUDA_ALLOC_CONF the shim left it.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

int cudaMalloc(void **ptr, size_t size);
int cudaFree(void *ptr);

int main(void)
{
	const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
	void *p = NULL;
	int rc = cudaMalloc(&p, 4096);

	printf("secure %lu\n", getauxval(AT_SECURE));
	printf("malloc %d\n", rc);
	printf("free %d\n", cudaFree(p));
	printf("conf %s\n", conf ? conf : "(unset)");
	return 0;
}
