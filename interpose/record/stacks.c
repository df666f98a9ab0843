/* SPDX-License-Identifier: MIT */
#include "stacks.h"

#include <stdio.h>
#include <string.h>

#include "backward.h"
#include "lw-cells.h"
#include "lw-format.h"
#include "lw-origin.h"
#include "coderules.h"
#include "pyframes.h"
#include "unwind.h"
#include "writer.h"

static int table_oom;

/* A Python code object as the trace knows it. */
struct lw_code_entry {
	const void *code;
	uint64_t id;
	uint64_t file_id, name_id; /* string ids */
	const char *file, *name;   /* their texts */
	/* The first stack that referred to it: a stack made before refers
	 * to a code object that died at this address. */
	uint32_t first_stack;
	uint32_t trace_gen;
	UT_hash_handle hh;
};

/* An interned string (file and function names, phase names). */
struct lw_string_entry {
	uint64_t id;
	uint32_t trace_gen;
	UT_hash_handle hh;
	char text[];
};

static struct lw_stack_entry *stack_table;
static struct lw_code_entry *code_table;
static struct lw_string_entry *string_table;
static uint32_t next_stack_id = 1;
static uint64_t next_code_id = 1, next_string_id = 1;

/*
 * The Python words are hashed in four independent chains, joined at the
 * end: a chain costs a multiply's latency per word, and a deep Python stack
 * has sixty words or more.
 */
uint64_t lw_stacks_hash_from(uint64_t native_hash, const uintptr_t *frames,
			     unsigned depth, unsigned py_depth)
{
	const uintptr_t *w = frames + depth;
	unsigned n = 2 * py_depth, i = 0;
	uint64_t a = native_hash, b = LW_HASH_SEED + 1, c = LW_HASH_SEED + 2,
		 d = LW_HASH_SEED + 3;

	for (; i + 4 <= n; i += 4) {
		a = lw_hash_word(a, w[i]);
		b = lw_hash_word(b, w[i + 1]);
		c = lw_hash_word(c, w[i + 2]);
		d = lw_hash_word(d, w[i + 3]);
	}
	for (; i < n; i++)
		a = lw_hash_word(a, w[i]);
	if (n >= 4) {
		a = lw_hash_word(a, b);
		a = lw_hash_word(a, c);
		a = lw_hash_word(a, d);
	}
	return lw_hash_finish(a, depth + n);
}

struct lw_stack_entry *lw_stacks_find(uint64_t hash, const uintptr_t *frames,
				      unsigned depth, unsigned py_depth)
{
	struct lw_stack_entry *s;
	size_t words = depth + 2 * (size_t)py_depth;

	HASH_FIND(hh, stack_table, &hash, sizeof(hash), s);
	for (; s; s = s->collision)
		if (s->depth == depth && s->py_depth == py_depth &&
		    memcmp(s->frames, frames, words * sizeof(*frames)) == 0)
			return s;
	return NULL;
}

struct lw_stack_entry *lw_stacks_add(uint64_t hash, const uintptr_t *frames,
				     unsigned depth, unsigned py_depth)
{
	struct lw_stack_entry *s, *head;
	size_t words = depth + 2 * (size_t)py_depth;

	s = lw_arena_alloc(sizeof(*s) + words * sizeof(*frames));
	if (!s)
		return NULL;
	s->hash = hash;
	s->id = next_stack_id++;
	s->depth = depth;
	s->py_depth = py_depth;
	memcpy(s->frames, frames, words * sizeof(*frames));

	HASH_FIND(hh, stack_table, &hash, sizeof(hash), head);
	if (head) {
		s->collision = head->collision;
		head->collision = s;
		return s;
	}
	table_oom = 0;
	HASH_ADD(hh, stack_table, hash, sizeof(s->hash), s);
	if (table_oom) {
		lw_arena_free(s);
		return NULL;
	}
	return s;
}

static struct lw_string_entry *intern_string(struct lw_writer *w,
					     uint32_t gen, const char *text);

uint64_t lw_strings_intern(struct lw_writer *w, uint32_t gen,
			   const char *text)
{
	struct lw_string_entry *e = intern_string(w, gen, text);

	return e ? e->id : 0;
}

