/* SPDX-License-Identifier: MIT */
/*
 * The tracker: what the hooks call. It keeps the live allocations and the
 * distinct stacks and owns the trace; process.c tells it of the process's
 * life (lazy start, fork, exec, fatal signals, exit).
 *
 * A hook does: if (lw_enter()) { call the real function; record; lw_leave(); }
 * else { call the real function }. lw_enter() is false when the thread is
 * already inside a hook (the runtime calling itself, a signal handler), when
 * leakwatch is off for this process, and after the trace was closed at exit.
 */
#ifndef LW_TRACKER_H
#define LW_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lw-format.h"
#include "pyframes.h"
#include "state.h"
#include "warn.h"

/* True if this call is to be recorded; then lw_leave() must follow. */
static inline int lw_enter(void)
{
	if (lw_in_hook)
		return 0;
	int state = __atomic_load_n(&lw_state, __ATOMIC_ACQUIRE);
	if (state != LW_STATE_ACTIVE) {
		if (state != LW_STATE_UNINIT)
			return 0;
		lw_init();
		if (__atomic_load_n(&lw_state, __ATOMIC_ACQUIRE) !=
		    LW_STATE_ACTIVE)
			return 0;
	}
	lw_in_hook = 1;
	return 1;
}

static inline void lw_leave(void)
{
	lw_in_hook = 0;
}

/* Records a successful allocation; ptr NULL is ignored. stream is the raw
 * cudaStream_t (0 = legacy default stream). */
void lw_record_alloc(enum lw_api api, enum lw_mem_kind kind, const void *ptr,
		     uint64_t size, uint64_t stream);

/* The same, with the device known (-1: unknown). */
void lw_record_alloc_on(enum lw_api api, enum lw_mem_kind kind,
			const void *ptr, uint64_t size, uint64_t stream,
			int64_t device);

/*
 * Records a segment of PyTorch's caching allocator (key: its address, or
 * the cuMemCreate handle): reserved memory, not an allocation of the
 * program. Its free goes through lw_free_begin() like any other.
 */
void lw_record_segment(const void *key, uint64_t size, int64_t device);

/* Records PyTorch's out-of-memory report and flushes the trace. */
void lw_record_oom(uint64_t size, uint64_t allocated, uint64_t reserved,
		   int64_t device);

/*
 * Records an allocation call that returned error (the API's own code):
 * counted, written to the trace (which it opens, so that a program whose
 * every allocation fails still leaves one) and named in the exit summary.
 * No stack is captured.
 */
void lw_record_alloc_failed(enum lw_api api, enum lw_mem_kind kind,
			    uint64_t size, int error);

/*
 * The one record call of an allocation hook: with error 0, the allocation
 * at ptr (nothing when ptr is NULL: the call gave nothing back); else the
 * failed call, of size bytes asked for.
 */
static inline void lw_record_alloc_result(enum lw_api api,
					  enum lw_mem_kind kind, int error,
					  const void *ptr, uint64_t size,
					  uint64_t stream)
{
	if (error)
		lw_record_alloc_failed(api, kind, size, error);
	else if (ptr)
		lw_record_alloc(api, kind, ptr, size, stream);
}

/* Allocations recorded and allocation calls that failed, so far; takes
 * no lock. */
void lw_allocation_counts(uint64_t *recorded, uint64_t *failed);

/*
 * Frees are recorded *before* the real call, so that no other thread can be
 * handed the same address and record its allocation first. If the real call
 * fails, lw_free_end() puts the allocation back.
 */
struct lw_pending_free {
	uintptr_t addr;
	uint64_t size;
	void *stack;
	uint8_t kind;
	uint8_t known;
	uint8_t segment; /* a segment of PyTorch's allocator */
};

void lw_free_begin(const void *ptr, struct lw_pending_free *pending);
void lw_free_end(struct lw_pending_free *pending, int succeeded);

/* Records the free of a block that PyTorch's allocator took back, never a
 * segment (the first block of a segment starts at its address). */
void lw_record_block_free(const void *ptr);

/*
 * Who holds it (holders.c), called between lw_enter() and lw_leave():
 * the live device memory that outlived the step that made it, other than
 * the first step's, or the phase that made it, as (address, size) pairs,
 * at most max of them; returns how many there are. With wanted_only, only
 * that of the stacks a search is asked for during the run (kept.h); the
 * call that fills pairs then forgets the asks. And a holder found for the
 * allocation at address.
 */
