/* SPDX-License-Identifier: MIT */
/*
 * What every command uses (cli.h): the error line, the shared options and
 * their parsers, the rules and the user's code.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats.h"
#include "lw-report-config.h"
#include "lw-text.h"

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

void lw_put_file_error(FILE *err, const char *path, const char *message)
{
	fflush(stdout);
	fputs("leakwatch: ", err);
	lw_put_text_str(err, path);
	fprintf(err, ": %s\n", message);
	fflush(err);
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
		lw_put_file_error(stderr, path, message);
	return rc;
}

struct rule_list {
	struct lw_rules *rules;
	bool suppressions;
};

static int load_rule_item(const char *path, void *ctx)
{
	const struct rule_list *l = ctx;

	return load_rule_file(l->rules, path, l->suppressions);
}

/* Each path of a colon-separated list; empty items are skipped. */
static int load_rule_list(struct lw_rules *rules, const char *list,
			  bool suppressions)
{
	struct rule_list l = { rules, suppressions };

	return lw_text_each_item(list, load_rule_item, &l);
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
	case 'C': {
		struct stat st;

		if (!arg[0]) {
			lw_error("--user-code needs a directory");
			return -EINVAL;
		}
		/* A misspelt directory would silently judge the program's
		 * code a library's. (A file names one script.) */
		if (stat(arg, &st) < 0) {
			lw_error("--user-code %s: %s", arg, errno == ENOENT
				 ? "no such directory" : strerror(errno));
			return -EINVAL;
		}
		if (lw_code_dirs_add(&options->user_code, arg) < 0) {
			lw_error("%s", strerror(ENOMEM));
			return -EINVAL;
		}
		return 1;
	}
	default:
		return 0;
	}
}
