/* SPDX-License-Identifier: MIT */
/* Where a trace's steps come from, in words (render.h). */
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "render.h"

void lw_render_step_source(const struct lw_model *m, bool brief, char *out,
			   size_t size)
{
	const char *source = lw_model_step_source(m);
	char file[512], function[256];
	const char *base;
	long line;

	if (lw_model_step_loop(m, file, sizeof(file), &line, function,
			       sizeof(function))) {
		base = strrchr(file, '/');
		base = base ? base + 1 : file;
		if (strcmp(source, "loop") == 0)
			snprintf(out, size, "inferred from the loop at %s:%ld, in %s",
				 base, line, function[0] ? function : "?");
		else
			snprintf(out, size, "marked each time %s:%ld was reached (LEAKWATCH_STEP_AT), in %s",
				 base, line, function[0] ? function : "?");
	} else if (strcmp(source, "inferred") == 0) {
		snprintf(out, size, "inferred from the loop's repeating allocations");
	} else if (strcmp(source, "optimizer") == 0) {
		snprintf(out, size, "marked by optimizer steps");
	} else if (strcmp(source, "none") == 0 && brief) {
		snprintf(out, size, "none marked, no loop found");
	} else if (strcmp(source, "none") == 0) {
		snprintf(out, size, "none marked, and no repeating loop found: "
			 "mark one with leakwatch.step() in the loop, or run "
			 "with LEAKWATCH_STEP_AT=FILE:LINE");
	} else {
		snprintf(out, size, "marked by the program");
	}
}
