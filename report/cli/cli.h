/* SPDX-License-Identifier: MIT */
/*
 * What every command of the command line uses (main.c, check.c, run.c,
 * diff.c, merge.c): the error line, the options they share and their
 * parsers, the rules and the user's code they load, the exit statuses and
 * the synopses. Below the commands: it calls none of them.
 */
#ifndef LW_CLI_H
#define LW_CLI_H

#include <stdbool.h>
#include <stddef.h>
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
 * Flushes out, named name in the error ("standard output"): 0, or -EIO
 * after one line on stderr when it could not be written (a full disk, a
 * closed descriptor).
 */
int lw_flush_output(FILE *out, const char *name);

/* Prints "leakwatch: " and the formatted line to stderr. */
__attribute__((format(printf, 1, 2)))
void lw_error(const char *fmt, ...);

/* "leakwatch: PATH: MESSAGE" on err (stderr, or where a command gathers
 * its lines), standard output flushed first. */
void lw_put_file_error(FILE *err, const char *path, const char *message);

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

#endif
