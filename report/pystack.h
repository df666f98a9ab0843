/* SPDX-License-Identifier: MIT */
/* Python-first stacks: folding the frames that only carry calls. */
#ifndef LW_PYSTACK_H
#define LW_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>

#include "render.h"

/*
 * Folds, in place, each run of native frames that belongs to the Python
 * interpreter, to the foreign-function layer (libffi, ctypes) or to
 * pybind11's dispatch into one frame whose folded field counts them; and
 * past the outermost Python frame, when it holds nothing else, the start
 * of the process or thread (the interpreter's main, the C library's).
 * Stacks without Python frames, and every stack under --native
 * (report->native), stay as they are. Returns 0 or -ENOMEM.
 */
int lw_fold_stack(const struct lw_report *report, struct lw_frame *frames,
		  size_t *count);

/* Whether a resolved native frame is the interpreter's own. */
bool lw_frame_is_interpreter(const struct lw_report *report,
			     const struct lw_symbol *sym);

#endif
