/* SPDX-License-Identifier: MIT */
/*
 * The classifier (report/analyse/diagnose.c) on hand-made traces of one site
 * each, through the command's own reading and analysis: what each shape of
 * memory over the steps is called.
 *
 *     test-classify DIR
 */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "lw-test.h"
#include "trace-builder.h"
#include "trace-file.h"

#define STEPS 30
#define BASE 0x7f0000000000ull

enum shape {
	KEPT_SMALL,	/* a small block per step, never freed */
	KEPT_LARGE,	/* 64 MiB per step, never freed */
	FREED,		/* a block per step, freed within it */
	FILLS_AND_STOPS,	/* a block per step for 3 steps, then none */
};

static const char *dir;

static void build(struct out *o, enum shape shape)
{
	static const uint64_t frames[] = { 0x401100, 0x401200, 0x401300 };
	uint64_t size = shape == KEPT_LARGE ? 64 * MiB : 4096;

	std_header(o);
	rec_stack(o, 1, frames, 3);
	for (unsigned step = 0; step < STEPS; step++) {
		uint64_t addr = BASE + (uint64_t)step * 128 * MiB;

		if (shape != FILLS_AND_STOPS || step < 3)
			rec_alloc(o, LW_MEM_DEVICE, addr, size, 1);
		if (shape == FREED)
			rec_free(o, addr);
		rec_simple(o, LW_REC_STEP);
	}
	rec_end(o, 0);
}

/* The category the analysis gives the trace's one site of shape. */
static enum lw_category category_of(enum shape shape)
{
	struct out o = { 0 };
	struct lw_trace_file tf;
	char path[4096], message[256];
	enum lw_category c = LW_CATEGORY_COUNT;
	FILE *f;

	build(&o, shape);
	snprintf(path, sizeof(path), "%s/classify-%d.trace", dir, (int)shape);
	f = fopen(path, "wb");
	REQUIRE(f && fwrite(o.data, 1, o.len, f) == o.len);
	fclose(f);
	free(o.data);
	if (lw_trace_file_open(&tf, path, message, sizeof(message)) < 0 ||
	    lw_trace_file_set_rules(&tf, NULL) < 0 ||
	    lw_trace_file_analyse(&tf) < 0)
		lw_test_fail("shape %d: %s", (int)shape, message);
	else if (tf.analysis.diagnosis.site_count != 1)
		lw_test_fail("shape %d: %u sites", (int)shape,
			     tf.analysis.diagnosis.site_count);
	else
		c = tf.analysis.diagnosis.sites[0].category;
	lw_trace_file_close(&tf);
	remove(path);
	return c;
}

static void expect(enum shape shape, enum lw_category want)
{
	enum lw_category got = category_of(shape);

	if (got != want)
		lw_test_fail("shape %d: %s, expected %s", (int)shape,
			     got == LW_CATEGORY_COUNT ? "(none read)"
			     : lw_category_name(got) ? lw_category_name(got)
						     : "no category",
			     lw_category_name(want) ? lw_category_name(want)
						    : "no category");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test-classify DIR\n");
		return 2;
	}
	dir = argv[1];
	expect(KEPT_SMALL, LW_CATEGORY_RETAINED_LOSS);
	expect(KEPT_LARGE, LW_CATEGORY_GROWTH);
	expect(FREED, LW_CATEGORY_NONE);
	expect(FILLS_AND_STOPS, LW_CATEGORY_NONE);
	return lw_test_done("test-classify");
}
