/* SPDX-License-Identifier: MIT */
/*
 * The leakwatch command line: `leakwatch report`, `leakwatch check`,
 * `leakwatch run` (run.c), help and version.
 *
 * Exit status: 0 on success; 2 for bad usage or a trace that cannot be read
 * (one line "leakwatch: PATH: PROBLEM" on stderr for each); `check` exits 1
 * when memory grows faster than allowed; `run` exits with the status of the
 * program it ran.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "formats.h"
#include "growth.h"
#include "lw-size.h"
#include "lw-report-config.h"
#include "output.h"
#include "render.h"
#include "trace-file.h"
#include "trace-pool.h"

static void report_usage(FILE *out)
{
	fputs("usage: " LW_SYNOPSIS_REPORT
	      "\n"
	      "Prints the GPU memory each trace left allocated, grouped by the call stack\n"
	      "that allocated it, largest first.\n"
	      "\n"
	      "  --format FORMAT     text for people (default); json for programs; html, a\n"
	      "                      self-contained page with plots and a flame graph;\n"
	      "                      perfetto, a Chrome/Perfetto trace (ui.perfetto.dev);\n"
	      "                      folded, stacks of retained bytes for flamegraph.pl\n"
	      "                      and speedscope; github, GitHub Actions annotations\n"
	      "  -o, --output FILE   write the report to FILE instead of standard output\n"
	      "  --top N             text: show the N largest sites (default 10; 0: all)\n"
	      "  --frames N          text: show N native frames of each stack (default 12;\n"
	      "                      0: all); its Python frames are always all shown\n"
	      "  --native            every native frame of a Python program's stacks; by\n"
	      "                      default each run of the framework's frames (PyTorch's,\n"
	      "                      CUDA's) folds into one line naming the operator\n"
	      "                      (aten::mm), and the interpreter's, libffi's and\n"
	      "                      pybind11's between Python frames into another\n"
	      "  --sites             text: each site of a line, not only their sum (sites\n"
	      "                      that share their headline line are one entry)\n"
	      "  --min-steps N       judge growth only with at least N steps (default 10)\n"
	      "  --rules FILE        more diagnosis rules (tags of frames, transient\n"
	      "                      phases, fixes), after the shipped rules.conf\n"
	      "  --suppressions FILE findings to suppress: lines leak:PATTERN (counted)\n"
	      "  --user-code DIR     Python code under DIR is the program's own: a site is\n"
	      "                      located at its innermost line there (repeatable;\n"
	      "                      also $LEAKWATCH_USER_CODE). Without it: the script's\n"
	      "                      tree, less the libraries the interpreter imported\n"
	      "  -h, --help          show this help\n"
	      "\n"
	      "Each growing or surviving site is diagnosed: the kind of leak (or not a\n"
	      "leak), the evidence in numbers, the line to look at and the fix.\n"
	      "With step marks, the report judges whether device memory grows from step\n"
	      "to step (see `leakwatch help check`) and lists the growing sites first.\n"
	      "JSON lists every site and frame. Several traces give several reports;\n"
	      "as text, then a merged view (each rank's growth, the imbalance between\n"
	      "them, the sites common to all).\n"
	      "A trace without an END record (the process was killed, or still runs) is\n"
	      "reported up to its last complete record and marked TRUNCATED. A damaged\n"
	      "trace (a block that fails its checksum) is reported up to the damage,\n"
	      "marked DAMAGED, and the command exits 2. The report file (-o) is private\n"
	      "(mode 0600), never one of the traces, and replaces FILE once written.\n",
	      out);
}

static void check_usage(FILE *out)
{
	fputs("usage: " LW_SYNOPSIS_CHECK
	      "\n"
	      "Fails when device memory grows from training step to step (STEP marks) by\n"
	      "more than SIZE per step, in the run as a whole or at any one site. Growth is\n"
	      "judged on the lower envelope after a warm-up (the first tenth of the steps):\n"
	      "optimizer state made at the first step, caches that fill and stop (plateau)\n"
	      "and frees deferred to a periodic pass (sawtooth with a flat floor) are not\n"
	      "growth. A site that keeps one more allocation per step grows however small.\n"
	      "\n"
	      "  --max-growth SIZE   bytes per step allowed: 0, 100 (bytes), 512KiB, 1.5GiB,\n"
	      "                      10MB (decimal units: kB, MB, GB, TB; binary: KiB, MiB,\n"
	      "                      GiB, TiB, or K, M, G, T)\n"
	      "  --min-steps N       judge only traces with at least N steps (default 10)\n"
	      "  --suppressions FILE sites to leave out: lines leak:PATTERN (repeatable;\n"
	      "                      also $LEAKWATCH_SUPPRESSIONS)\n"
	      "  --user-code DIR     the program's own Python code, for the sites' lines,\n"
	      "                      as for `leakwatch report`\n"
	      "  -h, --help          show this help\n"
	      "\n"
	      "A trace with fewer steps than that cannot be judged: check says so in one\n"
	      "line and counts it as passing.\n"
	      "\n"
	      "Exit status: 0 when every trace is within SIZE (or has too few steps to\n"
	      "judge), 1 when one grows faster (the offending sites are printed with\n"
	      "their rate and what it comes to over 10,000 steps), 2 for bad usage or\n"
	      "an unreadable trace or a verdict that cannot be written, 3 when a trace\n"
	      "cannot be judged at all (every CUDA allocation of its process failed, or\n"
	      "it is damaged).\n",
	      out);
}

static void usage(FILE *out)
{
	fputs("usage: " LW_SYNOPSIS_REPORT
	      "       " LW_SYNOPSIS_CHECK
	      "       " LW_SYNOPSIS_DIFF
	      "       " LW_SYNOPSIS_RUN
	      "       leakwatch help [report|check|diff|run] | -h | --help | --version\n"
	      "\n"
	      "leakwatch finds GPU memory leaks. `leakwatch run` runs a program with the\n"
	      "leakwatch shim preloaded, which records every CUDA allocation and free in a\n"
	      "trace, then reports what was never freed. `leakwatch report` reports on\n"
	      "traces written before. `leakwatch check` fails (exit 1) when device memory\n"
	      "grows faster per training step than allowed: a CI gate. `leakwatch diff`\n"
	      "compares two runs line by line (exit 1 when a location newly grows).\n"
	      "\n"
	      "Exit status: 0 on success, 2 for bad usage or an unreadable trace; `check`\n"
	      "exits 1 when memory grows too fast and 3 when a trace cannot be judged;\n"
	      "`diff` exits 1 on a regression and 3 when it cannot judge; `run` exits\n"
	      "with the program's status (128+N if it was killed by signal N; with\n"
	      "--max-growth, 23 when it grew too fast, 24 when it could not be judged).\n",
	      out);
}

void lw_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("leakwatch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	putc('\n', stderr);
}

void lw_bad_option(int c, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	char name[64];

	if (strncmp(arg, "--", 2) == 0)
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="),
			 arg);
	else
		snprintf(name, sizeof(name), "-%c", optopt);
	if (c == ':')
		lw_error("option '%s' needs a value", name);
	else if (strchr(arg, '=') && strncmp(arg, "--", 2) == 0 && optopt)
		lw_error("option '%s' takes no value", name);
	else
		lw_error("unknown option '%s'", name);
}

int lw_last_option(int c, char **argv, void (*print_usage)(FILE *out))
{
	if (c == 'h') {
		print_usage(stdout);
		return 0;
	}
	lw_bad_option(c, argv);
	return LW_EXIT_USAGE;
}

int lw_parse_format(const char *value, const struct lw_renderer **out)
{
	*out = lw_renderer_named(value);
	if (!*out) {
		lw_error("unknown format '%s' (use %s)", value,
			 lw_renderer_names());
		return -EINVAL;
	}
	return 0;
}

int lw_parse_count(const char *option, const char *value, size_t *out)
{
	unsigned long long n;
	char *end;

	errno = 0;
	if (value[0] < '0' || value[0] > '9' ||
	    (n = strtoull(value, &end, 10), *end) || errno || n > SIZE_MAX) {
		lw_error("%s needs a whole number, not '%s'", option, value);
		return -EINVAL;
	}
	*out = (size_t)n;
	return 0;
}

int lw_parse_min_steps(const char *value, size_t *out)
{
	if (lw_parse_count("--min-steps", value, out) < 0)
		return -EINVAL;
	if (*out == 0) {
		lw_error("--min-steps needs at least 1");
		return -EINVAL;
	}
	return 0;
}

int lw_flush_output(FILE *out, const char *name)
{
	/* errno is the failed write's, when an earlier flush failed and
	 * this one had nothing left to write (as in lw_report_files). */
	if (fflush(out) == 0 && !ferror(out))
		return 0;
	lw_error("%s: %s", name, strerror(errno ? errno : EIO));
	return -EIO;
}

