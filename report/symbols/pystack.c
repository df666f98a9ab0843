/* SPDX-License-Identifier: MIT */
/*
 * Python-first stacks: the native frames of a Python program's stack that
 * only carry a call from one Python frame to the next (the interpreter's
 * evaluation and call machinery, the foreign-function layer, binding
 * dispatch) fold into one entry per run; so does each run of the
 * framework's frames (PyTorch's dispatcher, kernels and allocator, CUDA's
 * libraries), named by the operator the Python frame above it called.
 * The frames that say something (the program's own native code, an
 * extension of its own) stay.
 *
 * A frame is the interpreter's when its module is the one that holds the
 * evaluation loop, whose address the shim records (INFO "python_eval"):
 * the object decides, not a list of function names, so it holds for a
 * static interpreter, a libpython, and any CPython version. A frame is the
 * framework's when its module is one of the framework's libraries
 * (lw-origin.h).
 */
#include "pystack.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lw-origin.h"
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
	LAYER_FRAMEWORK,	/* the framework's libraries */
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
	if (lw_module_is_framework(sym->module))
		return LAYER_FRAMEWORK;
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

static bool is_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

const char *lw_autograd_node(const char *function, size_t *len)
{
	const char *apply = strstr(function, "::apply(");
	const char *start = apply, *backward;

	if (!apply)
		return NULL;
	while (start > function && is_ident(start[-1]))
		start--;
	backward = strstr(start, "Backward");
	if (!backward || backward >= apply)
		return NULL;
	*len = (size_t)(apply - start);
	return start;
}

/*
 * NAME of PyTorch's generated operator entry at::_ops::NAME::call or
 * at::_ops::NAME::redispatch: demangled ("at::_ops::mm::call(at::Tensor
 * const&, ...)"), or mangled where the report cannot demangle
 * ("_ZN2at4_ops2mm4callERKNS_6TensorES4_"). NULL when it is not one.
 */
static const char *aten_op(const char *fn, size_t *len)
{
	static const char demangled[] = "at::_ops::";
	static const char mangled[] = "_ZN2at4_ops";
	const char *name, *end;

	if (has_prefix(fn, demangled)) {
		name = fn + sizeof(demangled) - 1;
		for (end = name; is_ident(*end); end++)
			;
		if (end == name || !(has_prefix(end, "::call(") ||
				     has_prefix(end, "::redispatch(")))
			return NULL;
		*len = (size_t)(end - name);
		return name;
	}
	if (has_prefix(fn, mangled)) {
		unsigned long n;
		char *after;

		name = fn + sizeof(mangled) - 1;
		if (!isdigit((unsigned char)*name))
			return NULL;
		n = strtoul(name, &after, 10);
		if (n == 0 || n > strlen(after))
			return NULL;
		end = after + n;
		for (const char *p = after; p < end; p++)
			if (!is_ident(*p))
				return NULL;
		if (!has_prefix(end, "4callE") &&
		    !has_prefix(end, "10redispatchE"))
			return NULL;
		*len = n;
		return after;
	}
	return NULL;
}

/* What the framework's run frames[start, end) did (struct lw_fold_name),
 * from the outermost frames that say it. */
static void name_run(const struct lw_symbol *const *syms, size_t start,
		     size_t end, struct lw_fold_name *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = start; i < end; i++) {
		const struct lw_symbol *sym = syms[i];

		if (!sym)
			continue;
		if (sym->module && lw_module_is_framework(sym->module))
			out->module = base_name(sym->module);
		for (unsigned j = 0; j < sym->frame_count; j++) {
			const char *fn = sym->frames[j].function;
			const char *s;
			size_t len;

			if (!fn)
				continue;
			if ((s = aten_op(fn, &len)) && len <= UINT32_MAX) {
				out->op = s;
				out->op_len = (uint32_t)len;
			}
			if ((s = lw_autograd_node(fn, &len)) &&
			    len <= UINT32_MAX) {
				out->node = s;
				out->node_len = (uint32_t)len;
			}
		}
	}
}

