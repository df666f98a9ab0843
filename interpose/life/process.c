/* SPDX-License-Identifier: MIT */
/*
 * The process's life as the shim sees it: the lazy start (configuration,
 * unwinder, Python, signals), fork, exec, an end without exit handlers (a
 * signal's default action, _exit(), quick_exit()) and exit. The tracker does
 * the work of each (lw_tracker_*); this file decides when.
 */
#include "process.h"
#include "tracker.h"

#include <errno.h>
#include <pthread.h>
#include <sys/auxv.h>

#include "arena.h"
#include "config.h"
#include "gate.h"
#include "holders.h"
#include "kept.h"
#include "live-view.h"
#include "origins.h"
#include "pyframes.h"
#include "pyhooks.h"
#include "signals.h"
#include "summary.h"
#include "torchconf.h"
#include "unwind.h"

void lw_flush_before_exec(void)
{
	int saved_errno = errno;

	if (lw_in_hook ||
	    __atomic_load_n(&lw_state, __ATOMIC_ACQUIRE) != LW_STATE_ACTIVE)
		return;
	lw_tracker_flush_before_exec();
	errno = saved_errno;
}

/* The tracker's lock, then the arena's: every lock a hook may hold. */
static void before_fork(void)
{
	lw_tracker_before_fork();
	lw_arena_lock_for_fork();
}

static void after_fork_in_parent(void)
{
	lw_arena_unlock_after_fork();
	lw_tracker_after_fork_in_parent();
}

/*
 * The child must never write into its parent's trace: the tracker drops
 * the inherited buffer and file, forgets the parent's allocations, and
 * opens a trace of the child's own if it allocates.
 */
static void after_fork_in_child(void)
{
	lw_arena_unlock_after_fork();
	lw_tracker_after_fork_in_child();
}

void lw_flush_at_end(void)
{
	int saved_errno = errno;

	if (__atomic_load_n(&lw_state, __ATOMIC_ACQUIRE) == LW_STATE_ACTIVE)
		lw_tracker_flush_at_end();
	errno = saved_errno;
}

/* Read once, at the start; the tracker keeps a pointer. */
static struct lw_config config;

/* The start, run once by lw_init() (base/state.c). */
static void start(void)
{
	int state = LW_STATE_ACTIVE;

	lw_in_hook = 1; /* nothing below may be recorded */
	if (getauxval(AT_SECURE)) {
		/* setuid and other secure-execution programs: hands off. */
		state = LW_STATE_OFF;
		goto done;
	}
	lw_config_load(&config);
	if (config.disabled) {
		state = LW_STATE_OFF;
		goto done;
	}
	/* What reacts to the recorder's events subscribes, in the order
	 * each event calls them (events.h). */
	lw_torch_start();
	lw_origins_start();
	lw_gate_start();
	lw_live_view_configure(config.live_every, config.use_signal);
	lw_holders_configure(config.holders, config.holders_budget);
	lw_summary_start();
	lw_py_hooks_start();
	lw_kept_configure(config.min_steps);
	lw_unwind_init(config.fast_unwind);
	enum lw_py_status py = lw_py_init();
	if (py == LW_PY_UNSUPPORTED)
		lw_warn_once(LW_WARN_PYTHON,
			     "Python %s is not supported for Python frames; "
			     "allocation sites show native frames only",
			     lw_py_version());
	lw_tracker_start(&config, py);
	pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
	lw_signals_start(config.use_signal);
done:
	lw_in_hook = 0;
	__atomic_store_n(&lw_state, state, __ATOMIC_RELEASE);
}

LW_START(start);

__attribute__((destructor)) static void leakwatch_fini(void)
{
	lw_shutdown();
}
