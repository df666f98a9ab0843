/* SPDX-License-Identifier: MIT */
/* What main.c and run.c share: the subcommands and reporting of files. */
#ifndef LW_COMMANDS_H
#define LW_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lw-growth.h"
#include "render.h"
#include "rules.h"
#include "usercode.h"

/*
 * Each command's synopsis, shared by its own help and `leakwatch --help`
 * (both print it after a 7-column prefix, "usage: " or spaces), so that
 * they cannot disagree; tests/report/test-docs.py checks the README's
 * against them.
 */
#define LW_SYNOPSIS_REPORT \
	"leakwatch report [--format FORMAT] [-o FILE] [--top N] [--frames N] [--native]\n" \
	"                       [--sites] [--min-steps N] [--rules FILE] [--suppressions FILE]\n" \
	"                       [--user-code DIR] TRACE...\n"
#define LW_SYNOPSIS_CHECK \
	"leakwatch check [--max-growth SIZE] [--max-reserved-growth SIZE]\n" \
	"                      [--max-peak SIZE] [--max-reserved-peak SIZE]\n" \
	"                      [--fail-on KINDS] [--min-steps N] [--suppressions FILE]\n" \
	"                      [--user-code DIR] TRACE...\n"
#define LW_SYNOPSIS_DIFF \
	"leakwatch diff [--min-steps N] [--top N] [--suppressions FILE]\n" \
	"                     [--user-code DIR] BEFORE AFTER\n"
#define LW_SYNOPSIS_RUN \
	"leakwatch run [--trace PATTERN] [--format FORMAT] [-o FILE] [--top N]\n" \
	"                     [--frames N] [--native] [--sites] [--no-report]\n" \
	"                     [--max-growth SIZE] [--max-reserved-growth SIZE]\n" \
	"                     [--max-peak SIZE] [--max-reserved-peak SIZE] [--fail-on KINDS]\n" \
	"                     [--min-steps N] [--rules FILE] [--suppressions FILE]\n" \
	"                     [--user-code DIR] [--torch-allocator async|keep]\n" \
	"                     [--trace-detail bounded|full] -- CMD [ARGS...]\n"

/* Exit status for bad usage and unusable input. */
#define LW_EXIT_USAGE 2
/*
 * Exit status of `check` and `diff` when a trace cannot be judged (every
 * allocation failed; `diff`: too few steps to tell). A gate that could not
 * judge must not pass. `run` says the same with LW_EXIT_UNJUDGED (24).
 */
#define LW_EXIT_CHECK_UNJUDGED 3
/*
 * LW_EXIT_GROWTH (lw-growth.h), for `leakwatch run --max-growth`: the
 * program succeeded but its GPU memory grew faster than allowed (as
 * LeakSanitizer's 23). A program's own non-zero status is always passed on
 * instead.
 */

struct lw_renderer;

/* --rules and --suppressions files a command takes, each. */
#define LW_RULE_FILES_MAX 16

struct lw_output_options {
	const struct lw_renderer *format;	/* formats.h; NULL: text */
	struct lw_report_options report;
	const char *rule_files[LW_RULE_FILES_MAX];
	size_t rule_file_count;
	const char *suppression_files[LW_RULE_FILES_MAX];
	size_t suppression_file_count;
	/* --user-code directories, then LEAKWATCH_USER_CODE's
	 * (lw_load_user_code()); report.user_code points here. */
	struct lw_code_dirs user_code;
	/* JSON: wrap even a single report in {"reports": [...]}. */
	bool json_list;
};

/*
 * Reports each trace in paths to out. A trace that cannot be read gets one
 * line "leakwatch: PATH: PROBLEM" on stderr and is skipped. Returns the
 * number of such traces, or a negative errno when out could not be written.
 */
int lw_report_files(FILE *out, const char *const *paths, size_t count,
		    const struct lw_output_options *options);

/*
 * Flushes out, named name in the error ("standard output"): 0, or -EIO
 * after one line on stderr when it could not be written (a full disk, a
 * closed descriptor).
 */
int lw_flush_output(FILE *out, const char *name);

/* Prints "leakwatch: " and the formatted line to stderr. */
__attribute__((format(printf, 1, 2)))
void lw_error(const char *fmt, ...);

/* Parsers for option values; print the problem and return -EINVAL. */
int lw_parse_format(const char *value, const struct lw_renderer **out);
int lw_parse_count(const char *option, const char *value, size_t *out);
/* --min-steps: a whole number, at least 1. */
int lw_parse_min_steps(const char *value, size_t *out);

/*
 * Handles an option that `report` and `run` share (--format, -o/--output,
 * --top, --frames, --min-steps, --rules, --suppressions, --user-code:
 * getopt values 'F', 'o', 'T', 'N', 'S', 'U', 'P', 'C'). Returns 1 if c was
 * one of them, 0 if it was not, -EINVAL for a bad value (already printed).
 */
int lw_output_option(int c, const char *arg, struct lw_output_options *options,
		     const char **output);

/* Those options' getopt_long() entries, for a command's table, and their
 * defaults (with formats.h). */
#define LW_OUTPUT_LONG_OPTIONS                                                \
	{ "format", required_argument, NULL, 'F' },                           \
	{ "output", required_argument, NULL, 'o' },                           \
	{ "top", required_argument, NULL, 'T' },                              \
	{ "frames", required_argument, NULL, 'N' },                           \
	{ "native", no_argument, NULL, 'n' },                                 \
	{ "sites", no_argument, NULL, 'L' },                                  \
	{ "min-steps", required_argument, NULL, 'S' },                        \
	{ "rules", required_argument, NULL, 'U' },                            \
	{ "suppressions", required_argument, NULL, 'P' },                     \
	{ "user-code", required_argument, NULL, 'C' }
