/* SPDX-License-Identifier: MIT */
/*
 * The process's state (state.h). Kept at the bottom so that every room
 * may start the shim and tell whether it records, while only the top
 * (life/process.c) knows what the start does.
 */
#include "state.h"

#include <pthread.h>

__thread int lw_in_hook __attribute__((tls_model("initial-exec")));
int lw_state = LW_STATE_UNINIT;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* The starts LW_START names (one in the library; none in a test that
 * links the recorder without life/, whose state then stays UNINIT). */
extern lw_start_fn *const __start_lw_start[]
	__attribute__((weak, visibility("hidden")));
extern lw_start_fn *const __stop_lw_start[]
	__attribute__((weak, visibility("hidden")));

static void init_once_fn(void)
{
	for (lw_start_fn *const *s = __start_lw_start; s < __stop_lw_start; s++)
		(*s)();
}

void lw_init(void)
{
	pthread_once(&init_once, init_once_fn);
}
