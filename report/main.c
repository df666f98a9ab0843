/* SPDX-License-Identifier: MIT */
/*
 * The leakwatch command line: the dispatcher, on top of every command
 * (`leakwatch check` in check.c, `leakwatch run` in run.c, `leakwatch diff`
 * in diff.c), with `leakwatch report`, help and version.
 *
 * Exit status: 0 on success; 2 for bad usage or a trace that cannot be read
 * (one line "leakwatch: PATH: PROBLEM" on stderr for each); `check` exits 1
 * when memory grows faster than allowed; `run` exits with the status of the
 * program it ran.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "formats.h"
#include "lw-report-config.h"
#include "output.h"

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
	      "grows faster per training step, or peaks higher, than allowed, or a leak\n"
	      "of a kind named is diagnosed: a CI gate. `leakwatch diff`\n"
	      "compares two runs line by line (exit 1 when a location newly grows).\n"
	      "\n"
	      "Exit status: 0 on success, 2 for bad usage or an unreadable trace; `check`\n"
	      "exits 1 when a trace passes a limit and 3 when it cannot be judged;\n"
	      "`diff` exits 1 on a regression and 3 when it cannot judge; `run` exits\n"
	      "with the program's status (128+N if it was killed by signal N; with\n"
	      "a gate option, 23 when it failed the gate, 24 when it could not be judged).\n",
	      out);
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

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
	} else if (strcmp(argv[1], "report") == 0) {
		report_usage(stdout);
	} else if (strcmp(argv[1], "check") == 0) {
		lw_check_usage(stdout);
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
		return lw_cmd_check(argc - 1, argv + 1);
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
