/* SPDX-License-Identifier: MIT */
/*
 * `--format folded`: the device memory each stack kept from step to step
 * (held at the last step end; live at the report point in a trace with no
 * steps: lw_site_retained()), one line per stack, "outermost;...;innermost
 * BYTES", as flamegraph.pl, inferno and speedscope read it.
 */
#include "formats.h"
#include "result.h"

#include <errno.h>
#include <inttypes.h>

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
	const struct lw_result *res = lw_result_of(r);

	(void)options;
	(void)index;
	if (!res)
		return -EINVAL;
	for (size_t i = 0; i < lw_result_retained_count(res); i++) {
		const struct lw_result_site *site = lw_result_retained(res, i);

		if (site->frame_count == 0)
			fputs("[no stack captured]", out);
		for (size_t j = site->frame_count; j-- > 0;) {
			const struct lw_result_frame *f =
				lw_result_site_frame(res, site, j);

			put_folded(out, lw_result_label(res, f), f->label_len);
			if (j)
				putc(';', out);
		}
		fprintf(out, " %" PRIu64 "\n", site->bytes);
	}
	return 0;
}

const struct lw_renderer lw_folded_renderer = {
	.name = "folded",
	.needs = LW_RESULT_RETAINED,
	.report = render,
};
