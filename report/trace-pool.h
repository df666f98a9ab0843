/* SPDX-License-Identifier: MIT */
/*
 * Several traces read on several threads (the ranks of a job): each
 * trace's work (reading, analysing) runs on a worker thread, at most a few
 * traces ahead of the one the calling thread uses, which uses them in
 * their order (writing reports), so that what is written is what one
 * thread would write, and only a few traces are held at once. The first
 * trace is read alone, before the others: the symbols of the job's
 * libraries are read for it, and the other ranks find them in the symbol
 * cache instead of each reading them at the same time.
 *
 * Threads: LEAKWATCH_THREADS, else the processors the process may run on;
 * never more than the traces. With one, everything runs on the calling
 * thread, in order.
 */
#ifndef LW_TRACE_POOL_H
#define LW_TRACE_POOL_H

#include <stddef.h>

struct lw_trace_pool_ops {
	/* The work of trace index, on any thread; its result goes to use. */
	int (*load)(void *ctx, size_t index);
	/* On the calling thread, for index 0, 1, ... once its load returned
	 * result; NULL: nothing to do. */
	void (*use)(void *ctx, size_t index, int result);
};

/*
 * Runs ops over count traces, at most ahead (>= 1) of them loaded and not
 * yet used: the caller's per-trace state can be a ring of ahead slots,
 * index % ahead. Returns 0, or -ENOMEM (then nothing was run).
 */
int lw_trace_pool_run(size_t count, size_t ahead,
		      const struct lw_trace_pool_ops *ops, void *ctx);

/* The threads lw_trace_pool_run() uses for count traces (>= 1). */
size_t lw_trace_pool_threads(size_t count);

#endif