#define LW_OUTPUT_OPTIONS_DEFAULT                                             \
	{                                                                     \
		.format = &lw_text_renderer,                                  \
		.report = { .top = LW_DEFAULT_TOP,                            \
			    .frames = LW_DEFAULT_FRAMES },                    \
	}

/*
 * Reads the diagnosis rules into rules (initialised here): the shipped
 * rules.conf, then $LEAKWATCH_RULES and the --rules files, then
 * $LEAKWATCH_SUPPRESSIONS and the --suppressions files (the variables hold
 * colon-separated paths), and points options->report.rules at them. A file
 * that cannot be read or has a bad line is reported in one line; returns
 * 0 or -EINVAL. lw_rules_fini() releases rules either way.
 */
int lw_load_rules(struct lw_output_options *options, struct lw_rules *rules);

/*
 * Adds the directories of LEAKWATCH_USER_CODE (colon-separated) to the
 * --user-code ones, and points options->report.user_code at them when
 * there are any. Returns 0 or -ENOMEM (reported). Release them with
 * lw_code_dirs_fini(&options->user_code).
 */
int lw_load_user_code(struct lw_output_options *options);

/* Reports an option getopt_long rejected (it returned '?' or ':'). */
void lw_bad_option(int c, char **argv);

/*
 * The options every command ends its switch with: -h/--help prints
 * usage on stdout (the command exits 0), anything else is a bad option
 * (reported; the command exits LW_EXIT_USAGE). Returns that exit status.
 */
int lw_last_option(int c, char **argv, void (*print_usage)(FILE *out));

/*
 * What the gate of `check` and `run` judges: each limit that was given.
 * Growth is judged as the findings judge it, by the sites whose memory
 * grows from step to step; the peaks are the highest step peak of device
 * memory (allocated) and of PyTorch's reserved pool; fail_on names the
 * diagnosed kinds (lw_category) and the confidence that fail.
 */
struct lw_gate {
	bool growth, reserved_growth, peak, reserved_peak, fail_on;
	uint64_t max_growth, max_reserved_growth, max_peak, max_reserved_peak;
	/* --fail-on: the kinds named, and the least confidence (enum
	 * lw_confidence) of any leak that fails; -1: none by confidence. */
	bool fail_kinds[LW_CATEGORY_COUNT];
	int fail_confidence;
	char fail_on_text[128];	/* as the user wrote it, for the verdict */
	size_t min_steps;
};

/* Whether any limit of gate was given. */
static inline bool lw_gate_any(const struct lw_gate *gate)
{
	return gate->growth || gate->reserved_growth || gate->peak ||
	       gate->reserved_peak || gate->fail_on;
}

/*
 * Parses one gate option's value (option: "--max-growth", ...,
 * "--fail-on", or an environment variable's name, which says which) into
 * gate. Prints the problem in one line and returns -EINVAL.
 */
int lw_gate_option(struct lw_gate *gate, const char *option,
		   const char *value);

/* The gate options' getopt_long() entries, for check's and run's tables. */
#define LW_GATE_LONG_OPTIONS                                                  \
	{ "max-growth", required_argument, NULL, 'G' },                       \
	{ "max-reserved-growth", required_argument, NULL, 'g' + 256 },        \
	{ "max-peak", required_argument, NULL, 'p' + 256 },                   \
	{ "max-reserved-peak", required_argument, NULL, 'r' + 256 },          \
	{ "fail-on", required_argument, NULL, 'f' + 256 }
/* Handles c when it is one of them: 1; 0 when not; -EINVAL (reported). */
int lw_gate_getopt(struct lw_gate *gate, int c, const char *arg);

/*
 * The gate on one trace (`leakwatch check`), its verdict written to out:
 * 0 within every limit, 1 over one, LW_CHECK_UNJUDGED when it cannot be
 * judged (every allocation failed, a damaged trace, no PyTorch pool for a
 * reserved limit), LW_CHECK_TOO_FEW_STEPS (fewer than gate->min_steps
 * steps), a negative errno
 * when the trace cannot be read (reported). Sites that match a
 * suppression in rules (NULL: none) are left out of the verdict.
 */
#define LW_CHECK_UNJUDGED 2
/* ... for fewer steps than it needs: the one `run` forgives a helper
 * process (a compiler, a data loader worker) when another trace of the
 * run was judged. */
#define LW_CHECK_TOO_FEW_STEPS 3
int lw_check_file(FILE *out, const char *path, const struct lw_gate *gate,
		  const struct lw_rules *rules,
		  const struct lw_code_dirs *user_code);

/*
 * The merged view of several traces (report and check): per trace growth,
 * the imbalance between them, the sites common to all (their lines found
 * with the user's code named in user_code, NULL: none). Unreadable traces
 * are left out silently (reported elsewhere), one given twice is counted
 * once (said on stderr), and an empty or damaged one that cannot be judged
 * is listed but not compared; nothing for fewer than two.
 * Returns 0 or -ENOMEM.
 */
int lw_merged_view(FILE *out, const char *const *paths, size_t count,
		   size_t min_steps, const struct lw_code_dirs *user_code);

int lw_cmd_run(int argc, char **argv);
int lw_cmd_diff(int argc, char **argv);
void lw_diff_usage(FILE *out);
void lw_run_usage(FILE *out);

#endif
