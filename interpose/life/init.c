/* SPDX-License-Identifier: MIT */
/*
 * What the shim does as it is loaded, before the program's code runs. Kept
 * to what must happen that early: tracing itself starts lazily, at the
 * first CUDA call (see tracker.c).
 */
#include "torchconf.h"

__attribute__((constructor)) static void leakwatch_load(void)
{
	/* PyTorch reads its allocator settings at its first CUDA allocation,
	 * long after this; Python copies the environment at start-up. */
	lw_torch_choose();
}
