/* SPDX-License-Identifier: MIT */
/*
 * When things happened: the time of each step point of the model's step
 * series, and the phases with the steps and times they span. Read in a
 * second pass over the trace, for the formats that draw time (html,
 * perfetto); bounded like the step series.
 */
#ifndef LW_TIMELINE_H
#define LW_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "render.h"

/* Phase spans kept; later ones are counted in phases_dropped. */
#define LW_TIMELINE_MAX_PHASES 4096

struct lw_phase_span {
	uint64_t name_string;	/* STRING id */
	uint64_t begin_step, end_step;	/* STEP records before each */
	uint64_t begin_ns, end_ns;	/* wall clock, ns since the epoch */
	uint32_t depth;		/* 0: outermost */
	bool open;		/* never ended: end_* is the trace's end */
};

struct lw_timeline {
	uint64_t start_ns;	/* the trace header's start time */
	uint64_t end_ns;	/* the last time the trace records */
	/* Indexed like the model's step_points. */
	uint64_t *step_ns;
	size_t step_count;
	struct lw_phase_span *phases;
	size_t phase_count;
	uint64_t phases_dropped;
};

/*
 * Reads the timeline of the report's trace (report->data). Returns 0 or a
 * negative errno; call lw_timeline_fini() either way.
 */
int lw_timeline_read(const struct lw_report *report, struct lw_timeline *out);
void lw_timeline_fini(struct lw_timeline *timeline);

#endif
