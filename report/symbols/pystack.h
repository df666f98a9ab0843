/* SPDX-License-Identifier: MIT */
/* Python-first stacks: folding the frames that only carry calls. */
#ifndef LW_PYSTACK_H
#define LW_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "report.h"

/*
 * Folds, in place, the runs of native frames that say nothing to the
 * program's author into one frame each, whose folded field counts them
 * and fold says what they were (enum lw_fold_kind):
 *   - each run of the framework's libraries (lw_module_is_framework():
 *     PyTorch's dispatcher, kernels and allocator, CUDA's libraries),
 *     named by the operator it ran (struct lw_fold_name);
 *   - in a stack with Python frames, each run of the interpreter's, the
 *     foreign-function layer's (libffi, ctypes) and pybind11's dispatch,
 *     and past the outermost Python frame, when it holds nothing else,
 *     the start of the process or thread (the interpreter's main, the C
 *     library's).
 * A stack made on another thread for Python code (autograd's engine
 * thread) is rewritten with its Python frames outermost, as the call
 * went. Stacks of a program that ran no Python (no INFO "python") and
 * every stack under --native (report->native) stay as they are; so do
 * the interpreter's frames in traces that do not name its module (INFO
 * "python_eval"). Returns 0 or -ENOMEM.
 */
int lw_fold_stack(const struct lw_report *report, struct lw_frame *frames,
		  size_t *count);

/*
 * The folding lw_fold_stack() would do, without doing it: marks[i] (count
 * entries) is the frame that stands for frames[i] once folded (its folded,
 * fold and name), or fold LW_FOLD_NONE when frames[i] stays itself.
 * Returns 0 or -ENOMEM.
 */
int lw_fold_marks(const struct lw_report *report,
		  const struct lw_frame *frames, size_t count,
		  struct lw_frame *marks);

/*
 * The name of a folded frame, through put (one of the escaping writers):
 * for the framework's run "aten::OP", "NODE: aten::OP" when an autograd
 * node ran it, else the node, else its module's file name ("framework"
 * when none is known); "interpreter" or "start-up" for the others.
 */
void lw_put_fold_label(FILE *out, const struct lw_frame *folded,
		       void (*put)(FILE *out, const void *data, size_t len));

/* The same as a malloc'ed string of the trace's bytes; NULL: no memory. */
char *lw_fold_label_string(const struct lw_frame *folded, size_t *len);

/* Whether a resolved native frame is the interpreter's own. */
bool lw_frame_is_interpreter(const struct lw_report *report,
			     const struct lw_symbol *sym);

/*
 * The autograd node whose apply() a native function is
 * ("torch::autograd::generated::MmBackward0::apply(...)": "MmBackward0",
 * *len 9), or NULL.
 */
const char *lw_autograd_node(const char *function, size_t *len);

#endif
