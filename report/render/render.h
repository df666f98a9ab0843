/* SPDX-License-Identifier: MIT */
/*
 * The report renderers (text.c, json.c) and the output helpers they share.
 */
#ifndef LW_RENDER_H
#define LW_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lw-size.h"
#include "lw-text.h"
#include "model.h"
#include "symbolize.h"
#include "trace-reader.h"

struct lw_locations;
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

/* Text report. Returns 0 or a negative errno (-ENOMEM). */
int lw_render_text(FILE *out, const struct lw_report *report,
		   const struct lw_report_options *options);

/*
 * The JSON report's "schema_version": docs/report.schema.json describes it.
 * Fields are only added within a version; removing or renaming one, or
 * giving it another meaning, makes a new version.
 */
#define LW_JSON_SCHEMA_VERSION 1

/*
 * JSON report. A single trace is one object (nested false). Several are
 * wrapped: lw_json_begin_list(), lw_render_json(..., nested true, first)
 * for each, lw_json_end_list(). Returns 0 or a negative errno.
 */
int lw_render_json(FILE *out, const struct lw_report *report, bool nested,
		   bool first);
void lw_json_begin_list(FILE *out);
void lw_json_end_list(FILE *out);

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

/*
 * The growth section of the text report (also `leakwatch check`): the
 * location line of a site ("    at FUNCTION  FILE:LINE"), with a newline.
 * Returns 0 or -ENOMEM.
 */
int lw_put_site_location(FILE *out, const struct lw_report *report,
			 uint32_t site);

/* The summary's PyTorch allocator line(s), when PyTorch was loaded. */
void lw_put_torch_text(FILE *out, const struct lw_model *model);

/* The "at the out-of-memory error" section, when PyTorch's allocator ran
 * out; up to top sites per list (0: all). Returns 0 or -ENOMEM. */
int lw_put_oom_text(FILE *out, const struct lw_report *report, size_t top);

/* lw_format_size(), lw_format_rate(): lw-size.h. */

/*
 * Writes bytes from a trace for a terminal: valid UTF-8 as it is, control
 * characters and invalid bytes escaped (\n, \t, \xNN), so that a trace
 * cannot move the cursor or change colours.
 */
void lw_put_text(FILE *out, const void *data, size_t len);
void lw_put_text_str(FILE *out, const char *s);

/* Writes a JSON string literal; invalid UTF-8 becomes U+FFFD. */
void lw_put_json_string(FILE *out, const void *data, size_t len);

/*
 * What a format writes for one character of text from a trace: the code
 * point cp of the n bytes at s, or, when n is 0, the byte s[0], which
 * starts no UTF-8 sequence. Returns false to have the bytes written as
 * they are.
 */
typedef bool (*lw_escape_fn)(FILE *out, uint32_t cp, const uint8_t *s,
			     size_t n, const void *ctx);

/* Writes text through escape, one character at a time: the one walker
 * under every format's escaping (text, JSON, HTML, folded, GitHub). */
void lw_put_escaped(FILE *out, const void *text, size_t len,
		    lw_escape_fn escape, const void *ctx);

#endif
