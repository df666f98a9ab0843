/* SPDX-License-Identifier: MIT */
/*
 * The shim's warnings: one line on stderr per kind, at most once per
 * process, kept here (warn.c) and copied into the trace by the tracker.
 * What any part of the shim includes to warn, instead of tracker.h.
 */
#ifndef LW_WARN_H
#define LW_WARN_H

#include <stddef.h>

enum lw_warning {
	LW_WARN_NO_RUNTIME,
	LW_WARN_TRACE_OPEN,
	LW_WARN_TRACE_WRITE,
	LW_WARN_OUT_OF_MEMORY,
	LW_WARN_BAD_ENV,
	LW_WARN_PYTHON,
	LW_WARN_DEEPBIND,
	LW_WARN_MANIFEST,
	LW_WARN_HOLDERS,
	LW_WARN_ORIGINS,
	LW_WARN_BOUNDED_CONTEXTS,
	LW_WARN_COUNT,
};

/* Prints "leakwatch: warning: ..." once per kind, and records it in the
 * trace. The format is always a literal of the shim's. */
void lw_warn_once(enum lw_warning kind, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The kinds warned about so far, a bit each: the tracker compares it with
 * what its trace holds at each event, a plain load. */
extern unsigned lw_warned_mask;

/* What a kind warned about said (once its bit is set). */
const char *lw_warning_text(enum lw_warning kind);

/* Writes all of text to stderr with write(2), retrying EINTR; no stdio,
 * so it is safe from the hooks' contexts. Gives up silently on error. */
void lw_write_stderr(const char *text, size_t len);

#endif
