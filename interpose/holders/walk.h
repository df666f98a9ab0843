/* SPDX-License-Identifier: MIT */
/*
 * Who holds it, read from the interpreter (walk.c): the shortest reference
 * path from a root of the program (a local of a running or suspended
 * function, a module global) to the live objects whose device buffers lie
 * inside given allocations, and, for those no root reaches, the reference
 * cycle that keeps them until the collector runs.
 *
 * A reader, like the collector's own traversal: it runs no bytecode, calls
 * nothing of the program, makes no Python object and takes no reference,
 * and its memory is the shim's. The caller holds the GIL and keeps it.
 */
#ifndef LW_WALK_H
#define LW_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one holder keeps: one allocation of each size it holds, at most
 * LW_WALK_SIZES of them. */
#define LW_WALK_SIZES 16

struct lw_walk_holder {
	uint64_t addresses[LW_WALK_SIZES];
	size_t count;        /* addresses used */
	const char *path;    /* losses[12], trainer.metrics[3].correct */
	const char *root;    /* local of train (train.py:40), global of __main__ */
	uint64_t objects;    /* the allocations found behind it */
	uint64_t graph_nodes; /* autograd nodes behind its root, 0 if none */
	unsigned flags;      /* enum lw_holder_flags */
};

struct lw_walk_result {
	bool cut;      /* the budget or the memory bound ended it early */
	bool searched; /* it ran (an interpreter it can read, the GIL held) */
};

/*
 * Whether the calling thread holds the GIL of an interpreter the walk can
 * read, and nothing forbids a walk now (the collector running, the
 * interpreter finalising). Cheap: a flag and a thread-local read.
 */
bool lw_walk_possible(void);

/*
 * Searches for the holders of the allocations given as (start, size)
 * pairs, sorted by start, until deadline (CLOCK_MONOTONIC seconds):
 * found(holder, ctx) for each holder, most direct first. steps_since_gc
 * (-1: not known) words the root of an unreachable cycle. Only where
 * lw_walk_possible().
 */
struct lw_walk_result lw_walk(const uint64_t *pairs, size_t n, double deadline,
			      int64_t steps_since_gc,
			      void (*found)(const struct lw_walk_holder *h,
					    void *ctx),
			      void *ctx);

/* CLOCK_MONOTONIC, in seconds. */
double lw_walk_now(void);

/*
 * The text of the notebook cells the interpreter compiled, as IPython
 * keeps it in linecache.cache ({name: (size, mtime, lines, name)}):
 * found(name, text, len, ctx) for each entry named as a cell is
 * (lw-cells.h), its lines joined (cut at LW_WALK_CELL_MAX bytes, at a
 * line's end). Read, never run. Only where lw_walk_possible().
 */
#define LW_WALK_CELL_MAX 32768
void lw_walk_cells(void (*found)(const char *name, const char *text,
				 size_t len, void *ctx),
		   void *ctx);

#endif
