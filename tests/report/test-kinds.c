/* SPDX-License-Identifier: MIT */
/*
 * Kinds told by what holds the memory, and what the report says of a
 * function's return, on hand-made traces of one growing site each with
 * the holders a search found (HOLDER records), through the command's own
 * reading and analysis. Without PyTorch: the holder's path and flags are
 * the evidence, never the blocks' size (each block here is as large as
 * any model's outputs).
 *
 *     test-kinds DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "findings.h"
#include "holders.h"
#include "lw-test.h"
#include "trace-builder.h"
#include "trace-file.h"

#define STEPS 30
#define SIZE (1024 * 1024)
#define BASE 0x7f0000000000ull

/* What happens to the site's blocks once the loop is over. */
enum after {
	KEPT,		/* all live at the program's end */
	LAST_FREED,	/* the last step's block freed, the others live */
	ALL_FREED,	/* all freed: the function that kept them returned */
};

struct holder {
	const char *path, *root;
	uint64_t flags;
};

struct story {
	const char *name;
	struct holder holders[2];	/* the second from a later search */
	enum after after;
};

static const char *dir;

static void rec_holder(struct out *o, uint64_t addr, uint64_t path,
		       uint64_t root, uint64_t flags)
{
	struct out p = { 0 };

	put_varint(&p, addr);
	put_varint(&p, path);
	put_varint(&p, root);
	put_varint(&p, 5);	/* objects found through it */
	put_varint(&p, flags & LW_HOLDER_GRAPH ? 3 : 0);
	put_varint(&p, flags);
	rec_ext(o, LW_REC_HOLDER, &p);
	free(p.data);
}

static void build(struct out *o, const struct story *s)
{
	static const uint64_t frames[] = { 0x401100, 0x401200, 0x401300 };
	uint64_t last = BASE + (uint64_t)(STEPS - 1) * 2 * SIZE;

	std_header(o);
	rec_stack(o, 1, frames, 3);
	for (unsigned step = 0; step < STEPS; step++) {
		rec_alloc(o, LW_MEM_DEVICE, BASE + (uint64_t)step * 2 * SIZE,
			  SIZE, 1);
		rec_simple(o, LW_REC_STEP);
	}
	for (unsigned i = 0; i < 2 && s->holders[i].path; i++) {
		rec_string(o, 10 + 2 * i, s->holders[i].path);
		rec_string(o, 11 + 2 * i, s->holders[i].root);
		rec_holder(o, BASE + 2 * SIZE, 10 + 2 * i, 11 + 2 * i,
			   s->holders[i].flags);
		/* An event between two searches: they are two. */
		rec_alloc(o, LW_MEM_DEVICE, last + 64 * SIZE + i * SIZE, 512, 1);
		rec_free(o, last + 64 * SIZE + i * SIZE);
	}
	if (s->after == LAST_FREED)
		rec_free(o, last);
	for (unsigned step = 0; s->after == ALL_FREED && step < STEPS; step++)
		rec_free(o, BASE + (uint64_t)step * 2 * SIZE);
	rec_mark(o, LW_MARK_PROGRAM_END);
	rec_end(o, 0);
}

/* Runs the story: its one finding's kind, evidence and first holder's
 * fix, into the buffers given. */
static int analyse(const struct story *s, enum lw_category *category,
		   char *evidence, size_t evidence_size, char *fix,
		   size_t fix_size)
{
	struct out o = { 0 };
	struct lw_trace_file tf;
	char path[4096], message[256];
	const struct lw_diagnosis *d;
	struct lw_held_by held;
	char *text = NULL;
	int rc = -1;
	FILE *f;

	build(&o, s);
	snprintf(path, sizeof(path), "%s/kinds-%s.trace", dir, s->name);
	f = fopen(path, "wb");
	REQUIRE(f && fwrite(o.data, 1, o.len, f) == o.len);
	fclose(f);
	free(o.data);
	if (lw_trace_file_open(&tf, path, message, sizeof(message)) < 0 ||
	    lw_trace_file_set_rules(&tf, NULL) < 0 ||
	    lw_trace_file_analyse(&tf) < 0) {
		lw_test_fail("%s: %s", s->name, message);
		goto out;
	}
	d = &tf.analysis.diagnosis;
	if (d->finding_count != 1) {
		lw_test_fail("%s: %zu findings", s->name, d->finding_count);
		goto out;
	}
	*category = d->findings[0].category;
	if (lw_evidence_string(&tf.report, &d->findings[0], &text) < 0 ||
	    lw_held_by(&tf.report, d->findings[0].site, &held) < 0 ||
	    held.count == 0) {
		lw_test_fail("%s: no evidence, or no holder", s->name);
		goto out;
	}
	snprintf(evidence, evidence_size, "%s", text);
	snprintf(fix, fix_size, "%s", held.items[0].fix);
	rc = 0;
out:
	free(text);
	lw_trace_file_close(&tf);
	remove(path);
	return rc;
}

/* The story must get kind want, its evidence say every word of says and
 * none of never, its holder's fix say fix_says. */