/* Marks frames[start, end) as one run of kind. */
static void mark_run(struct lw_frame *marks, size_t start, size_t end,
		     enum lw_fold_kind kind, const struct lw_fold_name *name)
{
	struct lw_frame f = { .folded = (uint32_t)(end - start),
			      .fold = (uint8_t)kind };

	if (name)
		f.name = *name;
	for (size_t i = start; i < end; i++)
		marks[i] = f;
}

/*
 * The framework's runs: consecutive frames of its libraries, with the C
 * and C++ runtimes' frames between two of them, among frames[from, to).
 */
static void mark_framework(const struct lw_frame *frames,
			   const enum layer *layers,
			   const struct lw_symbol *const *syms, size_t from,
			   size_t to, struct lw_frame *marks)
{
	for (size_t i = from; i < to;) {
		struct lw_fold_name name;
		size_t end = i;

		if (layers[i] != LAYER_FRAMEWORK || frames[i].python ||
		    frames[i].folded) {
			i++;
			continue;
		}
		for (;;) {
			size_t next = end;

			while (next < to && !frames[next].python &&
			       !frames[next].folded &&
			       layers[next] == LAYER_START)
				next++;
			if (next < to && !frames[next].python &&
			    !frames[next].folded &&
			    layers[next] == LAYER_FRAMEWORK)
				end = next + 1;
			else
				break;
		}
		name_run(syms, i, end, &name);
		/* One frame that names nothing is as good as its name. */
		if (end - i > 1 || name.op || name.node)
			mark_run(marks, i, end, LW_FOLD_FRAMEWORK, &name);
		i = end;
	}
}

/* Marks the runs of frames[from, to) that are not the framework's and
 * are of layer (or of any layer but the framework's, for LAYER_START in
 * a tail that folds whole) as kind. */
static void mark_layer(const struct lw_frame *frames, const enum layer *layers,
		       size_t from, size_t to, enum layer layer, bool any,
		       enum lw_fold_kind kind, struct lw_frame *marks)
{
	for (size_t i = from; i < to;) {
		size_t end = i;

		while (end < to && !frames[end].python && !frames[end].folded &&
		       marks[end].fold == LW_FOLD_NONE &&
		       (any || layers[end] == layer))
			end++;
		if (end == i) {
			i++;
			continue;
		}
		mark_run(marks, i, end, kind, NULL);
		i = end;
	}
}

/* The plan: marks, and how many leading Python frames belong outermost
 * (a stack made on another thread for Python code), 0 if none. */
