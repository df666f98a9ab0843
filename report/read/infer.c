/* SPDX-License-Identifier: MIT */
/*
 * Step inference. One pass over the ALLOC records numbers them; for each
 * stack it keeps the gap (in allocations) between its consecutive uses, how
 * often a gap equals the one before (regularity) and the gap most of its
 * gaps have (a majority vote). In a loop every stack used once per
 * iteration has the same usual gap: the iteration's length. Each gap value
 * is scored by the allocations of the regular stacks that have it; the
 * best covers the loop, and of its stacks the one used first starts each
 * iteration. An evaluation pass every few steps only lengthens some gaps;
 * setup code, used once, has none. A pattern must span at least half of
 * the trace's allocations, and its stacks make at least half of those it
 * spans; and an iteration makes at least two allocations: a burst from one
 * line in a loop of its own (a list of parameters) is not the training
 * loop.
 *
 * A stack with Python frames counts as its frames of the user's code (by
 * their paths, lw-origin.h) and their lines: a library's layers, stacks
 * that differ only in its frames and native ones under one line of the
 * loop, are that line's allocations, never an iteration each; and a line
 * reached through several stacks does not start iterations (its stacks
 * are not one).
 *
 * Memory: a few words per stack, code object and string, never per event.
 */
#include "infer.h"

#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lw-addr-table.h"
#include "lw-format.h"
#include "lw-hash.h"
#include "lw-origin.h"
#include "trace-reader.h"

/* Share of a stack's consecutive gaps that must be alike. */
#define REGULAR_NUM 3
#define REGULAR_DEN 5

struct stack_pattern {
	uint64_t count;
	uint64_t first;		/* allocation number of its first use */
	uint64_t last;
	uint64_t gap;		/* the latest gap */
	uint64_t alike;		/* gaps equal to the one before */
	uint64_t vote_gap;	/* majority vote over its gaps */
	uint64_t votes;
};

struct infer_state {
	int (*progress)(void *progress_ctx, size_t offset, size_t total);
	void *progress_ctx;
	struct stack_pattern *stacks;
	size_t stack_count;	/* ids [0, stack_count) */
	size_t stack_capacity;
	uint64_t allocations;
	bool has_steps;
	uint64_t steps, void_steps;
	/* Per stack id: the stack whose pattern its allocations count in
	 * (its line's first; 0: its own), and per stack how many stacks
	 * count in its pattern. */
	uint64_t *counts_in;
	uint32_t *members;
	/* The string ids of the user's code's files; per code id, its
	 * file's string id. */
	struct lw_addr_table user_files, code_files;
	/* The frames of the user's code (a hash of their code ids and
	 * lines, and their count) -> the first stack with them: open
	 * addressing, a power of two, at most half full. */
	struct line_slot {
		uint64_t code, line, stack; /* stack 0: free */
	} *lines;
	size_t line_capacity, line_count;
};

/* Ids of strings and code objects: sparse in a trace as it may be, so
 * kept by key, never as an index. */
struct id_value {
	uint64_t id;
	uint64_t value;
	unsigned char used;
};

static const struct lw_addr_table_kind id_value_kind = {
	.slot_size = sizeof(struct id_value),
	.used_offset = offsetof(struct id_value, used),
	.alloc = malloc,
	.release = free,
	.max_load = 128,
};

static int put_id(struct lw_addr_table *t, uint64_t id, uint64_t value)
{
	bool found;
	struct id_value *v = lw_addr_table_put(t, &id_value_kind, id, &found);

	if (!v)
		return -ENOMEM;
	v->value = value;
	return 0;
}

static int infer_string(void *ctx, uint64_t id, struct lw_bytes text)
{
	struct infer_state *st = ctx;

	if (lw_python_file_origin(text.data, text.len) != LW_CODE_USER)
		return 0;
	return put_id(&st->user_files, id, 1);
}

static int infer_pycode(void *ctx, uint64_t id, uint64_t file_string,
			uint64_t name_string, uint64_t first_line)
{
	struct infer_state *st = ctx;

	(void)name_string;
	(void)first_line;
	return put_id(&st->code_files, id, file_string);
}

static bool user_code(const struct infer_state *st, uint64_t code)
{
	const struct id_value *c =
		lw_addr_table_find(&st->code_files, &id_value_kind, code);

	return c && c->value &&
	       lw_addr_table_find(&st->user_files, &id_value_kind, c->value);
}

/* The first stack seen with the same frames of the user's code (their
 * hash, and how many), stack if none was. */