size_t lw_holder_targets(uint64_t *pairs, size_t max, int wanted_only);

/* A notebook cell's text, for the report to show its lines (INFO
 * "source:NAME", lw-cells.h); once per trace. */
void lw_record_source(const char *name, const char *text, size_t len);
void lw_record_holder(uint64_t address, const char *path, const char *root,
		      uint64_t objects, uint64_t graph_nodes, unsigned flags);
/*
 * Where Python code comes from (origins.c), called between lw_enter() and
 * lw_leave(): a PYPATH record, enum lw_pypath_kind. Returns 0, or -1 when
 * no trace is open to take it.
 */
int lw_record_pypath(unsigned kind, const char *path, const char *name);
/* Steps since the cycle collector's last pass ended; -1 if none was seen. */
int64_t lw_steps_since_gc(void);
/* The holder searches made during the run so far, and their time in
 * seconds, for the trace to say at its end (INFO
 * "holder_searches_in_run"). */
void lw_record_searches_in_run(unsigned searches, double seconds);
/* Whether the search asked for now is the first for its reason (kept.h):
 * it runs whatever the searches before it cost. */
bool lw_holders_first_of_its_reason(void);

enum lw_step_source {
	LW_STEP_API = 1,       /* leakwatch_step(), the Python helper */
	LW_STEP_OPTIMIZER = 2, /* PyTorch's optimizer step post-hook */
	LW_STEP_LOOP = 3,      /* the user's loop, seen at allocations (stacks.h) */
	LW_STEP_LINE = 4,      /* LEAKWATCH_STEP_AT's line reached */
};

/*
 * Ends a training step. Once the program marked a step itself, optimizer
 * steps are ignored: an explicit mark says what a step is; and loop steps
 * come only while no optimizer steps. The trace says where its steps come
 * from (INFO "step_source").
 */
void lw_record_step(enum lw_step_source source);

/*
 * The program makes a new optimizer every iteration (each steps once): its
 * steps are not the loop's, which gives the steps from now on. With the
 * GIL, from the optimizer hook.
 */
void lw_record_optimizer_remade(void);

/* The public API's work (see include/leakwatch.h). */
void lw_record_phase_begin(const char *name);
void lw_record_phase_end(void);

/* Records a MARK (see common/lw-format.h) and flushes. */
void lw_record_mark(enum lw_mark mark);

/*
 * Device and managed memory live now. Returns 0, or -1 when the shim is
 * not tracking (off, or its trace failed).
 */
int lw_device_live(uint64_t *bytes, uint64_t *count);

/* What leakwatch.snapshot() tells: steps written, device memory live,
 * and what grows from step to step (kept.h). */
struct lw_snapshot {
	uint64_t steps, live_bytes, live_count;
	unsigned growing_sites;
	double fastest;		/* bytes per step, at the fastest site */
};

/*
 * Flushes the trace, prints the live view's line ("snapshot: ") and says
 * what the trace holds now, with its path in path. Returns 0, or -1 when
 * the shim is not tracking (no trace open).
 */
int lw_snapshot_taken(char *path, size_t path_size, struct lw_snapshot *out);

/* A signal asks for the live view's line and a flush of the trace, at the
 * next event (the handler of SIGUSR2). Async-signal-safe. */
void lw_record_request(void);

/* Closes the trace and prints the exit summary (the library destructor). */
void lw_shutdown(void);

/*
 * The tracker's part in the process's life (process.c, which decides when).
 * lw_tracker_start() begins tracking with the configuration, which must
 * outlive the process's use of it, and what lw_py_init() found.
 * The flushes never block: before an exec, the lock is taken only if it is
 * free at once; at the end, as lw_flush_at_end() says.
 * Before a fork the tracker's lock is taken; after it, released, in the
 * child once the child's state is that of a process that has recorded
 * nothing.
 */
struct lw_config;
void lw_tracker_start(const struct lw_config *config, enum lw_py_status py);
void lw_tracker_flush_before_exec(void);
void lw_tracker_flush_at_end(void);
void lw_tracker_before_fork(void);
void lw_tracker_after_fork_in_parent(void);
void lw_tracker_after_fork_in_child(void);

#endif