static void put_file_error(const char *path, const char *message)
{
	fflush(stdout);
	fputs("leakwatch: ", stderr);
	lw_put_text_str(stderr, path);
	fprintf(stderr, ": %s\n", message);
	fflush(stderr);
}

/* A trace being reported: read and analysed on a pool thread, written
 * on the command's. */
struct report_slot {
	struct lw_trace_file tf;
	char message[256];
};

struct report_files {
	const char *const *paths;
	const struct lw_output_options *options;
	const struct lw_renderer *renderer;
	struct lw_render_run *run;
	struct report_slot *slots;
	size_t ahead;
	int failed;
};

static int load_report(void *ctx, size_t i)
{
	struct report_files *f = ctx;
	const struct lw_output_options *options = f->options;
	struct report_slot *slot = &f->slots[i % f->ahead];
	struct lw_trace_file *tf = &slot->tf;
	int rc;

	rc = lw_trace_file_open(tf, f->paths[i], slot->message,
				sizeof(slot->message));
	if (rc == 0) {
		if (options->report.min_steps)
			tf->report.min_steps = options->report.min_steps;
		tf->report.native = options->report.native;
		rc = lw_trace_file_set_user_code(tf, options->report.user_code);
		if (rc == 0)
			rc = lw_trace_file_set_rules(tf, options->report.rules);
		if (rc == 0)
			rc = lw_trace_file_analyse(tf);
		if (rc < 0)
			snprintf(slot->message, sizeof(slot->message), "%s",
				 strerror(-rc));
	}
	return rc;
}