static struct lw_string_entry *intern_string(struct lw_writer *w,
					     uint32_t gen, const char *text)
{
	struct lw_string_entry *e;
	size_t len = strlen(text);

	HASH_FIND(hh, string_table, text, len, e);
	if (!e) {
		e = lw_arena_alloc(sizeof(*e) + len + 1);
		if (!e)
			return NULL;
		memcpy(e->text, text, len + 1);
		e->id = next_string_id++;
		table_oom = 0;
		HASH_ADD_KEYPTR(hh, string_table, e->text, len, e);
		if (table_oom) {
			lw_arena_free(e);
			return NULL;
		}
	}
	if (e->trace_gen != gen) {
		lw_writer_string(w, e->id, e->text);
		e->trace_gen = gen;
	}
	return e;
}

/*
 * The id of a code object in this trace, writing its PYCODE record the first
 * time. Its names are read again whenever a new stack refers to it, so that
 * a code object that died and whose address was reused by another one gets a
 * new id instead of the old names. Called in the thread whose frames
 * hold the code object alive.
 */
static uint64_t intern_code(struct lw_writer *w, uint32_t gen,
			    const void *code, uint32_t stack)
{
	char file[1024], name[512];
	struct lw_string_entry *fs, *ns;
	struct lw_code_entry *e;
	int first_line = 0;

	if (lw_py_code_info(code, file, sizeof(file), name, sizeof(name),
			    &first_line) < 0)
		return 0;
	lw_backward_note_code(code, file, name);
	fs = intern_string(w, gen, file);
	ns = intern_string(w, gen, name);
	if (!fs || !ns)
		return 0;

	HASH_FIND(hh, code_table, &code, sizeof(code), e);
	if (e && (e->file_id != fs->id || e->name_id != ns->id)) {
		HASH_DEL(code_table, e);
		lw_arena_free(e);
		e = NULL;
	}
	if (!e) {
		e = lw_arena_alloc(sizeof(*e));
		if (!e)
			return 0;
		e->code = code;
		e->id = next_code_id++;
		e->file_id = fs->id;
		e->name_id = ns->id;
		e->file = fs->text;
		e->name = ns->text;
		e->first_stack = stack;
		table_oom = 0;
		HASH_ADD(hh, code_table, code, sizeof(e->code), e);
		if (table_oom) {
			lw_arena_free(e);
			return 0;
		}
	}
	if (e->trace_gen != gen) {
		uint8_t payload[4 * LW_VARINT_MAX];
		size_t n = lw_varint_put(payload, e->id);
		n += lw_varint_put(payload + n, e->file_id);
		n += lw_varint_put(payload + n, e->name_id);
		n += lw_varint_put(payload + n, (uint64_t)(first_line > 0 ? first_line : 0));
		lw_writer_ext(w, LW_REC_PYCODE, payload, n);
		e->trace_gen = gen;
	}
	return e->id;
}

/* The PYSTACK record of a stack with Python frames. */
static void write_pystack(const struct lw_stack_entry *s, struct lw_writer *w,
			  uint32_t gen)
{
	uint8_t payload[(3 + 2 * LW_MAX_PY_FRAMES + LW_MAX_FRAMES) *
			LW_VARINT_MAX];
	const uintptr_t *py = s->frames + s->depth;
	size_t n = lw_varint_put(payload, s->id);
	unsigned nevals = 0;
	uint8_t evals[LW_MAX_FRAMES];

	n += lw_varint_put(payload + n, s->py_depth);
	for (unsigned i = 0; i < s->py_depth; i++) {
		n += lw_varint_put(payload + n, intern_code(w, gen,
						       (const void *)py[2 * i],
						       s->id));
		n += lw_varint_put(payload + n, py[2 * i + 1]);
	}
	for (unsigned i = 0; i < s->depth; i++)
		if (lw_py_is_eval_address(s->frames[i]))
			evals[nevals++] = (uint8_t)i;
	n += lw_varint_put(payload + n, nevals);
	for (unsigned i = 0; i < nevals; i++)
		n += lw_varint_put(payload + n, evals[i]);
	lw_writer_ext(w, LW_REC_PYSTACK, payload, n);
}

void lw_stacks_write(struct lw_stack_entry *s, struct lw_writer *w,
		     uint32_t gen)
{
	if (s->trace_gen == gen)
		return;
	lw_writer_stack(w, s->id, s->frames, s->depth);
	if (s->py_depth)
		write_pystack(s, w, gen);
	s->trace_gen = gen;
}

void lw_stacks_for_each(void (*fn)(struct lw_stack_entry *s, void *ctx),
			void *ctx)
{
	struct lw_stack_entry *s, *tmp;

	HASH_ITER(hh, stack_table, s, tmp) {
		for (struct lw_stack_entry *c = s; c; c = c->collision)
			fn(c, ctx);
	}
}

