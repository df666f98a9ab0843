/* SPDX-License-Identifier: MIT */
/*
 * Where the interpreter's evaluation loop (_PyEval_EvalFrameDefault) lies in
 * memory, its .cold parts included, so that native frames inside it can be
 * replaced by the Python frames it was running. Called once, at start-up of
 * the Python frame reader (it reads ELF files; never from a hook).
 */
#ifndef LW_PYEVAL_H
#define LW_PYEVAL_H

#include <stdint.h>

#define LW_PY_MAX_EVAL_RANGES 4
#define LW_PY_EVAL_NAME "_PyEval_EvalFrameDefault"

struct lw_py_eval_ranges {
	struct {
		uintptr_t start, end;
	} range[LW_PY_MAX_EVAL_RANGES];
	unsigned count;
};

/* Adds the ranges of the function at eval (and its .cold parts found in
 * its object's symbol table or build-id debug file) to out. */
void lw_py_find_eval_ranges(void *eval, struct lw_py_eval_ranges *out);

#endif
