/* SPDX-License-Identifier: MIT */
/*
 * Growth and the diagnosis run once per report: every format, a report of
 * several traces, and diff, against the counters of analysis.c. Built
 * from the command's own sources (its main renamed), so that it counts
 * what the command does.
 *
 *     test-analysis GEN-TRACE DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "formats.h"
#include "lw-test.h"

/* Runs f and checks it judged growth and diagnosed `want` times each. */
static void counts(const char *what, int rc, uint64_t growth0,
		   uint64_t diag0, uint64_t want)
{
	uint64_t g = lw_analysis_growth_runs() - growth0;
	uint64_t d = lw_analysis_diagnosis_runs() - diag0;

	if (rc < 0)
		lw_test_fail("%s: status %d", what, rc);
	if (g != want)
		lw_test_fail("%s: growth judged %llu times, expected %llu",
			     what, (unsigned long long)g,
			     (unsigned long long)want);
	if (d != want)
		lw_test_fail("%s: %llu diagnoses, expected %llu", what,
			     (unsigned long long)d, (unsigned long long)want);
}

int main(int argc, char **argv)
{
	static const char *const formats[] = {
		"text", "json", "html", "perfetto", "folded", "github",
	};
	char a[4096], b[4096], cmd[9000];
	FILE *out = fopen("/dev/null", "w");

	if (argc != 3 || !out) {
		fprintf(stderr, "usage: test-analysis GEN-TRACE DIR\n");
		return 2;
	}
	snprintf(a, sizeof(a), "%s/analysis-a.trace", argv[2]);
	snprintf(b, sizeof(b), "%s/analysis-b.trace", argv[2]);
	snprintf(cmd, sizeof(cmd), "'%s' leak-loop '%s' && '%s' phases '%s'",
		 argv[1], a, argv[1], b);
	if (system(cmd) != 0) {
		fprintf(stderr, "test-analysis: %s failed\n", cmd);
		return 1;
	}
	const char *one[] = { a }, *two[] = { a, b };

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct lw_output_options o = {
			.format = lw_renderer_named(formats[i]),
		};
		uint64_t g0 = lw_analysis_growth_runs();
		uint64_t d0 = lw_analysis_diagnosis_runs();
		int rc = lw_report_files(out, one, 1, &o);

		if (!o.format) {
			lw_test_fail("no format %s", formats[i]);
			continue;
		}
		counts(formats[i], rc, g0, d0, 1);
		g0 = lw_analysis_growth_runs();
		d0 = lw_analysis_diagnosis_runs();
		rc = lw_report_files(out, two, 2, &o);
		/* Text adds the merged view of the traces, which reads each
		 * again: a report of its own. */
		counts(formats[i], rc, g0, d0,
		       strcmp(formats[i], "text") == 0 ? 4 : 2);
	}
	remove(a);
	remove(b);
	fclose(out);
	return lw_test_done("test-analysis");
}
