/* SPDX-License-Identifier: MIT */
/*
 * The distinct call stacks, and the Python code objects and strings they
 * refer to, each stored once and written to a trace once (per trace: a
 * forked child starts its own). Not thread-safe: called under the tracker's
 * lock.
 */
#ifndef LW_STACKS_H
#define LW_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "bounded.h"
#include "kept.h"
#include "lw-uthash.h"

struct lw_writer;

/*
 * A distinct stack: its native return addresses, then for each Python frame
 * two words, the code object and (line + 1) << 1 | entry. Python frames are
 * part of the identity: the same native path from two lines of a script is
 * two sites.
 */
struct lw_stack_entry {
	uint64_t hash;
	struct lw_stack_entry *collision; /* same hash, other frames */
	uint32_t id;
	uint32_t depth;     /* native frames */
	uint32_t py_depth;  /* Python frames */
	uint32_t trace_gen; /* the trace its records went to */
	uint64_t device_live_bytes, device_live_count;
	struct lw_kept kept;	/* what survives the steps (kept.h) */
	/* What it makes and frees within an interval (bounded.h). */
	struct lw_short_lived short_lived;
	UT_hash_handle hh;
	uintptr_t frames[];
};

/* The hash identifying a stack of depth native and py_depth Python frames,
 * from native_hash, the running hash of the native frames that lw_unwind()
 * gave. */
uint64_t lw_stacks_hash_from(uint64_t native_hash, const uintptr_t *frames,
			     unsigned depth, unsigned py_depth);

struct lw_stack_entry *lw_stacks_find(uint64_t hash, const uintptr_t *frames,
				      unsigned depth, unsigned py_depth);

/* Adds a stack with the next id; NULL when leakwatch's memory is out. */
struct lw_stack_entry *lw_stacks_add(uint64_t hash, const uintptr_t *frames,
				     unsigned depth, unsigned py_depth);

/* Writes the STACK (and PYSTACK, PYCODE, STRING) records of s unless they
 * are already in trace generation gen. */
void lw_stacks_write(struct lw_stack_entry *s, struct lw_writer *w,
		     uint32_t gen);

/* The id of text in trace generation gen, writing its STRING record the
 * first time; 0 when leakwatch's memory is out. */
uint64_t lw_strings_intern(struct lw_writer *w, uint32_t gen,
			   const char *text);

/* Calls fn for every stack. */
void lw_stacks_for_each(void (*fn)(struct lw_stack_entry *s, void *ctx),
			void *ctx);

/*
 * "function (file.py:line)" of the stack's innermost Python frame of the
 * user's code (else its innermost) into out, or "" when it has none: the
 * names the frames had when the stack was written (a code object that died
 * since is not read).
 */
void lw_stacks_python_location(const struct lw_stack_entry *s, char *out,
			       size_t size);

/* Forgets every stack, code object and string; ids start again at 1. */
void lw_stacks_reset(void);

#endif
