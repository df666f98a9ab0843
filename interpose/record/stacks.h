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

/* The outermost frames of the user's own code a stack's loop inference
 * looks at (the loop, below). */
#define LW_LOOP_LEVELS 8

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
	/* Its frames of the user's own code, outermost first, as indexes
	 * into its Python frames (user_count of them, at most
	 * LW_LOOP_LEVELS), and the frame at LEAKWATCH_STEP_AT's line (-1:
	 * none): read once, when the stack is first written
	 * (lw_stacks_note_frames()). */
	uint8_t frames_noted;
	uint8_t user_count;
	uint8_t user_at[LW_LOOP_LEVELS];
	int16_t step_at;
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

/*
 * Fills in the stack's user frames (by their paths, lw-origin.h) and
 * step_at, once: after
 * lw_stacks_write() (whose code objects' names it reads), in the thread
 * that captured it. step_file may be NULL (no LEAKWATCH_STEP_AT).
 */
void lw_stacks_note_frames(struct lw_stack_entry *s, const char *step_file,
			   int step_line);

/* The file and function names of a stack's code object (as written to
 * the trace), or NULL when not known. */
const char *lw_stacks_code_file(const struct lw_stack_entry *s,
				uintptr_t code);
const char *lw_stacks_code_name(const struct lw_stack_entry *s,
				uintptr_t code);

/* Forgets every stack, code object and string; ids start again at 1. */
void lw_stacks_reset(void);

/* ---- the loop ---- */

/*
 * Steps of a program that marks none and has no optimizer: the loop of the
 * user's own code that repeats (a server's requests, a batch job's
 * batches), found as the program runs from the stacks of its allocations.
 *
 * A frame's line that goes backwards between two allocations made in that
 * frame (every frame outside it on the same lines), or that stays with its
 * fast locals bound anew (a loop whose body is one line: the loop variable
 * changed), is a loop starting its next iteration. The loop is the outermost one that iterates: a frame of
 * the user's code only (a model's layers, library code and
 * nn.Sequential's own loop are never it), the outermost of those frames,
 * and in one frame the loop whose iterations go back furthest. Until an
 * outer loop has iterated once, an inner one (the tokens of the first
 * request) may be taken for the loop: the steps written until then are
 * void (the trace says how many, tracker.c).
 *
 * Called under the tracker's lock; takes none, allocates nothing: a few
 * comparisons per allocation on the frames the stack already holds.
 */

enum lw_loop_event {
	LW_LOOP_NONE,
	LW_LOOP_STEP,	/* the loop's next iteration begins */
	LW_LOOP_NEW,	/* a loop (other than the one so far) iterates: the
			 * steps so far were not its */
	LW_LOOP_NEXT,	/* another loop iterates after the loop ended: its
			 * iterations are steps too */
	LW_LOOP_END,	/* the loop's frame returned: its last step ends */
};

/* What the allocation from stack s (its frames noted) tells of the loop;
 * locals: lw_py_locals_hash() of each of its user frames (user_at). */
enum lw_loop_event lw_loop_note(const struct lw_stack_entry *s,
				const uint64_t *locals);

/* The loop, as the last event found it: the first line of its
 * iterations (the one its iterations go back to); -1 before any. */
int lw_loop_line(void);
/* Its frame's level among the user's frames (stacks.h's user_at). */
unsigned lw_loop_level(void);

/* The program's code finished: the loop's last iteration ends if its
 * frame had not returned (true then). */
int lw_loop_close(void);

/* Forgets the loop (a forked child's trace starts afresh). */
void lw_loop_reset(void);

#endif
