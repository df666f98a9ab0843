/* SPDX-License-Identifier: MIT */
/*
 * Growth and the diagnosis run once per report: every format, a report of
 * several traces, and diff, against the counters of analysis.c; and
 * `check` and `run` with a gate read each trace once and judge its growth
 * once, the gate judging the report's own analysis. Built from the
 * command's own sources (its main renamed), so that it counts what the
 * command does; the reads and growth judgements are counted by wrapping
 * the command's calls (meson.build: --wrap).
 *
 *     test-analysis GEN-TRACE DIR FAKE-SHIM
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "formats.h"
#include "lw-test.h"
#include "trace-file.h"

/* Traces may be read and judged on several threads (trace-pool.h). */
static _Atomic uint64_t trace_reads, growth_judgements;

int __real_lw_trace_file_open(struct lw_trace_file *tf, const char *path,
			      char *message, size_t message_size);
int __wrap_lw_trace_file_open(struct lw_trace_file *tf, const char *path,
			      char *message, size_t message_size);
int __real_lw_model_growth(const struct lw_model *m, uint64_t min_steps,
			   struct lw_growth_report *out);
int __wrap_lw_model_growth(const struct lw_model *m, uint64_t min_steps,
			   struct lw_growth_report *out);

int __wrap_lw_trace_file_open(struct lw_trace_file *tf, const char *path,
			      char *message, size_t message_size)
{
	trace_reads++;
	return __real_lw_trace_file_open(tf, path, message, message_size);
}

int __wrap_lw_model_growth(const struct lw_model *m, uint64_t min_steps,
			   struct lw_growth_report *out)
{
	growth_judgements++;
	return __real_lw_model_growth(m, min_steps, out);
}

/*
 * Runs a command (argv, NULL-terminated) and checks that it read its one
 * trace once, judged its growth once and diagnosed it at most once, and
 * exited with status want.
 */
static void once(const char *what, int (*cmd)(int argc, char **argv),
		 char **argv, int want)
{
	uint64_t reads = trace_reads, growth = growth_judgements;
	uint64_t diag = lw_analysis_diagnosis_runs();
	int argc = 0, status;

	while (argv[argc])
		argc++;
	optind = 0;	/* getopt starts over */
	status = cmd(argc, argv);
	reads = trace_reads - reads;
	growth = growth_judgements - growth;
	diag = lw_analysis_diagnosis_runs() - diag;
	if (status != want)
		lw_test_fail("%s: exit status %d, expected %d", what, status,
			     want);
	if (reads != 1)
		lw_test_fail("%s: the trace was read %llu times, expected once",
			     what, (unsigned long long)reads);
	if (growth != 1)
		lw_test_fail("%s: growth judged %llu times, expected once",
			     what, (unsigned long long)growth);
	if (diag > 1)
		lw_test_fail("%s: %llu diagnoses, expected one at most", what,
			     (unsigned long long)diag);
}

/* check and run with a gate, each on one trace. */
static void gates(const char *trace, const char *dir, const char *shim)
{
	char run_trace[4096], run_report[4096];
	char *check_growth[] = {
		"check", "--max-growth", "1GiB", (char *)trace, NULL,
	};
	char *check_all[] = {
		"check", "--max-growth", "1GiB", "--max-peak", "1GiB",
		"--fail-on", "all", (char *)trace, NULL,
	};
	char *run_gate[] = {
		"run", "--trace", run_trace, "-o", run_report,
		"--max-growth", "1GiB", "--fail-on", "all", "--", "true", NULL,
	};
	char *run_no_report[] = {
		"run", "--trace", run_trace, "--no-report", "--max-growth",
		"1GiB", "--", "true", NULL,
	};

	once("check --max-growth", lw_cmd_check, check_growth, 0);
	/* gen-trace's leak-loop leaks: --fail-on all fails it. */
	once("check --max-growth --max-peak --fail-on", lw_cmd_check,
	     check_all, 1);
	snprintf(run_trace, sizeof(run_trace), "%s/analysis-run.trace", dir);
	snprintf(run_report, sizeof(run_report), "%s/analysis-run.txt", dir);
	/* The stand-in shim writes a trace without steps: the gate cannot
	 * judge it (LW_EXIT_UNJUDGED), but has read and judged it. */
	setenv("LEAKWATCH_LIB", shim, 1);
	once("run --max-growth --fail-on", lw_cmd_run, run_gate, 24);
	remove(run_trace);
	once("run --no-report --max-growth", lw_cmd_run, run_no_report, 24);
	remove(run_trace);
	remove(run_report);
}

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

	if (argc != 4 || !out) {
		fprintf(stderr, "usage: test-analysis GEN-TRACE DIR FAKE-SHIM\n");
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
	/* Last: `run` sets the environment of the programs it runs. */
	gates(a, argv[2], argv[3]);
	remove(a);
	remove(b);
	fclose(out);
	return lw_test_done("test-analysis");
}