static int line_stack(struct infer_state *st, uint64_t code, uint64_t line,
		      uint64_t stack, uint64_t *first)
{
	if (2 * (st->line_count + 1) > st->line_capacity) {
		size_t capacity = st->line_capacity ? 2 * st->line_capacity
						    : 256;
		struct line_slot *slots = calloc(capacity, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (size_t i = 0; i < st->line_capacity; i++) {
			struct line_slot *o = &st->lines[i];
			size_t j = (size_t)lw_hash_mix(o->code * 31 + o->line) &
				   (capacity - 1);

			if (!o->stack)
				continue;
			while (slots[j].stack)
				j = (j + 1) & (capacity - 1);
			slots[j] = *o;
		}
		free(st->lines);
		st->lines = slots;
		st->line_capacity = capacity;
	}
	size_t j = (size_t)lw_hash_mix(code * 31 + line) &
		   (st->line_capacity - 1);

	for (; st->lines[j].stack; j = (j + 1) & (st->line_capacity - 1)) {
		if (st->lines[j].code == code && st->lines[j].line == line) {
			*first = st->lines[j].stack;
			return 0;
		}
	}
	st->lines[j] = (struct line_slot){ code, line, stack };
	st->line_count++;
	*first = stack;
	return 0;
}

static int infer_pystack(void *ctx, uint64_t stack_id,
			 const struct lw_trace_pyframe *frames, uint32_t count,
			 const uint32_t *evals, uint32_t eval_count)
{
	struct infer_state *st = ctx;
	uint64_t first;
	int rc;

	(void)evals;
	(void)eval_count;
	if (stack_id >= st->stack_count || st->has_steps)
		return 0;
	uint64_t chain = LW_HASH_GOLDEN;
	uint32_t user = 0;

	for (uint32_t i = 0; i < count; i++) {
		if (!user_code(st, frames[i].code_id))
			continue;
		chain = lw_hash_mix(chain ^ frames[i].code_id);
		chain = lw_hash_mix(chain ^ (uint64_t)frames[i].line);
		user++;
	}
	if (!user)
		return 0;
	rc = line_stack(st, chain, user, stack_id, &first);
	if (rc < 0)
		return rc;
	if (first != stack_id) {
		st->counts_in[stack_id] = first;
		st->members[first]++;
	}
	return 0;
}

static int infer_stack(void *ctx, uint64_t id, const uint64_t *frames,
		       uint32_t count)
{
	struct infer_state *st = ctx;
	struct stack_pattern *p;

	(void)frames;
	(void)count;
	if (id < st->stack_count)
		return 0;
	if (id >= SIZE_MAX / (2 * sizeof(*p)) - 1)
		return -ENOMEM;
	/* Grown by half again at least: one STACK record after another must
	 * not copy the array each time. */
	if (id >= st->stack_capacity) {
		size_t capacity = st->stack_capacity + st->stack_capacity / 2;

		if (capacity < (size_t)id + 1)
			capacity = (size_t)id + 1;
		if (capacity < 64)
			capacity = 64;
		p = realloc(st->stacks, capacity * sizeof(*p));
		if (!p)
			return -ENOMEM;
		st->stacks = p;
		uint64_t *in = realloc(st->counts_in, capacity * sizeof(*in));
		if (!in)
			return -ENOMEM;
		st->counts_in = in;
		uint32_t *members = realloc(st->members,
					    capacity * sizeof(*members));
		if (!members)
			return -ENOMEM;
		st->members = members;
		st->stack_capacity = capacity;
	}
	for (size_t i = st->stack_count; i <= id; i++) {
		st->counts_in[i] = 0;
		st->members[i] = 1;
	}
	memset(st->stacks + st->stack_count, 0,
	       ((size_t)id + 1 - st->stack_count) * sizeof(*p));
	st->stack_count = (size_t)id + 1;
	return 0;
}

static int infer_alloc(void *ctx, unsigned kind, uint64_t addr, uint64_t size,
		       uint64_t stack_id)
{
	struct infer_state *st = ctx;
	struct stack_pattern *p;
	uint64_t n = st->allocations++, gap;

	if (st->has_steps)
		return 0;
	(void)kind;
	(void)addr;
	(void)size;
	if (stack_id == 0 || stack_id >= st->stack_count)
		return 0;
	if (st->counts_in[stack_id])
		stack_id = st->counts_in[stack_id];
	p = &st->stacks[stack_id];
	if (p->count++ == 0) {
		p->first = p->last = n;
		return 0;
	}
	gap = n - p->last;
	p->last = n;
	if (p->count > 2 && gap == p->gap)
		p->alike++;
	p->gap = gap;
	if (p->votes == 0) {
		p->vote_gap = gap;
		p->votes = 1;
	} else if (gap == p->vote_gap) {
		p->votes++;
	} else {
		p->votes--;
	}
	return 0;
}

static int infer_step(void *ctx)
{
	struct infer_state *st = ctx;

	/* The trace says where its steps are; read on only while some may
	 * still be void (the shim's first steps: at most
	 * LW_STEPS_VOID_MAX of them). */
	st->has_steps = true;
	return ++st->steps > LW_STEPS_VOID_MAX ? -ECANCELED : 0;
}

static bool info_is(struct lw_bytes key, const char *name)
{
	return key.len == strlen(name) && memcmp(key.data, name, key.len) == 0;
}

static int infer_info(void *ctx, struct lw_bytes key, struct lw_bytes value)
{
	struct infer_state *st = ctx;

	if (info_is(key, "steps_settled"))
		return st->has_steps ? -ECANCELED : 0;
	if (info_is(key, "steps_void")) {
		uint64_t n = 0;

		for (size_t i = 0; i < value.len; i++) {
			if (value.data[i] < '0' || value.data[i] > '9' ||
			    n > LW_STEPS_VOID_MAX)
				return 0; /* not the shim's: ignored */
			n = n * 10 + (uint64_t)(value.data[i] - '0');
		}
		st->void_steps = n;
	}
	return 0;
}

static int infer_progress(void *ctx, size_t offset, size_t total)
{
	struct infer_state *st = ctx;

	return st->progress ? st->progress(st->progress_ctx, offset, total)
			    : 0;
}

static const struct lw_trace_ops infer_ops = {
	.alloc = infer_alloc,
	.step = infer_step,
	.info = infer_info,
	.stack = infer_stack,
	.string = infer_string,
	.pycode = infer_pycode,
	.pystack = infer_pystack,
	.progress = infer_progress,
};

static bool regular(const struct stack_pattern *p)
{
	return p->count >= LW_INFER_MIN_REPEATS && p->votes > 0 &&
	       p->vote_gap >= 2 &&
	       p->alike * REGULAR_DEN >= (p->count - 2) * REGULAR_NUM;
}

static int compare_gap(const void *a, const void *b)
{
	const struct stack_pattern *x = *(const struct stack_pattern *const *)a;
	const struct stack_pattern *y = *(const struct stack_pattern *const *)b;

	if (x->vote_gap != y->vote_gap)
		return x->vote_gap < y->vote_gap ? -1 : 1;
	return (x->first > y->first) - (x->first < y->first);
}

int lw_infer_steps(const uint8_t *buf, size_t len,
		   int (*progress)(void *progress_ctx, size_t offset,
				   size_t total),
		   void *progress_ctx, struct lw_inferred_steps *out)
{
	struct infer_state st = { 0 };
	struct lw_trace_result result;
	const struct stack_pattern **regulars = NULL;
	const struct stack_pattern *best_anchor = NULL;
	size_t n = 0;
	uint64_t best_cover = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	st.progress = progress;
	st.progress_ctx = progress_ctx;
	rc = lw_trace_read(buf, len, &infer_ops, &st, &result);
	if (st.has_steps) {
		out->void_steps = st.void_steps;
		rc = 0;
		goto out;
	}
	if (rc < 0)
		goto out;
	if (st.stack_count) {
		regulars = malloc(st.stack_count * sizeof(*regulars));
		if (!regulars) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 1; i < st.stack_count; i++) {
		if (regular(&st.stacks[i]))
			regulars[n++] = &st.stacks[i];
	}
	if (n > 1)
		qsort(regulars, n, sizeof(*regulars), compare_gap);
	/* Runs of one gap value, earliest first use first in each; the
	 * iterations start at the first of a run that is one stack's. */
	for (size_t i = 0; i < n;) {
		uint64_t cover = 0;
		size_t j = i;
		const struct stack_pattern *a = regulars[i], *anchor = NULL;
		uint64_t span = a->last - a->first + 1;

		for (; j < n && regulars[j]->vote_gap == a->vote_gap; j++) {
			cover += regulars[j]->count;
			if (!anchor && st.members[regulars[j] - st.stacks] == 1)
				anchor = regulars[j];
		}
		/* A loop is most of the run, and most of what it spans is
		 * its own: not a burst of allocations from one line. */
		if (anchor && span * 2 >= st.allocations && cover * 2 >= span &&
		    cover > best_cover) {
			best_cover = cover;
			best_anchor = anchor;
		}
		i = j;
	}
	if (best_cover) {
		out->anchor = (uint64_t)(best_anchor - st.stacks);
		out->period = best_anchor->vote_gap;
		out->repeats = best_anchor->count;
	}
out:
	free(regulars);
	free(st.stacks);
	free(st.counts_in);
	free(st.members);
	lw_addr_table_clear(&st.user_files, &id_value_kind);
	lw_addr_table_clear(&st.code_files, &id_value_kind);
	free(st.lines);
	return rc;
}