static void write_report(void *ctx, size_t i, int rc)
{
	struct report_files *f = ctx;
	struct report_slot *slot = &f->slots[i % f->ahead];

	if (rc == 0) {
		rc = f->renderer->report(f->run, &slot->tf.report, i);
		if (rc < 0)
			snprintf(slot->message, sizeof(slot->message), "%s",
				 strerror(-rc));
		f->run->written++;
	}
	if (rc == 0 && lw_trace_file_shrank(&slot->tf)) {
		snprintf(slot->message, sizeof(slot->message), "%s",
			 LW_TRACE_SHRANK_MESSAGE);
		rc = -EIO;
	}
	/* What came before the damage is reported; the damage is an error
	 * all the same. */
	if (rc == 0 && slot->tf.result.damaged) {
		lw_trace_file_damage(&slot->tf, slot->message,
				     sizeof(slot->message));
		rc = -EBADMSG;
	}
	lw_trace_file_close(&slot->tf);
	/* The report so far first, then the error line. */
	fflush(f->run->out);
	if (rc < 0) {
		put_file_error(f->paths[i], slot->message);
		f->failed++;
	}
}

int lw_report_files(FILE *out, const char *const *paths, size_t count,
		    const struct lw_output_options *options)
{
	static const struct lw_trace_pool_ops ops = {
		.load = load_report,
		.use = write_report,
	};
	const struct lw_renderer *renderer =
		options->format ? options->format : &lw_text_renderer;
	struct lw_render_run run = {
		.out = out,
		.paths = paths,
		.count = count,
		.options = &options->report,
		.list = options->json_list,
	};
	/* Traces are read ahead of the one being written, one per thread. */
	struct report_files files = {
		.paths = paths,
		.options = options,
		.renderer = renderer,
		.run = &run,
		.ahead = lw_trace_pool_threads(count) + 1,
	};
	int rc;

	if (renderer->state_size &&
	    !(run.state = calloc(1, renderer->state_size)))
		return -ENOMEM;
	files.slots = calloc(files.ahead, sizeof(*files.slots));
	if (!files.slots) {
		free(run.state);
		return -ENOMEM;
	}
	if (renderer->begin && renderer->begin(&run) < 0)
		files.failed++;
	if ((rc = lw_trace_pool_run(count, files.ahead, &ops, &files)) < 0) {
		free(files.slots);
		free(run.state);
		return rc;
	}
	free(files.slots);
	if (renderer->end && renderer->end(&run) < 0)
		files.failed++;
	free(run.state);
	if (fflush(out) != 0 || ferror(out))
		return -(errno ? errno : EIO);
	return files.failed;
}

