/* SPDX-License-Identifier: MIT */
/*
 * What the commands share above cli.h: the report of trace files
 * (report-files.c: `report` and `run`), the gate (check.c: `check` and
 * `run`), each command's entry, which main.c dispatches to, and the
 * merged view of several traces (merge.c) that `check` and the text
 * report end with.
 */
#ifndef LW_COMMANDS_H
#define LW_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "diagnose.h"
#include "rules.h"
#include "usercode.h"

struct lw_trace_file;

/*
 * The report of trace files, as `report` and `run` write it: each trace
 * read and analysed on a pool thread (trace-pool.h), its report written
 * in order on the command's thread.
 *
 * Reports each trace in paths to out. A trace that cannot be read gets one
 * line "leakwatch: PATH: PROBLEM" on stderr and is skipped. Returns the
 * number of such traces, or a negative errno when out could not be written.
 */
int lw_report_files(FILE *out, const char *const *paths, size_t count,
		    const struct lw_output_options *options);

/*
 * What a command does with each trace once its report is written, before
 * it is closed, so that the trace is read and analysed once for both
 * (`run`'s gate): trace(ctx, index, tf, result, message), on the command's
 * thread, in the traces' order; tf read and analysed when result is 0,
 * otherwise result is the read's negative errno and message its problem.
 */
struct lw_report_then {
	void (*trace)(void *ctx, size_t index, struct lw_trace_file *tf,
		      int result, const char *message);
	void *ctx;
};

/* lw_report_files(), then, for each trace, then (NULL: nothing). */
int lw_report_files_then(FILE *out, const char *const *paths, size_t count,
			 const struct lw_output_options *options,
			 const struct lw_report_then *then);

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
 * The same verdict on a trace read already, with its read's result rc:
 * when 0, tf is read, its rules and user code set and its report's steps
 * are gate->min_steps; when negative, message holds the problem, reported
 * in one line on err. A trace analysed already (lw_trace_file_analyse():
 * its report's analysis) is judged from that analysis; otherwise its
 * growth is judged here, and it is analysed for --fail-on alone. message
 * (message_size bytes) may be rewritten. tf is left open.
 */
int lw_check_trace(FILE *out, FILE *err, const char *path,
		   struct lw_trace_file *tf, int rc, char *message,
		   size_t message_size, const struct lw_gate *gate);

int lw_cmd_check(int argc, char **argv);
int lw_cmd_run(int argc, char **argv);
int lw_cmd_diff(int argc, char **argv);
void lw_check_usage(FILE *out);
void lw_diff_usage(FILE *out);
void lw_run_usage(FILE *out);

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

#endif
