/* SPDX-License-Identifier: MIT */
/*
 * Where the program's Python code comes from: the interpreter's facts
 * about its import path, read by pypaths.c and written to the trace as
 * PYPATH records (common/lw-format.h) by origins.c, for the report to tell
 * the user's code from libraries.
 *
 * Nothing of the program runs and nothing in it changes: no bytecode, no
 * Python function, no attribute access (which a __getattr__ or property
 * could answer), no Python object made (each would move the cycle
 * collector's count), no import. Objects are read with the GIL held through
 * the C API calls that only read (PyDict_Next, PyList_GetItem, ...) and
 * pyframes.h; files with the C library, each directory read to a bound.
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

/* ---- between origins.c and pypaths.c ---- */

/*
 * Calls fn(kind, path, name, ctx) for each fact found now: kind an enum
 * lw_pypath_kind, path absolute and normalised, name "" for none; the
 * strings live for the call only, and the same fact may come more than once.
 * In the interpreter's main thread with the GIL held. Returns 0; -ENOTSUP
 * when this is not a CPython the shim reads (pyframes.h), nothing said;
 * another -errno when the interpreter's objects are not as expected or
 * memory ran out, with the facts found until then given.
 */
int lw_pypaths_read(void (*fn)(unsigned kind, const char *path,
			       const char *name, void *ctx),
		    void *ctx);

#endif