static int add_rule_file(const char *option, const char **files,
			 size_t *count, const char *arg)
{
	if (*count == LW_RULE_FILES_MAX) {
		lw_error("%s: at most %d files", option, LW_RULE_FILES_MAX);
		return -EINVAL;
	}
	files[(*count)++] = arg;
	return 1;
}

static int load_rule_file(struct lw_rules *rules, const char *path,
			  bool suppressions)
{
	char message[256];
	int rc = suppressions
			 ? lw_rules_add_suppressions(rules, path, message,
						     sizeof(message))
			 : lw_rules_add_file(rules, path, message,
					     sizeof(message));

	if (rc < 0)
		put_file_error(path, message);
	return rc;
}

/* Each path of a colon-separated list; empty items are skipped. */
static int load_rule_list(struct lw_rules *rules, const char *list,
			  bool suppressions)
{
	char *copy, *item, *save = NULL;
	int rc = 0;

	if (!list || !list[0])
		return 0;
	if (!(copy = strdup(list)))
		return -ENOMEM;
	for (item = strtok_r(copy, ":", &save); item && rc == 0;
	     item = strtok_r(NULL, ":", &save))
		rc = load_rule_file(rules, item, suppressions);
	free(copy);
	return rc;
}

int lw_load_rules(struct lw_output_options *options, struct lw_rules *rules)
{
	const char *shipped = lw_rules_default_path();
	int rc = 0;

	lw_rules_init(rules);
	if (shipped)
		rc = load_rule_file(rules, shipped, false);
	else
		lw_error("warning: rules.conf not found beside the command or in %s; diagnosis without framework rules",
			 LW_RULES_PATH);
	if (rc == 0)
		rc = load_rule_list(rules, getenv("LEAKWATCH_RULES"), false);
	for (size_t i = 0; rc == 0 && i < options->rule_file_count; i++)
		rc = load_rule_file(rules, options->rule_files[i], false);
	if (rc == 0)
		rc = load_rule_list(rules, getenv("LEAKWATCH_SUPPRESSIONS"),
				    true);
	for (size_t i = 0; rc == 0 && i < options->suppression_file_count; i++)
		rc = load_rule_file(rules, options->suppression_files[i], true);
	if (rc == -ENOMEM)
		lw_error("%s", strerror(ENOMEM));
	options->report.rules = rules;
	return rc < 0 ? -EINVAL : 0;
}

int lw_load_user_code(struct lw_output_options *options)
{
	int rc = lw_code_dirs_add_list(&options->user_code,
				       getenv("LEAKWATCH_USER_CODE"));

	if (rc < 0) {
		lw_error("%s", strerror(-rc));
		return rc;
	}
	if (options->user_code.count)
		options->report.user_code = &options->user_code;
	return 0;
}

