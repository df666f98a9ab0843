/* SPDX-License-Identifier: MIT */
/* The shim's settings, read once from the environment. */
#ifndef LW_CONFIG_H
#define LW_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define LW_DEFAULT_TRACE_PATTERN "leakwatch-%p.trace"
/* The default when the launcher set RANK or LOCAL_RANK (torchrun does). */
#define LW_DEFAULT_RANK_TRACE_PATTERN "leakwatch-rank%r-%p.trace"
#define LW_DEFAULT_MAX_FRAMES 64
#define LW_MAX_FRAMES_LIMIT 128

struct lw_config {
	char out_pattern[PATH_MAX]; /* LEAKWATCH_OUT */
	char manifest[PATH_MAX];    /* LEAKWATCH_MANIFEST (set by leakwatch run) */
	int quiet;                  /* LEAKWATCH_QUIET: no exit summary */
	int disabled;               /* LEAKWATCH_DISABLE */
	unsigned max_frames;        /* LEAKWATCH_MAX_FRAMES */
	int fast_unwind;            /* LEAKWATCH_FAST_UNWIND */
	char rank[16];              /* $RANK, else $LOCAL_RANK; "" */
	unsigned live_every;        /* LEAKWATCH_LIVE_EVERY: 0 off */
	int use_signal;             /* LEAKWATCH_SIGNAL: SIGUSR2; by default
				     * only with LEAKWATCH_LIVE_EVERY */
	int holders;                /* LEAKWATCH_HOLDERS: the holder search */
	double holders_budget;      /* LEAKWATCH_HOLDERS_BUDGET, seconds */
	unsigned min_steps;         /* LEAKWATCH_MIN_STEPS (the gate warns) */
	int bounded;                /* LEAKWATCH_TRACE_DETAIL: bounded (the
				     * default) or full */
	/* LEAKWATCH_STEP_AT=file:line: a step each time the line is
	 * reached; step_at_file "" when not set. */
	char step_at_file[PATH_MAX];
	int step_at_line;
};

/*
 * Reads the LEAKWATCH_* variables. A value that does not parse is reported
 * with one warning naming the variable, and the default is used.
 */
void lw_config_load(struct lw_config *config);

/*
 * A setting read before lw_config_load() (by a constructor) that does not
 * parse: name is the variable, fmt and what follows the warning's text. It
 * is said in lw_config_load()'s one warning line, so only by a process
 * that starts tracing. Not thread-safe: for constructors.
 */
void lw_config_defer_problem(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Expands the trace pattern for pid into out: %p is the pid, %h the host
 * name, %r the rank (nothing when there is none), %% a percent sign. A relative result is made absolute against the
 * working directory. Returns 0, or -ENAMETOOLONG.
 */
int lw_config_trace_path(const struct lw_config *config, pid_t pid,
			 char *out, size_t size);

/* Parses a boolean setting ("1", "0", "yes", "no", "true", "false", "on",
 * "off", any case). Returns 0 or 1, or -1 if it is none of those. */
int lw_parse_bool(const char *value);

#endif
