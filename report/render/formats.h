/* SPDX-License-Identifier: MIT */
/*
 * The report formats, each in its own file, behind one interface and one
 * table (formats.c): adding a format is its file and a line of
 * LW_FORMATS.
 */
#ifndef LW_FORMATS_H
#define LW_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "lw-report-config.h"
#include "render.h"

/* One run of a format over the traces of a command. */
struct lw_render_run {
	FILE *out;
	const char *const *paths;
	size_t count;
	const struct lw_report_options *options;
	/* JSON: wrap even a single report in a list. */
	bool list;
	/* The reports written so far (a trace that cannot be read has
	 * none). */
	size_t written;
	/* The format's own, state_size bytes, zeroed before begin. */
	void *state;
};

/*
 * begin (once), report (each trace that could be read, with its index
 * among paths), end (once, even when a report failed); begin and end may
 * be NULL. Each returns 0 or a negative errno.
 */
struct lw_renderer {
	const char *name;
	size_t state_size;
	/* The parts of the analysis's result it prints (LW_RESULT_*,
	 * result.h): made for it before it runs. */
	unsigned needs;
	int (*begin)(struct lw_render_run *run);
	int (*report)(struct lw_render_run *run, const struct lw_report *report,
		      size_t index);
	int (*end)(struct lw_render_run *run);
	/* Several traces end with their merged view (what they have in
	 * common), which the command writes after end. */
	bool merged_view;
};

/* The formats: X(name) for each, in the order --help gives them (the
 * list is report/meson.build's report_formats). */
#define LW_FORMATS(X) LW_FORMAT_LIST(X)

#define LW_DECLARE_RENDERER(name) extern const struct lw_renderer lw_##name##_renderer;
LW_FORMATS(LW_DECLARE_RENDERER)
#undef LW_DECLARE_RENDERER

/* The format called name, or NULL. */
const struct lw_renderer *lw_renderer_named(const char *name);

/* The formats' names, "text, json, ... or github", for messages. */
const char *lw_renderer_names(void);

/*
 * Writes a JSON string literal safe inside an HTML <script> element: as
 * lw_put_json_string(), and '<', '>', '&', U+2028 and U+2029 as \uXXXX.
 */
void lw_put_script_json_string(FILE *out, const void *data, size_t len);

#endif