int lw_output_option(int c, const char *arg, struct lw_output_options *options,
		     const char **output)
{
	switch (c) {
	case 'F':
		return lw_parse_format(arg, &options->format) < 0 ? -EINVAL : 1;
	case 'o':
		*output = arg;
		return 1;
	case 'T':
		return lw_parse_count("--top", arg, &options->report.top) < 0
			       ? -EINVAL : 1;
	case 'N':
		return lw_parse_count("--frames", arg, &options->report.frames) < 0
			       ? -EINVAL : 1;
	case 'n':
		options->report.native = true;
		return 1;
	case 'L':
		options->report.sites = true;
		return 1;
	case 'S':
		return lw_parse_min_steps(arg, &options->report.min_steps) < 0
			       ? -EINVAL : 1;
	case 'U':
		return add_rule_file("--rules", options->rule_files,
				     &options->rule_file_count, arg);
	case 'P':
		return add_rule_file("--suppressions",
				     options->suppression_files,
				     &options->suppression_file_count, arg);
	case 'C':
		if (!arg[0]) {
			lw_error("--user-code needs a directory");
			return -EINVAL;
		}
		if (lw_code_dirs_add(&options->user_code, arg) < 0) {
			lw_error("%s", strerror(ENOMEM));
			return -EINVAL;
		}
		return 1;
	default:
		return 0;
	}
}

static int cmd_report(int argc, char **argv)
{
	static const struct option long_options[] = {
		LW_OUTPUT_LONG_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct lw_output_options options = LW_OUTPUT_OPTIONS_DEFAULT;
	const char *output = NULL;
	const char *const *traces;
	struct lw_output file;
	struct lw_rules rules;
	size_t count;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1) {
		rc = lw_output_option(c, optarg, &options, &output);
		if (rc > 0)
			continue;
		lw_code_dirs_fini(&options.user_code);
		if (rc < 0)
			return LW_EXIT_USAGE;
		return lw_last_option(c, argv, report_usage);
	}
	if (optind >= argc) {
		lw_error("report: no trace given (usage: leakwatch report [OPTIONS] TRACE...)");
		lw_code_dirs_fini(&options.user_code);
		return LW_EXIT_USAGE;
	}
	if (lw_load_rules(&options, &rules) < 0 ||
	    lw_load_user_code(&options) < 0) {
		lw_rules_fini(&rules);
		lw_code_dirs_fini(&options.user_code);
		return LW_EXIT_USAGE;
	}
	traces = (const char *const *)argv + optind;
	count = (size_t)(argc - optind);
	if (output && lw_output_open(&file, output, traces, count) < 0) {
		lw_rules_fini(&rules);
		lw_code_dirs_fini(&options.user_code);
		return LW_EXIT_USAGE;
	}
	rc = lw_report_files(output ? file.file : stdout, traces, count,
			     &options);
	lw_rules_fini(&rules);
	lw_code_dirs_fini(&options.user_code);
	if (rc < 0)
		lw_error("%s: %s", output ? output : "standard output",
			 strerror(-rc));
	/* Put in place when it holds a report: a run where every trace
	 * failed leaves FILE as it was. */
	if (output && lw_output_close(&file, rc >= 0 && (size_t)rc < count,
				      traces, count) < 0 && rc >= 0)
		rc = -EIO;
	return rc == 0 ? 0 : LW_EXIT_USAGE;
}

/* Most offending sites `check` prints: one screenful. */
#define CHECK_MAX_SITES 5

int lw_parse_max_growth(const char *value, uint64_t *out)
{
	if (lw_parse_size(value, out) < 0) {
		lw_error("--max-growth needs a size such as 0, 100, 512KiB, 1.5GiB or 10MB, not '%s'",
			 value);
		return -EINVAL;
	}
	return 0;
}

/* Opens a trace for check, its suppressions marked and the user's code
 * named. */