static int plan(const struct lw_report *r, const struct lw_frame *frames,
		size_t n, struct lw_frame *marks, size_t *attributed)
{
	const char *interpreter = NULL;
	const struct lw_symbol **syms = NULL;
	enum layer *layers = NULL;
	size_t outermost = n, leading = 0;
	bool tail_folds = true, carriers = false;
	int rc = 0;

	memset(marks, 0, n * sizeof(*marks));
	*attributed = 0;
	if (r->native || n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (frames[i].python)
			outermost = i;
	}
	/* A native program's stack, as it is. */
	if (outermost == n && !lw_model_info(r->model, "python"))
		return 0;
	while (leading < n && frames[leading].python)
		leading++;
	/* Traces from before the shim named it: the interpreter's frames
	 * are shown as they are. */
	if ((rc = interpreter_module(r, &interpreter)) < 0)
		return rc;
	layers = calloc(n, sizeof(*layers));
	syms = calloc(n, sizeof(*syms));
	if (!layers || !syms) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (frames[i].python || frames[i].folded)
			continue;
		if ((rc = lw_symbolize(r->symbolizer, frames[i].address,
				       &syms[i])) < 0)
			goto out;
		layers[i] = layer_of(syms[i], interpreter);
		if (!interpreter && layers[i] != LAYER_FRAMEWORK)
			layers[i] = LAYER_OWN;
		carriers |= layers[i] == LAYER_CARRIER;
		if (i > outermost && layers[i] == LAYER_OWN)
			tail_folds = false;
	}
	mark_framework(frames, layers, syms, 0, n, marks);
	if (outermost == n || !interpreter)
		goto out;
	if (leading == outermost + 1 && leading < n && !carriers) {
		/* The thread's start: the C and C++ runtimes' frames past
		 * its last frame of its own. */
		size_t end = n;

		while (end > leading && layers[end - 1] == LAYER_START &&
		       marks[end - 1].fold == LW_FOLD_NONE)
			end--;
		if (end < n)
			mark_run(marks, end, n, LW_FOLD_START, NULL);
		*attributed = leading;
		goto out;
	}
	mark_layer(frames, layers, 0, outermost, LAYER_CARRIER, false,
		   LW_FOLD_INTERPRETER, marks);
	/* Past the outermost Python frame, the start of the process or
	 * thread: one entry when nothing in it is the program's. */
	if (tail_folds)
		mark_layer(frames, layers, outermost + 1, n, LAYER_START, true,
			   LW_FOLD_START, marks);
	else
		mark_layer(frames, layers, outermost + 1, n, LAYER_CARRIER,
			   false, LW_FOLD_INTERPRETER, marks);
out:
	free(layers);
	free(syms);
	return rc;
}

int lw_fold_marks(const struct lw_report *r, const struct lw_frame *frames,
		  size_t count, struct lw_frame *marks)
{
	size_t attributed;

	return plan(r, frames, count, marks, &attributed);
}

int lw_fold_stack(const struct lw_report *r, struct lw_frame *frames,
		  size_t *count)
{
	size_t n = *count, out = 0, attributed;
	struct lw_frame *marks;
	int rc;

	if (r->native || n == 0)
		return 0;
	marks = malloc(n * sizeof(*marks));
	if (!marks)
		return -ENOMEM;
	if ((rc = plan(r, frames, n, marks, &attributed)) < 0)
		goto out;
	for (size_t i = 0; i < n;) {
		if (marks[i].fold == LW_FOLD_NONE) {
			frames[out++] = frames[i++];
			continue;
		}
		frames[out++] = marks[i];
		i += marks[i].folded;
	}
	/* The Python frames that called into the thread, outermost. */
	if (attributed) {
		memcpy(marks, frames, attributed * sizeof(*marks));
		memmove(frames, frames + attributed,
			(out - attributed) * sizeof(*frames));
		memcpy(frames + out - attributed, marks,
		       attributed * sizeof(*frames));
	}
	*count = out;
out:
	free(marks);
	return rc;
}

void lw_put_fold_label(FILE *out, const struct lw_frame *f,
		       void (*put)(FILE *out, const void *data, size_t len))
{
	const struct lw_fold_name *name = &f->name;

	switch (f->fold) {
	case LW_FOLD_FRAMEWORK:
		if (name->node) {
			put(out, name->node, name->node_len);
			if (name->op)
				put(out, ": ", 2);
		}
		if (name->op) {
			put(out, "aten::", 6);
			put(out, name->op, name->op_len);
		} else if (!name->node) {
			const char *module = name->module ? name->module
							  : "framework";

			put(out, module, strlen(module));
		}
		break;
	case LW_FOLD_INTERPRETER:
		put(out, "interpreter", 11);
		break;
	case LW_FOLD_START:
		put(out, "start-up", 8);
		break;
	default:
		break;
	}
}

static void put_raw(FILE *out, const void *data, size_t len)
{
	fwrite(data, 1, len, out);
}

char *lw_fold_label_string(const struct lw_frame *f, size_t *len)
{
	char *text = NULL;
	FILE *s = open_memstream(&text, len);

	if (!s)
		return NULL;
	lw_put_fold_label(s, f, put_raw);
	if (fclose(s) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
