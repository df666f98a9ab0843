/* SPDX-License-Identifier: MIT */
/*
 * `--format github`: each finding as a GitHub Actions workflow command,
 *     ::warning file=PATH,line=N,title=TITLE::MESSAGE
 * which the runner shows as an annotation on that line of the pull
 * request. Values are escaped as the runner unescapes them: '%', CR and LF
 * everywhere, and ':' and ',' too in properties.
 */
#include "formats.h"
#include "result.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* For a workflow command: %, CR and LF percent-encoded, and in a property
 * also ':' and ','; other controls as spaces, bytes that are not UTF-8 as
 * U+FFFD. */
static bool escape_github(FILE *out, uint32_t cp, const uint8_t *s,
			  size_t n, const void *property)
{
	if (n == 0)
		fputs("\xef\xbf\xbd", out);
	else if (cp == '%')
		fputs("%25", out);
	else if (cp == '\r')
		fputs("%0D", out);
	else if (cp == '\n')
		fputs("%0A", out);
	else if (property && cp == ':')
		fputs("%3A", out);
	else if (property && cp == ',')
		fputs("%2C", out);
	else if (lw_is_control(cp))
		putc(' ', out);
	else
		return false;
	return true;
}

static void put_escaped(FILE *out, const void *data, size_t len,
			bool property)
{
	lw_put_escaped(out, data, len, escape_github,
		       property ? "property" : NULL);
}

static void put_property(FILE *out, const void *data, size_t len)
{
	put_escaped(out, data, len, true);
}

static void put_message(FILE *out, const void *data, size_t len)
{
	put_escaped(out, data, len, false);
}

static void put_message_str(FILE *out, const char *s)
{
	put_message(out, s, strlen(s));
}

static int render(struct lw_render_run *run, const struct lw_report *r,
		  size_t index)
{
	FILE *out = run->out;
	const struct lw_report_options *options = run->options;
	const struct lw_result *res = lw_result_of(r);
	char rate[LW_SIZE_BUF];

	(void)options;
	(void)index;
	if (!res)
		return -EINVAL;
	for (size_t i = 0; i < lw_result_finding_count(res); i++) {
		const struct lw_report_finding *f =
			lw_result_finding(res, i)->finding;
		char line[64];

		fputs("::warning ", out);
		if (f->have_location && f->location.file) {
			fputs("file=", out);
			put_property(out, f->location.file,
				     f->location.file_len);
			if (f->location.line > 0)
				fprintf(out, ",line=%" PRId64, f->location.line);
			putc(',', out);
		}
		fputs("title=", out);
		snprintf(line, sizeof(line), "GPU memory leak: %s",
			 lw_format_rate(rate, f->bytes_per_step));
		put_property(out, line, strlen(line));
		put_property(out, " per step", 9);
		fputs("::", out);
		put_message_str(out, f->title);
		put_message_str(out, "\nleakwatch trace: ");
		put_message_str(out, r->path);
		if (f->fix) {
			put_message_str(out, "\nfix: ");
			put_message_str(out, f->fix);
		}
		putc('\n', out);
	}
	return 0;
}

const struct lw_renderer lw_github_renderer = {
	.name = "github",
	.needs = LW_RESULT_FINDINGS,
	.report = render,
};
