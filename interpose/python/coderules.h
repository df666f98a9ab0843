/* SPDX-License-Identifier: MIT */
/*
 * Where the program's Python code comes from, as a reader of stacks asks
 * it: the rules made of the facts about the interpreter's import path
 * (pypaths.c reads them, holders/origins.c writes them to the trace and
 * keeps them) and LEAKWATCH_USER_CODE (lw-coderoots.h). Nothing of the
 * program runs (see origins.h).
 */
#ifndef LW_CODERULES_H
#define LW_CODERULES_H

#include <stddef.h>

#include "lw-coderoots.h"
#include "lw-origin.h"

/*
 * Where a Python file (as its code object names it) comes from, by the
 * facts recorded so far and LEAKWATCH_USER_CODE; by its path before any.
 * With the GIL (the exit summary at the program's end).
 */
enum lw_code_origin lw_origins_code_origin(const char *file);

/* The rules made again from the facts so far (count of them); on failure
 * the rules stay as they were. */
void lw_code_rules_make(const struct lw_code_fact *facts, size_t count);

/* No rules: a new trace holds none of the facts. */
void lw_code_rules_drop(void);

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
