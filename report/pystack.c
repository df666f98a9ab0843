/* SPDX-License-Identifier: MIT */
/*
 * Python-first stacks: the native frames of a Python program's stack that
 * only carry a call from one Python frame to the next (the interpreter's
 * evaluation and call machinery, the foreign-function layer, binding
 * dispatch) fold into one entry per run; the frames that say something
 * (the framework's operator, the allocator, an autograd node) stay.
 *
 * A frame is the interpreter's when its module is the one that holds the
 * evaluation loop, whose address the shim records (INFO "python_eval"):
 * the object decides, not a list of function names, so it holds for a
 * static interpreter, a libpython, and any CPython version.
 */
#include "pystack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The module that holds the interpreter's evaluation loop; NULL: none
 * known (no Python frames, or a trace from before it was recorded). */
static int interpreter_module(const struct lw_report *r, const char **out)
{
	const struct lw_bytes *eval = lw_model_info(r->model, "python_eval");
	const struct lw_symbol *sym;
	char text[32];
	char *end;
	uint64_t address;
	int rc;

	*out = NULL;
	if (!eval || eval->len == 0 || eval->len >= sizeof(text))
		return 0;
	memcpy(text, eval->data, eval->len);
	text[eval->len] = '\0';
	address = strtoull(text, &end, 16);
	if (*end || address == 0)
		return 0;
	/* lw_symbolize looks up the instruction before a return address. */
	if ((rc = lw_symbolize(r->symbolizer, address + 1, &sym)) < 0)
		return rc;
	*out = sym->module;
	return 0;
}

enum layer {
	LAYER_OWN,		/* says something: shown */
	LAYER_CARRIER,		/* interpreter, FFI, binding dispatch */
	LAYER_START,		/* the C library's process and thread start */
};

static enum layer layer_of(const struct lw_symbol *sym,
			   const char *interpreter)
{
	const char *fn = sym->frames[sym->frame_count - 1].function;
	const char *name;

	if (!sym->module)
		return LAYER_OWN;
	if (interpreter && strcmp(sym->module, interpreter) == 0)
		return LAYER_CARRIER;
	name = base_name(sym->module);
	/* libffi, and ctypes, CPython's module over it. */
	if (has_prefix(name, "libffi.") || has_prefix(name, "_ctypes."))
		return LAYER_CARRIER;
	/* pybind11's dispatcher, compiled into each extension module. */
	if (fn && has_prefix(fn, "pybind11::"))
		return LAYER_CARRIER;
	/* The C and C++ runtimes' start of a process or thread, and the
	 * entry points every C program has (the interpreter's launcher). */
	if (has_prefix(name, "libc.so") || has_prefix(name, "ld-linux") ||
	    has_prefix(name, "libstdc++.so") ||
	    (fn && (strcmp(fn, "_start") == 0 || strcmp(fn, "main") == 0)))
		return LAYER_START;
	return LAYER_OWN;
}

bool lw_frame_is_interpreter(const struct lw_report *r,
			     const struct lw_symbol *sym)
{
	const char *interpreter;

	if (interpreter_module(r, &interpreter) < 0 || !interpreter ||
	    !sym->module)
		return false;
	return strcmp(sym->module, interpreter) == 0;
}

/* One frame standing for a run of n. */
static struct lw_frame fold(size_t n, bool start)
{
	struct lw_frame f = { .folded = (uint32_t)n, .folded_start = start };

	return f;
}

/*
 * A stack made on another thread for Python code (autograd's engine
 * thread, for backward()): the caller's Python frames come first, then
 * the thread's native frames, none of them the interpreter's. Rewritten
 * with the Python frames outermost, as the call went, and the thread's
 * start (the C and C++ runtimes' frames past its last frame of its own)
 * folded.
 */
static void fold_attributed(struct lw_frame *frames, size_t *count,
			    size_t python, const enum layer *layers)
{
	size_t n = *count, end = n, out = 0;
	struct lw_frame *py = malloc(python * sizeof(*py));

	if (!py)
		return;	/* as it is: still right, only less folded */
	memcpy(py, frames, python * sizeof(*py));
	while (end > python && layers[end - 1] == LAYER_START)
		end--;
	for (size_t i = python; i < end; i++)
		frames[out++] = frames[i];
	if (end < n)
		frames[out++] = fold(n - end, true);
	memcpy(&frames[out], py, python * sizeof(*py));
	*count = out + python;
	free(py);
}

int lw_fold_stack(const struct lw_report *r, struct lw_frame *frames,
		  size_t *count)
{
	const char *interpreter;
	enum layer *layers;
	size_t n = *count, outermost = n, leading = 0, out = 0;
	bool tail_folds = true, carriers = false;
	int rc;

	if (r->native)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (frames[i].python)
			outermost = i;
	}
	if (outermost == n)
		return 0;	/* no Python frame: a native stack, as it is */
	while (leading < n && frames[leading].python)
		leading++;
	/* Traces from before the shim named it are shown as they are. */
	if ((rc = interpreter_module(r, &interpreter)) < 0 || !interpreter)
		return rc;
	layers = calloc(n, sizeof(*layers));
	if (!layers)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct lw_symbol *sym;

		if (frames[i].python || frames[i].folded)
			continue;
		if ((rc = lw_symbolize(r->symbolizer, frames[i].address,
				       &sym)) < 0)
			goto out;
		layers[i] = layer_of(sym, interpreter);
		carriers |= layers[i] == LAYER_CARRIER;
		if (i > outermost && layers[i] == LAYER_OWN)
			tail_folds = false;
	}
	if (leading == outermost + 1 && leading < n && !carriers) {
		fold_attributed(frames, count, leading, layers);
		rc = 0;
		goto out;
	}
	for (size_t i = 0; i < n;) {
		size_t run = 0;
		bool start = false;

		/* Past the outermost Python frame, the start of the process
		 * or thread: one entry when nothing in it is the program's. */
		if (i > outermost && tail_folds) {
			run = n - i;
			start = true;
		} else {
			while (i + run < n && !frames[i + run].python &&
			       !frames[i + run].folded &&
			       layers[i + run] == LAYER_CARRIER)
				run++;
		}
		if (run == 0) {
			frames[out++] = frames[i++];
			continue;
		}
		frames[out++] = fold(run, start);
		i += run;
	}
	*count = out;
	rc = 0;
out:
	free(layers);
	return rc;
}