/*
 * The names a stack's Python frame had when the stack was written, or NULL:
 * from the code table, never from the code object, which may have died
 * since (a module's body, once imported) and its address been taken by
 * another (then its entry is newer than the stack).
 */
static const struct lw_code_entry *frame_code(const struct lw_stack_entry *s,
					      uintptr_t code)
{
	const void *key = (const void *)code;
	struct lw_code_entry *e;

	HASH_FIND(hh, code_table, &key, sizeof(key), e);
	return e && e->first_stack <= s->id ? e : NULL;
}

void lw_stacks_python_location(const struct lw_stack_entry *s, char *out,
			       size_t size)
{
	const uintptr_t *py = s->frames + s->depth;
	const struct lw_code_entry *pick = NULL, *innermost = NULL, *e;
	unsigned at = 0, innermost_at = 0;

	out[0] = '\0';
	/* The innermost frame of the user's own code, as the report's
	 * headline location (origins.h); else the innermost frame known. */
	for (unsigned i = 0; i < s->py_depth && !pick; i++) {
		if (!(e = frame_code(s, py[2 * i])))
			continue;
		if (lw_origins_code_origin(e->file) == LW_CODE_USER) {
			pick = e;
			at = i;
		} else if (!innermost) {
			innermost = e;
			innermost_at = i;
		}
	}
	if (!pick) {
		pick = innermost;
		at = innermost_at;
	}
	if (!pick)
		return;
	const char *base = strrchr(pick->file, '/');
	long line = (long)(py[2 * at + 1] >> 1) - 1;
	char cell[32] = "";

	/* A notebook cell by its name, as the report writes it. */
	if (lw_cell_name(pick->file, strlen(pick->file), cell, sizeof(cell)))
		base = NULL;
	snprintf(out, size, "%.64s (%.72s:%ld)", pick->name,
		 base ? base + 1 : cell[0] ? cell : pick->file, line);
}

/* Whether file (a code object's) names step_file: the same path, or a
 * path ending in "/" step_file. */
static int names_file(const char *file, const char *step_file)
{
	size_t n = strlen(file), m = strlen(step_file);

	if (n < m || strcmp(file + n - m, step_file) != 0)
		return 0;
	return n == m || file[n - m - 1] == '/' || step_file[0] == '/';
}

void lw_stacks_note_frames(struct lw_stack_entry *s, const char *step_file,
			   int step_line)
{
	const uintptr_t *py = s->frames + s->depth;
	const struct lw_code_entry *e;

	if (s->frames_noted)
		return;
	s->frames_noted = 1;
	s->user_count = 0;
	s->step_at = -1;
	/* Outermost first: the loop is looked for from the program's
	 * entry inwards. */
	for (unsigned i = s->py_depth; i-- > 0;) {
		if (!(e = frame_code(s, py[2 * i])))
			continue;
		if (step_file && s->step_at < 0 &&
		    (long)(py[2 * i + 1] >> 1) - 1 == step_line &&
		    names_file(e->file, step_file))
			s->step_at = (int16_t)i;
		/* By its path alone: the facts of the interpreter
		 * (origins.h) change under the GIL, which a hook may not
		 * hold. */
		if (s->user_count < LW_LOOP_LEVELS &&
		    lw_python_file_origin(e->file, strlen(e->file)) ==
			    LW_CODE_USER)
			s->user_at[s->user_count++] = (uint8_t)i;
	}
}

const char *lw_stacks_code_file(const struct lw_stack_entry *s,
				uintptr_t code)
{
	const struct lw_code_entry *e = frame_code(s, code);

	return e ? e->file : NULL;
}

const char *lw_stacks_code_name(const struct lw_stack_entry *s,
				uintptr_t code)
{
	const struct lw_code_entry *e = frame_code(s, code);

	return e ? e->name : NULL;
}

void lw_stacks_reset(void)
{
	struct lw_stack_entry *s, *stmp;
	struct lw_code_entry *c, *ctmp;
	struct lw_string_entry *str, *strtmp;

	HASH_ITER(hh, stack_table, s, stmp) {
		HASH_DEL(stack_table, s);
		while (s) {
			struct lw_stack_entry *next = s->collision;
			lw_arena_free(s);
			s = next;
		}
	}
	HASH_ITER(hh, code_table, c, ctmp) {
		HASH_DEL(code_table, c);
		lw_arena_free(c);
	}
	HASH_ITER(hh, string_table, str, strtmp) {
		HASH_DEL(string_table, str);
		lw_arena_free(str);
	}
	next_stack_id = 1;
	next_code_id = next_string_id = 1;
}

/* ---- the loop (stacks.h) ---- */

