/* SPDX-License-Identifier: MIT */
/*
 * The report formats beyond text and JSON, each in its own file, behind one
 * interface: begin (once, with the number of traces), report (each trace,
 * index from 0), end (once; begin and end may be NULL). Each returns 0 or
 * a negative errno.
 */
#ifndef LW_FORMATS_H
#define LW_FORMATS_H

#include <stddef.h>
#include <stdio.h>

#include "render.h"

struct lw_renderer {
	int (*begin)(FILE *out, size_t count);
	int (*report)(FILE *out, const struct lw_report *report,
		      const struct lw_report_options *options, size_t index);
	int (*end)(FILE *out);
};

extern const struct lw_renderer lw_html_renderer;
extern const struct lw_renderer lw_perfetto_renderer;
extern const struct lw_renderer lw_folded_renderer;
extern const struct lw_renderer lw_github_renderer;

/*
 * Writes a JSON string literal safe inside an HTML <script> element: as
 * lw_put_json_string(), and '<', '>', '&', U+2028 and U+2029 as \uXXXX.
 */
void lw_put_script_json_string(FILE *out, const void *data, size_t len);

#endif
