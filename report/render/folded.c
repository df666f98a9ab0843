/* SPDX-License-Identifier: MIT */
/*
 * `--format folded`: the device memory each stack kept from step to step
 * (held at the last step end; live at the report point in a trace with no
 * steps: lw_site_retained()), one line per stack, "outermost;...;innermost
 * BYTES", as flamegraph.pl, inferno and speedscope read it.
 */
#include "analysis.h"
#include "findings.h"
#include "formats.h"

#include <inttypes.h>
#include <stdlib.h>

/*
 * A frame may hold neither ';' (the separator) nor a line break (U+2028
 * and U+2029 included, which some readers split lines at); the last space
 * of a line comes before the number, so spaces are fine.
 */
static bool escape_folded(FILE *out, uint32_t cp, const uint8_t *s,
			  size_t n, const void *ctx)
{
	if (n == 0 || lw_is_control(cp))
		putc('?', out);
	else if (cp == ';')
		putc(',', out);
	else if (cp == 0x2028 || cp == 0x2029)
		putc(' ', out);
	else
		return false;
	return true;
}

static void put_folded(FILE *out, const void *data, size_t len)
{
	lw_put_escaped(out, data, len, escape_folded, NULL);
}

static int render(struct lw_render_run *run, const struct lw_report *r,
		  size_t index)
{
	FILE *out = run->out;
	const struct lw_report_options *options = run->options;
	const struct lw_model *m = r->model;
	uint32_t *sites;
	size_t count;
	int rc;

	(void)options;
	(void)index;
	rc = lw_retained_sites(r, &sites, &count);
	for (size_t i = 0; rc == 0 && i < count; i++) {
		uint32_t site = sites[i];
		uint64_t bytes = lw_site_retained(r, site);
		struct lw_named_frame *frames;
		size_t n;

		rc = lw_named_stack(r, lw_model_site(m, site)->stack_id,
				    &frames, &n);
		if (rc < 0)
			break;
		if (n == 0)
			fputs("[no stack captured]", out);
		for (size_t j = n; j-- > 0;) {
			lw_put_frame_label(out, &frames[j], put_folded);
			if (j)
				putc(';', out);
		}
		fprintf(out, " %" PRIu64 "\n", bytes);
		free(frames);
	}
	free(sites);
	return rc;
}

const struct lw_renderer lw_folded_renderer = {
	.name = "folded",
	.report = render,
};
