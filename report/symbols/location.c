/* SPDX-License-Identifier: MIT */
/*
 * A site's location: the one frame of its stack a report leads with, the
 * line a user would go and fix.
 */
#include <stdlib.h>
#include <string.h>

#include "lw-origin.h"
#include "pystack.h"
#include "report.h"
#include "usercode.h"

static bool is_user_code(const struct lw_report *r,
			 const struct lw_trace_pyframe *frame)
{
	struct lw_bytes function, file;

	lw_model_pyframe_names(r->model, frame, &function, &file);
	/* Code whose file is unknown cannot be told to be the user's. */
	return file.data &&
	       lw_user_code_origin(r->code, frame->code_id, file.data,
				   file.len) == LW_CODE_USER;
}

#define THREAD_MAIN "torch::autograd::Engine::thread_main("

/* Whether the stack's native frames run on autograd's engine thread, and
 * the innermost autograd node among them. */
static int find_autograd(const struct lw_report *r,
			 const struct lw_frame *frames, size_t count,
			 struct lw_location *out)
{
	char node[sizeof(out->autograd_node)] = "";
	int rc;

	for (size_t i = 0; i < count; i++) {
		const struct lw_symbol *sym;
		const char *fn;

		if (frames[i].python)
			continue;
		if ((rc = lw_symbolize(r->symbolizer, frames[i].address,
				       &sym)) < 0)
			return rc;
		fn = sym->frames[sym->frame_count - 1].function;
		if (!fn)
			continue;
		if (!node[0]) {
			size_t len;
			const char *name = lw_autograd_node(fn, &len);

			if (name && len >= 9 && len < sizeof(node)) {
				memcpy(node, name, len);
				node[len] = '\0';
			}
		}
		if (strncmp(fn, THREAD_MAIN, sizeof(THREAD_MAIN) - 1) == 0) {
			out->in_backward = true;
			memcpy(out->autograd_node, node, sizeof(node));
			return 0;
		}
	}
	return 0;
}

int lw_find_location(const struct lw_report *r, const struct lw_frame *frames,
		     size_t count, struct lw_location *out)
{
	const struct lw_frame *python = NULL;

	out->frame = NULL;
	out->symbol = NULL;
	out->in_backward = false;
	out->autograd_node[0] = '\0';
	for (size_t i = 0; i < count; i++) {
		if (!frames[i].python)
			continue;
		if (is_user_code(r, frames[i].py)) {
			out->frame = &frames[i];
			return find_autograd(r, frames, count, out);
		}
		if (!python)
			python = &frames[i];
	}
	if (python) {
		out->frame = python;
		return find_autograd(r, frames, count, out);
	}
	int rc;

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

int lw_site_stack(const struct lw_report *r, uint32_t site,
		  struct lw_site_stack *out)
{
	const struct lw_model *m = r->model;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = lw_model_stack(m, m->sites.items[site].stack_id, &out->frames,
			    &out->count);
	if (rc < 0 || out->count == 0)
		return rc;
	return lw_find_location(r, out->frames, out->count, &out->location);
}

void lw_site_stack_fini(struct lw_site_stack *s)
{
	free(s->frames);
	memset(s, 0, sizeof(*s));
}
