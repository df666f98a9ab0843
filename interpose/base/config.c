/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-growth.h"
#include "warn.h"

int lw_parse_bool(const char *value)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off", "" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (strcasecmp(value, yes[i]) == 0)
			return 1;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (strcasecmp(value, no[i]) == 0)
			return 0;
	return -1;
}

/*
 * Problems with the settings: the first in full, then the names of the
 * others, all in the one warning line lw_config_load() prints.
 */
struct problems {
	char line[240];
	unsigned count;
};

static void vproblem(struct problems *p, const char *name, const char *fmt,
		     va_list ap) __attribute__((format(printf, 3, 0)));

static void vproblem(struct problems *p, const char *name, const char *fmt,
		     va_list ap)
{
	size_t len = strlen(p->line);

	if (p->count++ == 0)
		vsnprintf(p->line, sizeof(p->line), fmt, ap);
	else if (len < sizeof(p->line))
		snprintf(p->line + len, sizeof(p->line) - len, "%s%s",
			 p->count == 2 ? "; also not valid: " : ", ", name);
}

static void problem(struct problems *p, const char *name, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));

static void problem(struct problems *p, const char *name, const char *fmt,
		    ...)
{
	va_list ap;

	va_start(ap, fmt);
	vproblem(p, name, fmt, ap);
	va_end(ap);
}

/*
 * Problems found by the library's constructors (the gate's and PyTorch's
 * settings, read before the program runs), said with the others at the
 * first allocation: a process that never allocates says nothing.
 */
static struct problems early_problems;

void lw_config_defer_problem(const char *name, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vproblem(&early_problems, name, fmt, ap);
	va_end(ap);
}

static int read_bool(struct problems *p, const char *name, int fallback)
{
	const char *value = getenv(name);

	if (!value)
		return fallback;
	int b = lw_parse_bool(value);
	if (b < 0) {
		problem(p, name, "%s='%.32s' is not a yes/no value (1, 0, yes, "
			"no, true, false, on, off); using %s", name, value,
			fallback ? "yes" : "no");
		return fallback;
	}
	return b;
}

static unsigned read_count(struct problems *p, const char *name, unsigned lo,
			   unsigned hi, unsigned fallback)
{
	const char *value = getenv(name);
	char *end;

	if (!value)
		return fallback;
	errno = 0;
	unsigned long v = strtoul(value, &end, 10);
	if (errno || end == value || *end || value[0] == '-' || v < lo ||
	    v > hi) {
		problem(p, name, "%s='%.32s' is not a whole number from %u to "
			"%u; using %u", name, value, lo, hi, fallback);
		return fallback;
	}
	return (unsigned)v;
}

static double read_seconds(struct problems *p, const char *name, double lo,
			   double hi, double fallback)
{
	const char *value = getenv(name);
	char *end;

	if (!value)
		return fallback;
	errno = 0;
	double v = strtod(value, &end);
	if (errno || end == value || *end || !(v >= lo && v <= hi)) {
		problem(p, name, "%s='%.32s' is not a number of seconds from "
			"%g to %g; using %g", name, value, lo, hi, fallback);
		return fallback;
	}
	return v;
}

/* A setting that is one of two words, any case: 1 for yes, 0 for no. */
static int read_choice(struct problems *p, const char *name, const char *yes,
		       const char *no, int fallback)
{
	const char *value = getenv(name);

	if (!value)
		return fallback;
	if (strcasecmp(value, yes) == 0)
		return 1;
	if (strcasecmp(value, no) == 0)
		return 0;
	problem(p, name, "%s='%.32s' is neither %s nor %s; using %s", name,
		value, yes, no, fallback ? yes : no);
	return fallback;
}

static void read_path(struct problems *p, const char *name, char *out,
		      size_t size, const char *fallback)
{
	const char *value = getenv(name);

	if (value && strlen(value) >= size) {
		problem(p, name, "%s is longer than %zu bytes; using the "
			"default", name, size - 1);
		value = NULL;
	}
	if (!value || !value[0])
		value = fallback;
	snprintf(out, size, "%s", value);
}

/*
 * The process's rank in a multi-process job: $RANK (global, set by
 * torchrun, torch.distributed.launch, Slurm wrappers), else $LOCAL_RANK.
 * Only digits are taken: the value goes into file names.
 */
static void read_rank(char *out, size_t size)
{
	static const char *const names[] = { "RANK", "LOCAL_RANK" };

	out[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *value = getenv(names[i]);
		size_t n = value ? strspn(value, "0123456789") : 0;

		if (n && !value[n] && n < size) {
			memcpy(out, value, n + 1);
			return;
		}
	}
}

/*
 * LEAKWATCH_MIN_STEPS, the steps a site must grow over before it is
 * judged (and searched for its holder during the run): read here without a
 * warning, which the growth gate (gate.c) gives for a bad value.
 */
static unsigned read_min_steps(void)
{
	const char *value = getenv("LEAKWATCH_MIN_STEPS");
	unsigned long long n;
	char *end;

	if (!value || !*value || *value == '-')
		return LW_DEFAULT_MIN_STEPS;
	errno = 0;
	n = strtoull(value, &end, 10);
	if (errno || *end || n == 0 || n > UINT_MAX)
		return LW_DEFAULT_MIN_STEPS;
	return (unsigned)n;
}

/*
 * LEAKWATCH_USER_CODE's directories (or scripts) must exist: a misspelt one
 * would judge the program's code a library's, with nothing to say why.
 * Relative ones are the working directory's, as origins.c reads them.
 */