static int open_for_check(struct lw_trace_file *tf, const char *path,
			  const struct lw_rules *rules,
			  const struct lw_code_dirs *user_code, char *message,
			  size_t message_size)
{
	int rc = lw_trace_file_open(tf, path, message, message_size);

	if (rc == 0 && ((rc = lw_trace_file_set_user_code(tf, user_code)) < 0 ||
			(rc = lw_trace_file_set_rules(tf, rules)) < 0))
		snprintf(message, message_size, "%s", strerror(-rc));
	return rc;
}

/*
 * check of a trace open_for_check() read into tf, with its result rc (and
 * its problem in message when rc < 0). Closes tf.
 */
static int check_opened(FILE *out, const char *path, struct lw_trace_file *tf,
			int rc, char *message, size_t message_size,
			uint64_t max_growth, size_t min_steps)
{
	struct lw_growth_report g = { 0 };
	char rate[LW_SIZE_BUF], per10k[LW_SIZE_BUF];
	char limit[LW_SIZE_BUF];
	uint32_t *sites = NULL;
	size_t count = 0, over = 0;
	bool run_over, judged = false;

	if (rc < 0)
		goto out;
	tf->report.min_steps = min_steps;
	if (tf->result.damaged) {
		lw_trace_file_damage(tf, message, message_size);
		fputs("leakwatch: ", out);
		lw_put_text_str(out, path);
		fputs(": cannot judge growth: the trace is ", out);
		lw_put_text_str(out, message);
		putc('\n', out);
		rc = LW_CHECK_UNJUDGED;
		goto out;
	}
	if (tf->model.meta.failed_allocations && !tf->model.counts.allocations) {
		const struct lw_failed_allocation *f = &tf->model.meta.failed[0];
		const char *name = lw_alloc_error_name(f->api, f->error);

		fputs("leakwatch: ", out);
		lw_put_text_str(out, path);
		fprintf(out, ": cannot judge growth: every CUDA allocation failed (%" PRIu64 " calls; the first: %s returned %s%s%" PRIu64 "%s)\n",
			tf->model.meta.failed_allocations, lw_api_name(f->api),
			name ? name : "", name ? " (" : "error ", f->error,
			name ? ")" : "");
		rc = LW_CHECK_UNJUDGED;
		goto out;
	}
	rc = lw_model_growth(&tf->model, min_steps, &g);
	if (rc == 0)
		rc = lw_growing_sites(&g, &sites, &count);
	if (rc < 0) {
		snprintf(message, message_size, "%s", strerror(-rc));
		goto out;
	}
	fputs("leakwatch: ", out);
	lw_put_text_str(out, path);
	judged = true;
	if (g.run.verdict == LW_VERDICT_NOT_ENOUGH_STEPS) {
		fprintf(out, ": not enough steps to judge growth (%" PRIu64 " step%s, at least %zu needed): passing\n",
		       tf->model.counts.steps, tf->model.counts.steps == 1 ? "" : "s",
		       min_steps);
		goto out;
	}
	for (size_t i = 0; i < count; i++)
		over += g.sites[sites[i]].bytes_per_step > (double)max_growth;
	run_over = g.run.verdict == LW_VERDICT_GROWING &&
		   (over || g.run.per_step > (double)max_growth);
	snprintf(limit, sizeof(limit), "%s", lw_format_size(rate, max_growth));
	if (!run_over) {
		if (g.run.verdict == LW_VERDICT_GROWING)
			fprintf(out, ": ok: growing by %s per step (%s per 10,000 steps), within the %s per step allowed\n",
			       lw_format_rate(rate, g.run.per_step),
			       lw_format_rate(per10k, g.run.per_step * 10000),
			       limit);
		else
			fprintf(out, ": ok: %s, no growth from step to step\n",
			       lw_verdict_name(g.run.verdict));
		goto out;
	}
	rc = 1;
	fprintf(out, ": GROWING: device memory %s per step (%s per 10,000 steps); %zu site%s over the %s per step allowed\n",
	       lw_format_rate(rate, g.run.per_step),
	       lw_format_rate(per10k, g.run.per_step * 10000), over,
	       over == 1 ? "" : "s", limit);
	for (size_t i = 0, shown = 0; i < count; i++) {
		const struct lw_site_growth *sg = &g.sites[sites[i]];
		int prc;

		if (sg->bytes_per_step <= (double)max_growth)
			continue;
		if (shown++ == CHECK_MAX_SITES) {
			fprintf(out, "  ... and %zu more (leakwatch report lists them)\n",
			       over - CHECK_MAX_SITES);
			break;
		}
		fprintf(out, "  #%zu %s per step (%s per 10,000 steps), %+.3g allocation%s per step\n",
		       shown, lw_format_rate(rate, sg->bytes_per_step),
		       lw_format_rate(per10k, sg->bytes_per_step * 10000),
		       sg->count_per_step,
		       sg->count_per_step == 1 ? "" : "s");
		prc = lw_put_site_location(out, &tf->report, sites[i]);
		if (prc < 0) {
			rc = prc;
			snprintf(message, message_size, "%s", strerror(-rc));
			break;
		}
	}
out:
	/* What the steps judged are, and where they come from. */
	if (judged && rc >= 0) {
		char source[768];

		lw_render_step_source(&tf->model, false, source,
				      sizeof(source));
		fprintf(out, "  steps: %" PRIu64 " (", tf->model.counts.steps);
		lw_put_text_str(out, source);
		fputs(")\n", out);
	}
	fflush(out);
	if (rc < 0)
		put_file_error(path, message);
	free(sites);
	lw_growth_report_fini(&g);
	lw_trace_file_close(tf);
	return rc;
}

