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
#include "report.h"

/*
 * Where the trace's steps come from, in words for every view ("inferred
 * from the loop at serve.py:31, in serve", "marked by optimizer steps",
 * and for none, how to mark them, unless brief: a line among others);
 * no parentheses.
 */
void lw_render_step_source(const struct lw_model *model, bool brief,
			   char *out, size_t size);

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
 * The growth section of the text report: the location line of a site
 * ("    at FUNCTION  FILE:LINE"), with a newline, as the analysis's result
 * located it. Returns 0, or -EINVAL where the result did not locate it.
 */
int lw_put_site_location(FILE *out, const struct lw_report *report,
			 uint32_t site);

/* The same line of a site's stack (`leakwatch check`, which locates its
 * sites itself). */
void lw_put_stack_location(FILE *out, const struct lw_model *model,
			   const struct lw_site_stack *stack);

/* The summary's PyTorch allocator line(s), when PyTorch was loaded. */
void lw_put_torch_text(FILE *out, const struct lw_model *model);

/* The "at the out-of-memory error" section, when PyTorch's allocator ran
 * out; up to top sites per list (0: all). Returns 0 or -ENOMEM. */
int lw_put_oom_text(FILE *out, const struct lw_report *report, size_t top);

/* The text report's section on PyTorch's pool: its verdict (the finding
 * of LW_CATEGORY_CACHE_GROWTH, no leak) and the memory account, overall
 * and by step. Nothing unless the pool's segments are in the trace.
 * Returns 0 or -ENOMEM. */
int lw_put_pool_text(FILE *out, const struct lw_report *report);

/*
 * The step point on row k of a table of at most rows rows over n step
 * points: evenly spaced, the last step always on the last row (the memory
 * account's rows, in the text report and the page).
 */
static inline size_t lw_account_row(size_t k, size_t n, size_t rows)
{
	return n <= rows ? k : k == rows - 1 ? n - 1 : k * (n - 1) / (rows - 1);
}

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
