/* SPDX-License-Identifier: MIT */
/*
 * Where the program's Python code comes from (origins.c): the
 * interpreter's facts about its import path, written to the trace as
 * PYPATH records (common/lw-format.h) for the report to tell the user's
 * code from libraries.
 */
#ifndef LW_ORIGINS_H
#define LW_ORIGINS_H

#include "lw-origin.h"

/*
 * Records the facts this trace does not hold yet. In the interpreter's
 * main thread with the GIL held (a pending call, or the program-end
 * callback); runs none of the program's code. A failure is warned about
 * once, and the program carries on.
 */
void lw_origins_record(void);

/* Whether the early reading (once the first Python stack is seen) is
 * still to come, and that reading (lw_origins_record() the first time). */
int lw_origins_early_due(void);
void lw_origins_record_early(void);

/*
 * Where a Python file (as its code object names it) comes from, by the
 * facts recorded so far and LEAKWATCH_USER_CODE (lw-coderoots.h); by its
 * path before any. With the GIL (the exit summary at the program's end).
 */
enum lw_code_origin lw_origins_code_origin(const char *file);

/* In a forked child: its new trace holds none of the facts. */
void lw_origins_reset(void);

#endif
