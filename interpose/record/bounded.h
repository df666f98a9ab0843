/* SPDX-License-Identifier: MIT */
/*
 * The bounded trace (common/lw-format.h, "Bounded traces"): from the first
 * step mark on, the trace keeps in full what outlives the interval it was
 * made in (steps, and the spans between phase marks and other boundaries)
 * and what frees older memory, and sums the rest per stack. Between two
 * boundaries nothing of it is written: each allocation of the interval is
 * noted in order in a list, and each one freed before the interval ends is
 * counted for its stack instead. When the interval ends (lw_bounded_settle),
 * the list keeps the allocations still live and the other records to write,
 * in order, and the counts become one SHORT_LIVED record, which changes only
 * where a stack made something else than in the interval before.
 *
 * Memory: the list holds at most about twice what the interval keeps (the
 * allocations live, the frees of older memory, the collector's passes with a
 * free inside) plus 1024 entries: it is compacted when it fills, and an
 * allocation freed right after it was made leaves it at once. Per stack, a
 * few counters (struct lw_short_lived); per (API, device, stream) context,
 * a few words, up to LW_BOUNDED_CONTEXTS_MAX of them. Never per event.
 *
 * Not thread-safe: called under the tracker's lock.
 */
#ifndef LW_BOUNDED_H
#define LW_BOUNDED_H

#include <stdbool.h>
#include <stdint.h>

struct lw_addr_table;
struct lw_live;
struct lw_stack_entry;
struct lw_writer;

/* A stack's part (a member of struct lw_stack_entry). */
struct lw_short_lived {
	/* What it made and freed in interval `interval`, of kind `kind`
	 * in context `context` (the first of its allocations there says
	 * which; the others go to the list whole). */
	uint64_t count, bytes, gc_count, gc_bytes;
	/* What the trace has in force for it (its last change). */
	uint64_t sent_count, sent_bytes, sent_gc_count, sent_gc_bytes;
	uint32_t interval;
	uint32_t context, sent_context;	/* indexes of bounded.c's table */
	uint8_t kind, sent_kind;
	/* Kinds (1 << enum lw_mem_kind) of which an ALLOC record of it is
	 * in the trace, or will be when the interval ends. */
	uint8_t announced;
	bool in_force;
};

/* Flags of a live allocation (struct lw_live's flags). */
enum {
	/* Made in the running interval; its ALLOC is not written yet. */
	LW_LIVE_PENDING = 1,
	/* Its ALLOC is written even if it is freed in the interval. */
	LW_LIVE_KEEP = 2,
	/* A block of PyTorch's caching allocator (its peak is reported). */
	LW_LIVE_TORCH = 4,
	/* Taken by a compaction of the list (for a moment). */
	LW_LIVE_CLAIMED = 8,
};

/* Writes a CONTEXT record unless it is the one in force (the tracker's). */
typedef void lw_bounded_context_fn(unsigned api, int64_t device,
				   uint64_t stream);

/* Set while allocations go through the list: a bounded trace after its
 * first step mark, as long as leakwatch's own memory lasted. */
extern bool lw_bounded_active;

static inline bool lw_bounded_on(void)
{
	return lw_bounded_active;
}

/*
 * Forgets everything (a new trace, a forked child). enabled: the trace is
 * to be bounded (INFO "trace_detail"); it is written with writer, the live
 * allocations are in live, and context writes CONTEXT records.
 */
void lw_bounded_reset(bool enabled, struct lw_writer *writer,
		      struct lw_addr_table *live,
		      lw_bounded_context_fn *context);

/* The first step mark was written: the next interval starts, with this
 * much device memory and PyTorch's blocks live. */
void lw_bounded_steps_begin(uint64_t device_live, uint64_t torch_live);

/*
 * An allocation just added to the live table (e), of API api, device and
 * stream; device memory and PyTorch's blocks now live (e included). Returns
 * false when it could not be noted (leakwatch's memory is out, or its
 * context is one past LW_BOUNDED_CONTEXTS_MAX): the interval was written,
 * the trace is full from here on, and the caller writes the ALLOC itself.
 */
bool lw_bounded_alloc(struct lw_live *e, unsigned api, int64_t device,
		      uint64_t stream, uint64_t device_live,
		      uint64_t torch_live);

/*
 * The free of e, still in the live table. Returns 1 when it was counted for
 * its stack (made and freed in the interval), 0 when its FREE was noted in
 * the list, -1 when it could not be (as for lw_bounded_alloc(): the caller
 * writes the FREE). in_gc: inside a pass of Python's cycle collector.
 */
int lw_bounded_free(struct lw_live *e, bool in_gc);

/* A FREE of an address the live table does not hold; a GC mark (enum
 * lw_mark). As above, false when the caller writes it itself. */
bool lw_bounded_unknown_free(uint64_t addr);
bool lw_bounded_gc_mark(unsigned mark);

/* Writes the interval and goes on in full for good (the tracker could
 * not note an event: leakwatch's memory is out). */
void lw_bounded_stop(void);

/*
 * The most (API, device, stream) contexts a bounded trace tells apart: a
 * program that allocates on more streams than that (one that makes new
 * ones without end) gets the rest of its trace in full.
 */
#define LW_BOUNDED_CONTEXTS_MAX 65536

/* Why the bounded trace stopped, when it did: true for more contexts than
 * LW_BOUNDED_CONTEXTS_MAX, false for leakwatch's memory. */
bool lw_bounded_stopped_by_contexts(void);

/*
 * Ends the interval: writes what it kept, in order, and its SHORT_LIVED
 * record (nothing when it saw no allocation, free or GC mark). Every
 * allocation live is then written. The next interval begins with
 * device_live and torch_live bytes live. Call it before any record that
 * the interval's records must precede (see common/lw-format.h).
 */
void lw_bounded_settle(uint64_t device_live, uint64_t torch_live);

/* A CONTEXT record for this context was written. */
void lw_bounded_context_written(unsigned api, int64_t device, uint64_t stream);

#endif
