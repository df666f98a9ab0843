/* SPDX-License-Identifier: MIT */
/*
 * A site's location: the one frame of its stack a report leads with, the
 * line a user would go and fix.
 */
#include "lw-origin.h"
#include "render.h"

static bool is_user_code(const struct lw_model *m,
			 const struct lw_trace_pyframe *frame)
{
	struct lw_bytes function, file;

	lw_model_pyframe_names(m, frame, &function, &file);
	/* Code whose file is unknown cannot be told to be the user's. */
	return file.data &&
	       lw_python_file_origin(file.data, file.len) == LW_CODE_USER;
}

int lw_find_location(const struct lw_report *r, const struct lw_frame *frames,
		     size_t count, struct lw_location *out)
{
	const struct lw_frame *python = NULL;
	int rc;

	out->frame = NULL;
	out->symbol = NULL;
	for (size_t i = 0; i < count; i++) {
		if (!frames[i].python)
			continue;
		if (is_user_code(r->model, frames[i].py)) {
			out->frame = &frames[i];
			return 0;
		}
		if (!python)
			python = &frames[i];
	}
	if (python) {
		out->frame = python;
		return 0;
	}
	for (size_t i = 0; i < count; i++) {
		const struct lw_symbol *sym;

		if ((rc = lw_symbolize(r->symbolizer, frames[i].address,
				       &sym)) < 0)
			return rc;
		if (sym->module && !lw_module_is_cuda(sym->module)) {
			out->frame = &frames[i];
			out->symbol = sym;
			return 0;
		}
	}
	/* Only CUDA's frames, or none in a known module: the innermost. */
	if (count) {
		out->frame = &frames[0];
		return lw_symbolize(r->symbolizer, frames[0].address,
				    &out->symbol);
	}
	return 0;
}