int lw_check_file(FILE *out, const char *path, uint64_t max_growth,
		  size_t min_steps, const struct lw_rules *rules,
		  const struct lw_code_dirs *user_code)
{
	struct lw_trace_file tf;
	char message[256];
	int rc = open_for_check(&tf, path, rules, user_code, message,
				sizeof(message));

	return check_opened(out, path, &tf, rc, message, sizeof(message),
			    max_growth, min_steps);
}

/* The traces of `check`: read on pool threads, judged in order. */
struct check_slot {
	struct lw_trace_file tf;
	char message[256];
};

struct check_files {
	const char *const *paths;
	const struct lw_rules *rules;
	const struct lw_code_dirs *user_code;
	uint64_t max_growth;
	size_t min_steps;
	struct check_slot *slots;
	size_t ahead;
	bool unreadable, over, unjudged;
};

static int load_check(void *ctx, size_t i)
{
	struct check_files *c = ctx;
	struct check_slot *slot = &c->slots[i % c->ahead];

	return open_for_check(&slot->tf, c->paths[i], c->rules, c->user_code,
			      slot->message, sizeof(slot->message));
}

static void judge_check(void *ctx, size_t i, int rc)
{
	struct check_files *c = ctx;
	struct check_slot *slot = &c->slots[i % c->ahead];

	rc = check_opened(stdout, c->paths[i], &slot->tf, rc, slot->message,
			  sizeof(slot->message), c->max_growth, c->min_steps);
	if (rc < 0)
		c->unreadable = true;
	else if (rc == LW_CHECK_UNJUDGED)
		c->unjudged = true;
	else if (rc > 0)
		c->over = true;
}

