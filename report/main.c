/* SPDX-License-Identifier: MIT */
/*
 * The leakwatch command line: `leakwatch report`, `leakwatch run` (run.c),
 * help and version.
 *
 * Exit status: 0 on success; 2 for bad usage or a trace that cannot be read
 * (one line "leakwatch: PATH: PROBLEM" on stderr for each); `run` exits
 * with the status of the program it ran.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "lw-report-config.h"
#include "trace-file.h"

static void report_usage(FILE *out)
{
	fputs("usage: leakwatch report [--format text|json] [-o FILE] [--top N] [--frames N] TRACE...\n"
	      "\n"
	      "Prints the GPU memory each trace left allocated, grouped by the call stack\n"
	      "that allocated it, largest first.\n"
	      "\n"
	      "  --format text|json  text for people (default), or JSON for programs\n"
	      "  -o, --output FILE   write the report to FILE instead of standard output\n"
	      "  --top N             text: show the N largest sites (default 10; 0: all)\n"
	      "  --frames N          text: show N frames of each stack (default 12; 0: all)\n"
	      "  -h, --help          show this help\n"
	      "\n"
	      "JSON lists every site and frame. Several traces give several reports.\n"
	      "A trace without an END record (the process was killed, or still runs) is\n"
	      "reported up to its last complete record and marked TRUNCATED.\n",
	      out);
}

static void usage(FILE *out)
{
	fputs("usage: leakwatch report [--format text|json] [-o FILE] [--top N] [--frames N] TRACE...\n"
	      "       leakwatch run [--trace PATTERN] [--format text|json] [-o FILE] [--no-report] -- CMD [ARGS...]\n"
	      "       leakwatch help [report|run]\n"
	      "       leakwatch --version\n"
	      "\n"
	      "leakwatch finds GPU memory leaks. `leakwatch run` runs a program with the\n"
	      "leakwatch shim preloaded, which records every CUDA allocation and free in a\n"
	      "trace, then reports what was never freed. `leakwatch report` reports on\n"
	      "traces written before.\n"
	      "\n"
	      "Exit status: 0 on success, 2 for bad usage or an unreadable trace; `run`\n"
	      "exits with the program's status (128+N if it was killed by signal N).\n",
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

int lw_parse_format(const char *value, enum lw_format *out)
{
	if (strcmp(value, "text") == 0) {
		*out = LW_FORMAT_TEXT;
	} else if (strcmp(value, "json") == 0) {
		*out = LW_FORMAT_JSON;
	} else {
		lw_error("unknown format '%s' (use text or json)", value);
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

static void put_file_error(const char *path, const char *message)
{
	fflush(stdout);
	fputs("leakwatch: ", stderr);
	lw_put_text_str(stderr, path);
	fprintf(stderr, ": %s\n", message);
	fflush(stderr);
}

int lw_report_files(FILE *out, const char *const *paths, size_t count,
		    const struct lw_output_options *options)
{
	bool json = options->format == LW_FORMAT_JSON;
	bool list = json && (count != 1 || options->json_list);
	bool first = true;
	int failed = 0;

	if (list)
		lw_json_begin_list(out);
	for (size_t i = 0; i < count; i++) {
		struct lw_trace_file tf;
		char message[256];
		int rc;

		rc = lw_trace_file_open(&tf, paths[i], message, sizeof(message));
		if (rc == 0) {
			if (!json && !first)
				putc('\n', out);
			if (json)
				rc = lw_render_json(out, &tf.report, list, first);
			else
				rc = lw_render_text(out, &tf.report,
						    &options->report);
			if (rc < 0)
				snprintf(message, sizeof(message), "%s",
					 strerror(-rc));
			first = false;
		}
		lw_trace_file_close(&tf);
		/* The report so far first, then the error line. */
		fflush(out);
		if (rc < 0) {
			put_file_error(paths[i], message);
			failed++;
		}
	}
	if (list)
		lw_json_end_list(out);
	if (fflush(out) != 0 || ferror(out))
		return -(errno ? errno : EIO);
	return failed;
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
	default:
		return 0;
	}
}

static int cmd_report(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "format", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 'T' },
		{ "frames", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct lw_output_options options = {
		.format = LW_FORMAT_TEXT,
		.report = { .top = LW_DEFAULT_TOP, .frames = LW_DEFAULT_FRAMES },
	};
	const char *output = NULL;
	FILE *out = stdout;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1) {
		rc = lw_output_option(c, optarg, &options, &output);
		if (rc < 0)
			return LW_EXIT_USAGE;
		if (rc > 0)
			continue;
		switch (c) {
		case 'h':
			report_usage(stdout);
			return 0;
		default:
			lw_bad_option(c, argv);
			return LW_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		lw_error("report: no trace given (usage: leakwatch report [OPTIONS] TRACE...)");
		return LW_EXIT_USAGE;
	}
	if (output) {
		out = fopen(output, "w");
		if (!out) {
			lw_error("%s: %s", output, strerror(errno));
			return LW_EXIT_USAGE;
		}
	}
	rc = lw_report_files(out, (const char *const *)argv + optind,
			     (size_t)(argc - optind), &options);
	if (rc < 0)
		lw_error("%s: %s", output ? output : "standard output",
			 strerror(-rc));
	if (out != stdout && fclose(out) != 0 && rc >= 0) {
		lw_error("%s: %s", output, strerror(errno));
		rc = -EIO;
	}
	return rc == 0 ? 0 : LW_EXIT_USAGE;
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
	} else if (strcmp(argv[1], "report") == 0) {
		report_usage(stdout);
	} else if (strcmp(argv[1], "run") == 0) {
		lw_run_usage(stdout);
	} else {
		lw_error("no help for '%s' (try report or run)", argv[1]);
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
	if (strcmp(command, "run") == 0)
		return lw_cmd_run(argc - 1, argv + 1);
	if (command[0] == '-')
		lw_error("unknown option '%s' (try 'leakwatch --help')", command);
	else
		lw_error("unknown command '%s' (try 'leakwatch --help')", command);
	return LW_EXIT_USAGE;
}