static void check_user_code(struct problems *p)
{
	const char *list = getenv("LEAKWATCH_USER_CODE");
	char dir[PATH_MAX];
	struct stat st;

	while (list && *list) {
		size_t len = strcspn(list, ":");

		if (len && len < sizeof(dir)) {
			memcpy(dir, list, len);
			dir[len] = '\0';
			if (stat(dir, &st) < 0) {
				problem(p, "LEAKWATCH_USER_CODE",
					"LEAKWATCH_USER_CODE names %.160s, which "
					"does not exist; it is ignored", dir);
				return;
			}
		}
		list += len + (list[len] == ':');
	}
}

/*
 * LEAKWATCH_STEP_AT=file:line, the line whose every reach ends a step: a
 * file (a path, or its last parts) and a line number after the last colon.
 * A malformed value is said, and the run goes on without it.
 */
static void read_step_at(struct problems *p, struct lw_config *config)
{
	const char *value = getenv("LEAKWATCH_STEP_AT");
	const char *colon;
	unsigned long line = 0;
	char *end = NULL;

	if (!value || !value[0])
		return;
	colon = strrchr(value, ':');
	if (colon) {
		errno = 0;
		line = strtoul(colon + 1, &end, 10);
	}
	if (!colon || colon == value || !colon[1] || *end || errno ||
	    colon[1] == '-' || colon[1] == '+' || line == 0 ||
	    line > INT_MAX ||
	    (size_t)(colon - value) >= sizeof(config->step_at_file)) {
		problem(p, "LEAKWATCH_STEP_AT",
			"LEAKWATCH_STEP_AT='%.64s' is not FILE:LINE (such as "
			"serve.py:31); no step is marked at a line", value);
		return;
	}
	memcpy(config->step_at_file, value, (size_t)(colon - value));
	config->step_at_file[colon - value] = '\0';
	config->step_at_line = (int)line;
}

void lw_config_load(struct lw_config *config)
{
	struct problems p = early_problems;

	memset(config, 0, sizeof(*config));
	config->disabled = read_bool(&p, "LEAKWATCH_DISABLE", 0);
	config->quiet = read_bool(&p, "LEAKWATCH_QUIET", 0);
	config->max_frames = read_count(&p, "LEAKWATCH_MAX_FRAMES", 1,
					 LW_MAX_FRAMES_LIMIT,
					 LW_DEFAULT_MAX_FRAMES);
	config->fast_unwind = read_bool(&p, "LEAKWATCH_FAST_UNWIND", 1);
	read_rank(config->rank, sizeof(config->rank));
	read_path(&p, "LEAKWATCH_OUT", config->out_pattern,
		  sizeof(config->out_pattern),
		  config->rank[0] ? LW_DEFAULT_RANK_TRACE_PATTERN
				  : LW_DEFAULT_TRACE_PATTERN);
	config->live_every = read_count(&p, "LEAKWATCH_LIVE_EVERY", 0, UINT_MAX,
					 0);
	/* SIGUSR2 is the program's unless the user asked for the live view
	 * or for the signal: a program that raises it expects to end. */
	config->use_signal = read_bool(&p, "LEAKWATCH_SIGNAL",
				       config->live_every != 0);
	read_path(&p, "LEAKWATCH_MANIFEST", config->manifest,
		  sizeof(config->manifest), "");
	config->holders = read_bool(&p, "LEAKWATCH_HOLDERS", 1);
	config->holders_budget = read_seconds(&p, "LEAKWATCH_HOLDERS_BUDGET",
					      0.001, 3600, 2.0);
	config->min_steps = read_min_steps();
	config->bounded = read_choice(&p, "LEAKWATCH_TRACE_DETAIL", "bounded",
				      "full", 1);
	check_user_code(&p);
	read_step_at(&p, config);
	if (p.count)
		lw_warn_once(LW_WARN_BAD_ENV, "%s", p.line);
}

/* Appends s to out at *len; false if it does not fit. */
static int append(char *out, size_t size, size_t *len, const char *s,
		  size_t n)
{
	if (*len + n >= size)
		return 0;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
	return 1;
}

int lw_config_trace_path(const struct lw_config *config, pid_t pid,
			 char *out, size_t size)
{
	const char *p = config->out_pattern;
	size_t len = 0;
	char tmp[256];

	out[0] = '\0';
	if (p[0] != '/') {
		if (!getcwd(out, size))
			return -ENAMETOOLONG;
		len = strlen(out);
		if (!append(out, size, &len, "/", 1))
			return -ENAMETOOLONG;
	}
	for (; *p; p++) {
		int ok = 1;
		if (p[0] == '%' && p[1] == 'p') {
			int n = snprintf(tmp, sizeof(tmp), "%d", (int)pid);
			ok = append(out, size, &len, tmp, (size_t)n);
			p++;
		} else if (p[0] == '%' && p[1] == 'h') {
			if (gethostname(tmp, sizeof(tmp)) < 0)
				snprintf(tmp, sizeof(tmp), "host");
			tmp[sizeof(tmp) - 1] = '\0';
			ok = append(out, size, &len, tmp, strlen(tmp));
			p++;
		} else if (p[0] == '%' && p[1] == 'r') {
			ok = append(out, size, &len, config->rank,
				    strlen(config->rank));
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			ok = append(out, size, &len, "%", 1);
			p++;
		} else {
			ok = append(out, size, &len, p, 1);
		}
		if (!ok)
			return -ENAMETOOLONG;
	}
	return 0;
}