static void expect(const struct story *s, enum lw_category want,
		   const char *const *says, const char *never,
		   const char *fix_says)
{
	enum lw_category got;
	char evidence[2048], fix[1024];

	if (analyse(s, &got, evidence, sizeof(evidence), fix, sizeof(fix)))
		return;
	if (got != want)
		lw_test_fail("%s: %s, expected %s", s->name,
			     lw_category_name(got) ? lw_category_name(got)
						   : "no category",
			     lw_category_name(want));
	for (; says && *says; says++)
		if (!strstr(evidence, *says))
			lw_test_fail("%s: the evidence does not say \"%s\": %s",
				     s->name, *says, evidence);
	if (never && strstr(evidence, never))
		lw_test_fail("%s: the evidence says \"%s\": %s", s->name, never,
			     evidence);
	if (fix_says && !strstr(fix, fix_says))
		lw_test_fail("%s: the holder's fix does not say \"%s\": %s",
			     s->name, fix_says, fix);
}

#define TORCH LW_HOLDER_TORCH

int main(int argc, char **argv)
{
	static const struct story traceback = {
		"traceback",
		{ { "reports[3][2].tb_next.tb_frame.f_locals['optimizer']",
		    "local of serve (s.py:10)", TORCH } },
		KEPT,
	};
	static const struct story keyed = {
		"keyed", { { "cache['req-3']", "global of service", TORCH } },
		KEPT,
	};
	static const struct story lru = {
		"lru",
		{ { "embed (an lru_cache: 30 entries)[3]", "global of service",
		    TORCH } },
		KEPT,
	};
	static const struct story listed = {
		"listed", { { "outputs[3]", "local of run (s.py:3)", TORCH } },
		KEPT,
	};
	static const struct story graph = {
		"graph",
		{ { "outputs[3].grad_fn (AddmmBackward0) \u2192 saved tensor of AddmmBackward0",
		    "local of run (s.py:3)", TORCH | LW_HOLDER_GRAPH } },
		KEPT,
	};
	static const struct story metric = {
		"metric",
		{ { "metric.preds[3]", "local of evaluate (s.py:7)",
		    TORCH | LW_HOLDER_METRIC_STATE } },
		KEPT,
	};
	static const struct story named = {
		"named", { { "history['loss'][3]", "local of run (s.py:3)",
			     TORCH } },
		KEPT,
	};
	static const struct story returned = {
		"returned", { { "history[3]", "local of run (s.py:3)", TORCH } },
		ALL_FREED,
	};
	static const struct story survived = {
		"survived", { { "history[3]", "local of run (s.py:3)", TORCH } },
		LAST_FREED,
	};
	static const struct story kept_after = {
		"kept-after",
		{ { "cache[3]", "local of run (s.py:3)", TORCH },
		  { "service.cache[3]", "global of __main__", TORCH } },
		LAST_FREED,
	};
	static const char *const released[] = { "when `run` returned", NULL };
	static const char *const still[] = {
		"still held after `run` returned", NULL };
	static const char *const still_by[] = {
		"still held after `run` returned (by `service.cache[3]`, global of __main__)",
		NULL };

	if (argc != 2) {
		fprintf(stderr, "usage: test-kinds DIR\n");
		return 2;
	}
	dir = argv[1];
	/* Through a traceback, whatever else the path holds. */
	expect(&traceback, LW_CATEGORY_KEPT_EXCEPTION, NULL, NULL,
	       "traceback.format_exc()");
	/* A dict keyed by strings, an lru_cache: caches with no bound. */
	expect(&keyed, LW_CATEGORY_UNBOUNDED_CACHE, NULL, NULL,
	       "cache.popitem(last=False)");
	expect(&lru, LW_CATEGORY_UNBOUNDED_CACHE, NULL, NULL,
	       "call `embed.cache_clear()`");
	/* A list of tensors with no graph behind them: kept results, told
	 * to keep host copies; with a graph, a retained graph. */
	expect(&listed, LW_CATEGORY_KEPT_OUTPUTS, NULL, NULL, "`.cpu()`");
	expect(&graph, LW_CATEGORY_RETAINED_GRAPH, NULL, NULL,
	       "keep numbers, not graphs, in `outputs`");
	/* A state a metric declared: computed and reset. */
	expect(&metric, LW_CATEGORY_METRIC_STATE, NULL, NULL,
	       "(`metric.compute()`, then `metric.reset()`)");
	/* A list kept under a name in a dict is no cache. */
	expect(&named, LW_CATEGORY_KEPT_OUTPUTS, NULL, NULL,
	       "drain `history['loss']`");
	/* Released when run returned only where its return let go of it. */
	expect(&returned, LW_CATEGORY_KEPT_OUTPUTS, released, "still held",
	       NULL);
	expect(&survived, LW_CATEGORY_KEPT_OUTPUTS, still, "when `run`",
	       NULL);
	expect(&kept_after, LW_CATEGORY_KEPT_OUTPUTS, still_by, "when `run`",
	       NULL);
	return lw_test_done("test-kinds");
}
