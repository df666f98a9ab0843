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
static void (*start_fn)(void);

static void init_once_fn(void)
{
	start_fn();
}

/* Before the start is set (no hook runs that early) the state stays
 * UNINIT, for a later call to start it. */
void lw_init(void)
{
	if (__atomic_load_n(&start_fn, __ATOMIC_ACQUIRE))
		pthread_once(&init_once, init_once_fn);
}

void lw_set_start(void (*start)(void))
{
	__atomic_store_n(&start_fn, start, __ATOMIC_RELEASE);
}
