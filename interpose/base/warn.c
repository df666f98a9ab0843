/* SPDX-License-Identifier: MIT */
/*
 * The shim's warnings (warn.h): said on stderr at once, and kept for the
 * tracker to copy into the trace, whichever room warns.
 */
#include "warn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static char warnings[LW_WARN_COUNT][256];
unsigned lw_warned_mask;

void lw_warn_once(enum lw_warning kind, const char *fmt, ...)
{
	char line[300];
	va_list ap;

	if (__atomic_fetch_or(&lw_warned_mask, 1u << kind, __ATOMIC_ACQ_REL) &
	    (1u << kind))
		return;
	va_start(ap, fmt);
	vsnprintf(warnings[kind], sizeof(warnings[kind]), fmt, ap);
	va_end(ap);
	int n = snprintf(line, sizeof(line), "leakwatch: warning: %s\n",
			 warnings[kind]);
	if (n > 0)
		lw_write_stderr(line, (size_t)n < sizeof(line) ? (size_t)n
							    : sizeof(line) - 1);
}

const char *lw_warning_text(enum lw_warning kind)
{
	return warnings[kind];
}

void lw_write_stderr(const char *text, size_t len)
{
	while (len > 0) {
		ssize_t w = write(STDERR_FILENO, text, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		text += w;
		len -= (size_t)w;
	}
}
