/* SPDX-License-Identifier: MIT */
#include "timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "trace-reader.h"

struct reader {
	struct lw_timeline *t;
	uint64_t now_ns;
	uint64_t steps;
	uint64_t stride;	/* as the model's step series */
	size_t step_capacity;
	/* Indices into t->phases of the open phases, innermost last;
	 * SIZE_MAX for an open phase that was not kept. */
	size_t *open;
	size_t open_count, open_capacity;
	const struct lw_report *report;
	size_t dropped;		/* pages of the trace given back so far */
};

static int on_header(void *ctx, const struct lw_trace_header *h)
{
	struct reader *r = ctx;

	r->now_ns = r->t->start_ns = r->t->end_ns = h->start_time_ns;
	return 0;
}

static int on_time(void *ctx, uint64_t delta_ns)
{
	struct reader *r = ctx;

	r->now_ns += delta_ns;
	r->t->end_ns = r->now_ns;
	return 0;
}

/* Mirrors the model's add_step_point(), so that indices match. */
static int on_step(void *ctx)
{
	struct reader *r = ctx;
	struct lw_timeline *t = r->t;

	r->steps++;
	if (r->steps % r->stride != 0)
		return 0;
	if (t->step_count == LW_STEP_POINTS_MAX) {
		size_t half = t->step_count / 2;

		for (size_t i = 0; i < half; i++)
			t->step_ns[i] = t->step_ns[2 * i + 1];
		t->step_count = half;
		r->stride *= 2;
		if (r->steps % r->stride != 0)
			return 0;
	}
	if (t->step_count == r->step_capacity) {
		size_t next = r->step_capacity ? r->step_capacity * 2 : 256;
		uint64_t *p = realloc(t->step_ns, next * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->step_ns = p;
		r->step_capacity = next;
	}
	t->step_ns[t->step_count++] = r->now_ns;
	return 0;
}

static int on_phase_begin(void *ctx, uint64_t string_id)
{
	struct reader *r = ctx;
	struct lw_timeline *t = r->t;
	size_t index = SIZE_MAX;

	if (r->open_count == r->open_capacity) {
		size_t next = r->open_capacity ? r->open_capacity * 2 : 16;
		size_t *p = realloc(r->open, next * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->open = p;
		r->open_capacity = next;
	}
	if (t->phase_count < LW_TIMELINE_MAX_PHASES) {
		struct lw_phase_span *s;

		if (t->phase_count == 0) {
			t->phases = calloc(LW_TIMELINE_MAX_PHASES,
					   sizeof(*t->phases));
			if (!t->phases)
				return -ENOMEM;
		}
		index = t->phase_count++;
		s = &t->phases[index];
		s->name_string = string_id;
		s->begin_step = r->steps;
		s->begin_ns = r->now_ns;
		s->depth = (uint32_t)(r->open_count < UINT32_MAX
					      ? r->open_count : UINT32_MAX);
		s->open = true;
	} else {
		t->phases_dropped++;
	}
	r->open[r->open_count++] = index;
	return 0;
}

static int on_phase_end(void *ctx)
{
	struct reader *r = ctx;
	size_t index;

	if (r->open_count == 0)
		return 0; /* unbalanced: the model counts it */
	index = r->open[--r->open_count];
	if (index != SIZE_MAX) {
		struct lw_phase_span *s = &r->t->phases[index];

		s->end_step = r->steps;
		s->end_ns = r->now_ns;
		s->open = false;
	}
	return 0;
}

/* Like the model's read: the pages read are given back as it goes. */
static int on_progress(void *ctx, size_t offset, size_t total)
{
	struct reader *r = ctx;

	(void)total;
	if (r->report->data_mapped)
		lw_trace_release_read(r->report->data, &r->dropped, offset);
	return 0;
}

static const struct lw_trace_ops timeline_ops = {
	.header = on_header,
	.time = on_time,
	.step = on_step,
	.phase_begin = on_phase_begin,
	.phase_end = on_phase_end,
	.progress = on_progress,
};

int lw_timeline_read(const struct lw_report *report, struct lw_timeline *t)
{
	struct lw_trace_result result;
	struct reader r = { .t = t, .stride = 1, .report = report };
	int rc;

	memset(t, 0, sizeof(*t));
	if (!report->data)
		return 0;
	rc = lw_trace_read(report->data, report->len, &timeline_ops, &r,
			   &result);
	for (size_t i = 0; i < t->phase_count; i++) {
		if (t->phases[i].open) {
			t->phases[i].end_step = r.steps;
			t->phases[i].end_ns = t->end_ns;
		}
	}
	free(r.open);
	return rc;
}

void lw_timeline_fini(struct lw_timeline *t)
{
	free(t->step_ns);
	free(t->phases);
	memset(t, 0, sizeof(*t));
}
