/* SPDX-License-Identifier: MIT */
/*
 * One trace read: its model, its symbols and what the analysis made of it,
 * as the analysis and every view are given it; and the line each of its
 * sites leads with (location.c).
 */
#ifndef LW_REPORT_H
#define LW_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "symbolize.h"
#include "trace-reader.h"

struct lw_locations;
struct lw_report_options;
struct lw_user_code;
struct lw_code_dirs;

/* Everything known about one trace that was read. */
struct lw_report {
	const char *path;	/* as the user named it */
	const struct lw_model *model;
	const struct lw_trace_result *result;
	struct lw_symbolizer *symbolizer;
	uint64_t min_steps;	/* growth verdicts need this many steps */
	/* Diagnosis rules and suppressions (rules.h); NULL: none. */
	const struct lw_rules *rules;
	/* The trace's bytes, for a format that reads it again (timeline.h);
	 * NULL when not at hand. */
	const uint8_t *data;
	size_t len;
	/* data is a private read-only mapping of the trace file: a pass over
	 * it may give back the pages it has read (lw_trace_release_read). */
	bool data_mapped;
	/* Every native frame of a Python stack, the interpreter's too
	 * (--native); otherwise those are folded (pystack.h). */
	bool native;
	/* Whose code a Python frame is (usercode.h); NULL: by its path. */
	struct lw_user_code *code;
	/* The sites' locations (locations.h), found once for every view. */
	struct lw_locations *locations;
	/* Growth and diagnosis (analysis.h), made once for every view;
	 * NULL until lw_analyse() ran. */
	const struct lw_analysis *analysis;
	/* The parts of the analysis's result the format prints
	 * (LW_RESULT_* of result.h, the renderer's needs); 0: none. */
	unsigned needs;
	/* How much of it the format shows (--top, --frames, --sites);
	 * NULL: the defaults. */
	const struct lw_report_options *options;
};

struct lw_rules;

struct lw_report_options {
	size_t top;	/* sites shown in text; 0: all */
	size_t frames;	/* frames per site in text; 0: all */
	size_t min_steps;	/* growth verdicts; 0: the default */
	const struct lw_rules *rules;	/* diagnosis; NULL: none */
	bool native;	/* --native: no frame folded */
	bool sites;	/* --sites: each site of a location too */
	/* --user-code and LEAKWATCH_USER_CODE; NULL: none named. */
	const struct lw_code_dirs *user_code;
};

#define LW_DEFAULT_TOP 10
#define LW_DEFAULT_FRAMES 12

/*
 * The frame a site's report leads with, chosen from its stack (frames,
 * from lw_model_stack()): the innermost Python frame of the user's own code
 * (usercode.h), else the innermost Python frame, else the innermost native
 * frame in a module that is not CUDA's (origin.h), else the innermost
 * frame. A native frame that holds inlined calls stands for the innermost
 * of them, symbol->frames[0].
 */
struct lw_location {
	const struct lw_frame *frame;	/* in frames; NULL: there are none */
	const struct lw_symbol *symbol;	/* a native frame's, from the
					 * report's symbolizer; else NULL */
	/* Made on PyTorch's autograd engine thread, whose Python frames are
	 * those of the call to backward() (the shim's backward.c): */
	bool in_backward;
	char autograd_node[64];		/* "MmBackward0"; "" if not shown */
};

/* Returns 0 or -ENOMEM (from the symbolizer). */
int lw_find_location(const struct lw_report *report,
		     const struct lw_frame *frames, size_t count,
		     struct lw_location *out);

/* A site's stack and its location, which points into its frames. */
struct lw_site_stack {
	struct lw_frame *frames;	/* innermost first; malloc'ed */
	size_t count;
	struct lw_location location;	/* frame NULL when count is 0 */
};

/*
 * The stack and location of site, every view's way to a site's line.
 * Returns 0 or a negative errno; call lw_site_stack_fini() either way.
 */
int lw_site_stack(const struct lw_report *report, uint32_t site,
		  struct lw_site_stack *out);
void lw_site_stack_fini(struct lw_site_stack *stack);

#endif
