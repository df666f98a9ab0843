/* SPDX-License-Identifier: MIT */
/*
 * The live view of a long job: one line on stderr every N steps
 * (LEAKWATCH_LIVE_EVERY), and on SIGUSR2 (LEAKWATCH_SIGNAL, on by default
 * only with LEAKWATCH_LIVE_EVERY: otherwise the signal keeps its default
 * action, which ends the program) a flush of the trace and the same line at
 * the next event, so that `leakwatch report` can be run on the trace of a
 * job that is still running.
 */
#ifndef LW_LIVE_VIEW_H
#define LW_LIVE_VIEW_H

#include <signal.h>
#include <stdint.h>

/* Set by the signal handler, cleared by lw_live_view_take_request(). */
extern volatile sig_atomic_t lw_live_requested;

/* every: 0 for no periodic line; use_signal: install the handler. */
void lw_live_view_configure(unsigned every, int use_signal);

/*
 * The process opened its trace: installs the SIGUSR2 handler, only if the
 * signal's disposition is still the default one (a program that handles
 * SIGUSR2 itself keeps it).
 */
void lw_live_view_trace_opened(void);

/*
 * What grows from step to step (kept.h), asked for only when a line is
 * printed: how many sites, and the fastest's bytes per step.
 */
typedef void lw_live_growth_fn(unsigned *sites, double *fastest);

/* A step ended with this much device memory live: prints the line every
 * N steps. Under the tracker's lock. */
void lw_live_view_step(uint64_t live_bytes, uint64_t live_count,
		       lw_live_growth_fn *growth);

/* PyTorch's pool as it stands (its blocks and its segments), for the next
 * line: set before lw_live_view_step() and lw_live_view_print_now(). Under
 * the tracker's lock. */
void lw_live_view_pool(uint64_t allocated, uint64_t reserved);

/* Whether a signal asked for a line (and clears the request). */
static inline int lw_live_view_take_request(void)
{
	if (!lw_live_requested)
		return 0;
	lw_live_requested = 0;
	return 1;
}

/* The line asked for by the signal (lead "SIGUSR2: ") or by
 * leakwatch.snapshot() ("snapshot: "), after the trace was flushed: memory
 * live now, and its growth judged on step ends, as the periodic line's. */
void lw_live_view_print_now(const char *lead, uint64_t live_bytes,
			    uint64_t live_count, const char *trace_path,
			    lw_live_growth_fn *growth);

/* In a forked child: steps count from 0 again. */
void lw_live_view_reset(void);

#endif