static int cmd_check(int argc, char **argv)
{
	static const struct lw_trace_pool_ops ops = {
		.load = load_check,
		.use = judge_check,
	};
	static const struct option long_options[] = {
		{ "max-growth", required_argument, NULL, 'G' },
		{ "min-steps", required_argument, NULL, 'S' },
		{ "suppressions", required_argument, NULL, 'P' },
		{ "user-code", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct lw_output_options options = { .format = &lw_text_renderer };
	struct check_files checks;
	struct lw_rules rules;
	const char *max_text = NULL, *output = NULL;
	size_t min_steps = LW_DEFAULT_MIN_STEPS;
	uint64_t max_growth = 0;
	bool unreadable = false, over = false, unjudged = false;
	int c, status = LW_EXIT_USAGE;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
		switch (c) {
		case 'G':
			max_text = optarg;
			if (lw_parse_max_growth(optarg, &max_growth) < 0)
				goto out;
			break;
		case 'S':
			if (lw_parse_min_steps(optarg, &min_steps) < 0)
				goto out;
			break;
		case 'P':
		case 'C':
			if (lw_output_option(c, optarg, &options, &output) < 0)
				goto out;
			break;
		default:
			status = lw_last_option(c, argv, check_usage);
			goto out;
		}
	}
	if (!max_text) {
		lw_error("check: --max-growth SIZE is required (usage: leakwatch check --max-growth SIZE [--min-steps N] TRACE...)");
		goto out;
	}
	if (optind >= argc) {
		lw_error("check: no trace given (usage: leakwatch check --max-growth SIZE [--min-steps N] TRACE...)");
		goto out;
	}
	if (lw_load_rules(&options, &rules) < 0 ||
	    lw_load_user_code(&options) < 0) {
		lw_rules_fini(&rules);
		goto out;
	}
	checks = (struct check_files){
		.paths = (const char *const *)argv + optind,
		.rules = options.report.rules,
		.user_code = options.report.user_code,
		.max_growth = max_growth,
		.min_steps = min_steps,
		.ahead = lw_trace_pool_threads((size_t)(argc - optind)) + 1,
	};
	checks.slots = calloc(checks.ahead, sizeof(*checks.slots));
	if (!checks.slots ||
	    lw_trace_pool_run((size_t)(argc - optind), checks.ahead, &ops,
			      &checks) < 0) {
		lw_error("%s", strerror(ENOMEM));
		free(checks.slots);
		lw_rules_fini(&rules);
		goto out;
	}
	free(checks.slots);
	unreadable = checks.unreadable;
	over = checks.over;
	unjudged = checks.unjudged;
	if (argc - optind > 1)
		lw_merged_view(stdout, (const char *const *)argv + optind,
			       (size_t)(argc - optind), min_steps,
			       options.report.user_code);
	lw_rules_fini(&rules);
	status = unreadable ? LW_EXIT_USAGE
		 : over	    ? 1
		 : unjudged ? LW_EXIT_CHECK_UNJUDGED
			    : 0;
	/* A verdict nobody could read is no verdict. */
	if (lw_flush_output(stdout, "standard output") < 0)
		status = LW_EXIT_USAGE;
out:
	lw_code_dirs_fini(&options.user_code);
	return status;
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
	} else if (strcmp(argv[1], "report") == 0) {
		report_usage(stdout);
	} else if (strcmp(argv[1], "check") == 0) {
		check_usage(stdout);
	} else if (strcmp(argv[1], "run") == 0) {
		lw_run_usage(stdout);
	} else if (strcmp(argv[1], "diff") == 0) {
		lw_diff_usage(stdout);
	} else {
		lw_error("no help for '%s' (try report, check, diff or run)",
			 argv[1]);
		return LW_EXIT_USAGE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *command = argc > 1 ? argv[1] : NULL;

	if (!command) {
		usage(stderr);
		return LW_EXIT_USAGE;
	}
	if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(command, "--version") == 0) {
		printf("leakwatch %s\n", LW_VERSION);
		return 0;
	}
	if (strcmp(command, "help") == 0)
		return cmd_help(argc - 1, argv + 1);
	if (strcmp(command, "report") == 0)
		return cmd_report(argc - 1, argv + 1);
	if (strcmp(command, "check") == 0)
		return cmd_check(argc - 1, argv + 1);
	if (strcmp(command, "run") == 0)
		return lw_cmd_run(argc - 1, argv + 1);
	if (strcmp(command, "diff") == 0)
		return lw_cmd_diff(argc - 1, argv + 1);
	if (command[0] == '-')
		lw_error("unknown option '%s' (try 'leakwatch --help')", command);
	else
		lw_error("unknown command '%s' (try 'leakwatch --help')", command);
	return LW_EXIT_USAGE;
}