/* The user's frames of the thread's latest allocation, outermost first:
 * each thread's own, so that two threads running the loop do not take
 * each other's lines for iterations. */
struct path {
	unsigned n;
	uintptr_t code[LW_LOOP_LEVELS];
	int32_t line[LW_LOOP_LEVELS];
	uint64_t locals[LW_LOOP_LEVELS];
};

static __thread struct path last;
/* This thread runs the loop (its frame's return ends the loop). */
static __thread int runs_loop;

static struct {
	uintptr_t code;		/* 0: none yet */
	unsigned level;		/* among the user's frames, outermost 0 */
	int head;		/* the line its iterations go back to */
	int open;		/* its frame has not returned */
	/* The lines of the frames outside it when it was found: a loop
	 * in one of them that goes back to or above such a line encloses
	 * it (the requests around a request's tokens). */
	int32_t outer_line[LW_LOOP_LEVELS];
} loop = { .head = -1 };

static enum lw_loop_event begin(const struct path *p, unsigned level,
				enum lw_loop_event event)
{
	loop.code = p->code[level];
	loop.level = level;
	loop.head = p->line[level];
	loop.open = 1;
	for (unsigned i = 0; i < level; i++)
		loop.outer_line[i] = p->line[i];
	runs_loop = 1;
	return event;
}

/* The frame at level went back to p's line (or ran it again). */
static enum lw_loop_event went_back(const struct path *p, unsigned level)
{
	int to = p->line[level];

	if (!loop.code)
		return begin(p, level, LW_LOOP_NEW);
	if (loop.open && runs_loop && level == loop.level &&
	    p->code[level] == loop.code) {
		if (to == loop.head)
			return LW_LOOP_STEP;
		/* Further back than the iterations went so far: the loop
		 * that encloses the one taken for it, in the same
		 * function. Not as far: an inner loop, or lines skipped. */
		return to < loop.head ? begin(p, level, LW_LOOP_NEW)
				      : LW_LOOP_NONE;
	}
	if (loop.open && runs_loop && level > loop.level)
		return LW_LOOP_NONE; /* a loop inside the loop's iteration */
	/* In a frame outside the loop's: it encloses the loop's call when
	 * it goes back to the line the loop was called from, or above. */
	if (level < loop.level && to <= loop.outer_line[level])
		return begin(p, level, LW_LOOP_NEW);
	/* A loop after the loop's end (a second stage): its iterations are
	 * steps too. */
	if (!loop.open)
		return begin(p, level, LW_LOOP_NEXT);
	return LW_LOOP_NONE;
}

enum lw_loop_event lw_loop_note(const struct lw_stack_entry *s,
				const uint64_t *locals)
{
	const uintptr_t *py = s->frames + s->depth;
	enum lw_loop_event event = LW_LOOP_NONE, back = LW_LOOP_NONE;
	struct path p;
	unsigned common, d;

	if (!s->user_count)
		return LW_LOOP_NONE;
	p.n = s->user_count;
	for (unsigned i = 0; i < p.n; i++) {
		unsigned at = s->user_at[i];

		p.code[i] = py[2 * at];
		p.line[i] = (int32_t)(py[2 * at + 1] >> 1) - 1;
		p.locals[i] = locals[i];
	}
	common = p.n < last.n ? p.n : last.n;
	for (d = 0; d < common && p.code[d] == last.code[d] &&
		    p.line[d] == last.line[d] && p.locals[d] == last.locals[d];
	     d++)
		;
	/* The loop's frame is gone from the thread that ran it. */
	if (loop.open && runs_loop &&
	    (p.n <= loop.level || p.code[loop.level] != loop.code)) {
		loop.open = 0;
		runs_loop = 0;
		event = LW_LOOP_END;
	}
	/* Back to an earlier line, or the same line again with the loop's
	 * variables bound anew (a loop whose body is one call). */
	if (d < common && p.code[d] == last.code[d] &&
	    (p.line[d] < last.line[d] ||
	     (p.line[d] == last.line[d] && p.locals[d] != last.locals[d])))
		back = went_back(&p, d);
	last = p;
	return back != LW_LOOP_NONE ? back : event;
}

int lw_loop_line(void)
{
	return loop.head;
}

unsigned lw_loop_level(void)
{
	return loop.level;
}

int lw_loop_close(void)
{
	int was_open = loop.code && loop.open;

	loop.open = 0;
	return was_open;
}

void lw_loop_reset(void)
{
	loop.code = 0;
	loop.open = 0;
	loop.head = -1;
	last.n = 0;
	runs_loop = 0;
}
