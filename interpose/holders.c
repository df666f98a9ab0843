/* SPDX-License-Identifier: MIT */
/*
 * Who holds it: runs the holder search (scripts/leakwatch/_holders.py,
 * compiled into the shim as lw_holders_source) inside the program's own
 * interpreter, with the GIL held, and writes a HOLDER record for each
 * holder it finds. The search looks only for the device memory that
 * outlived the step that made it, so a program with nothing of the kind
 * pays nothing.
 *
 * The Python C API is looked up with dlsym(), as in pyhooks.c: the shim
 * does not link against Python, and these functions are in every CPython 3.
 */
#include "holders.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "lw-format.h"
#include "tracker.h"

extern const char lw_holders_source[];

#define PY_FILE_INPUT 257
/* Targets passed to one search at most: the oldest are as good as any. */
#define MAX_TARGETS 65536

struct py_object;

static struct {
	int (*is_initialized)(void);
	int (*add_pending_call)(int (*fn)(void *), void *arg);
	struct py_object *(*compile)(const char *src, const char *file,
				     int start);
	struct py_object *(*eval_code)(struct py_object *code,
				       struct py_object *globals,
				       struct py_object *locals);
	struct py_object *(*dict_new)(void);
	struct py_object *(*dict_get_item_string)(struct py_object *d,
						  const char *key);
	int (*dict_set_item_string)(struct py_object *d, const char *key,
				    struct py_object *v);
	struct py_object *(*import_module)(const char *name);
	struct py_object *(*bytes_from)(const char *data, ptrdiff_t len);
	struct py_object *(*float_from)(double v);
	struct py_object *(*call_objargs)(struct py_object *fn, ...);
	struct py_object *(*tuple_get_item)(struct py_object *t, ptrdiff_t i);
	ptrdiff_t (*list_size)(struct py_object *l);
	struct py_object *(*list_get_item)(struct py_object *l, ptrdiff_t i);
	unsigned long long (*long_as_ull)(struct py_object *o);
	const char *(*unicode_as_utf8)(struct py_object *o);
	int (*is_true)(struct py_object *o);
	void (*dec_ref)(struct py_object *o);
	void (*err_clear)(void);
} py;

/* 0 unknown, 1 usable, -1 not a usable CPython. With the GIL. */
static int api_state;
/* The compiled search's globals; with the GIL. */
static struct py_object *search_fn;
static int failed_once, pending;
static double budget = 2.0;
static int enabled = 1;

static int load_api(void)
{
#define LOOK(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))
	LOOK(is_initialized, "Py_IsInitialized");
	LOOK(add_pending_call, "Py_AddPendingCall");
	LOOK(compile, "Py_CompileString");
	LOOK(eval_code, "PyEval_EvalCode");
	LOOK(dict_new, "PyDict_New");
	LOOK(dict_get_item_string, "PyDict_GetItemString");
	LOOK(dict_set_item_string, "PyDict_SetItemString");
	LOOK(import_module, "PyImport_ImportModule");
	LOOK(bytes_from, "PyBytes_FromStringAndSize");
	LOOK(float_from, "PyFloat_FromDouble");
	LOOK(call_objargs, "PyObject_CallFunctionObjArgs");
	LOOK(tuple_get_item, "PyTuple_GetItem");
	LOOK(list_size, "PyList_Size");
	LOOK(list_get_item, "PyList_GetItem");
	LOOK(long_as_ull, "PyLong_AsUnsignedLongLong");
	LOOK(unicode_as_utf8, "PyUnicode_AsUTF8");
	LOOK(is_true, "PyObject_IsTrue");
	LOOK(dec_ref, "Py_DecRef");
	LOOK(err_clear, "PyErr_Clear");
#undef LOOK
	for (size_t i = 0; i < sizeof(py) / sizeof(void *); i++)
		if (!((void **)&py)[i])
			return -1;
	return 0;
}

void lw_holders_configure(int on, double budget_seconds)
{
	enabled = on;
	if (budget_seconds > 0)
		budget = budget_seconds;
}

/* One warning, once: the program carries on without holders. */
static void give_up(const char *why)
{
	py.err_clear();
	if (!failed_once) {
		failed_once = 1;
		lw_warn_once(LW_WARN_HOLDERS, "the holder search failed (%s); reports name no holders", why);
	}
}

/* The search function, compiled the first time. With the GIL. */
static struct py_object *search_function(void)
{
	struct py_object *code, *globals, *builtins, *res;

	if (search_fn)
		return search_fn;
	code = py.compile(lw_holders_source, "<leakwatch holders>",
			  PY_FILE_INPUT);
	if (!code)
		return NULL;
	globals = py.dict_new();
	builtins = py.import_module("builtins");
	if (!globals || !builtins ||
	    py.dict_set_item_string(globals, "__builtins__", builtins) < 0) {
		py.dec_ref(code);
		if (globals)
			py.dec_ref(globals);
		if (builtins)
			py.dec_ref(builtins);
		return NULL;
	}
	py.dec_ref(builtins);
	res = py.eval_code(code, globals, globals);
	py.dec_ref(code);
	if (!res) {
		py.dec_ref(globals);
		return NULL;
	}
	py.dec_ref(res);
	/* The globals stay: they are the search function's module. */
	search_fn = py.dict_get_item_string(globals, "search");
	return search_fn;
}

/* Writes the HOLDER records of one ([address...], path, root, objects,
 * graph): one for each address it names. */
static int record_one(struct py_object *t, unsigned flags)
{
	struct py_object *f[5];
	const char *path, *root;
	unsigned long long objects, graph;
	ptrdiff_t n;

	for (int i = 0; i < 5; i++)
		if (!(f[i] = py.tuple_get_item(t, i)))
			return -1;
	path = py.unicode_as_utf8(f[1]);
	root = py.unicode_as_utf8(f[2]);
	objects = py.long_as_ull(f[3]);
	graph = py.long_as_ull(f[4]);
	if (!path || !root || (n = py.list_size(f[0])) < 0)
		return -1;
	for (ptrdiff_t i = 0; i < n; i++) {
		struct py_object *a = py.list_get_item(f[0], i);
		unsigned long long address = a ? py.long_as_ull(a) : 0;

		if (!a || address == (unsigned long long)-1)
			return -1;
		lw_record_holder(address, path, root, objects, graph,
				 flags | (graph ? LW_HOLDER_GRAPH : 0));
	}
	return 0;
}

void lw_holders_search(void)
{
	struct py_object *fn, *targets, *limit, *res, *found, *cut;
	uint64_t *pairs;
	size_t n, count;
	unsigned flags;

	if (!enabled || !lw_enter())
		return;
	if (!api_state)
		api_state = load_api() == 0 ? 1 : -1;
	if (api_state < 0 || !py.is_initialized())
		goto out;
	count = lw_holder_targets(NULL, 0);
	if (count == 0)
		goto out; /* nothing outlived its step: nothing to explain */
	if (count > MAX_TARGETS)
		count = MAX_TARGETS;
	pairs = malloc(2 * count * sizeof(*pairs));
	if (!pairs) {
		give_up("out of memory");
		goto out;
	}
	n = lw_holder_targets(pairs, count);
	if (n > count)
		n = count;
	/* Little-endian (start, size) pairs, as the search unpacks them. */
	targets = py.bytes_from((const char *)pairs,
				(ptrdiff_t)(2 * n * sizeof(*pairs)));
	free(pairs);
	limit = py.float_from(budget);
	fn = search_function();
	res = fn && targets && limit
		      ? py.call_objargs(fn, targets, limit,
					(struct py_object *)NULL)
		      : NULL;
	if (targets)
		py.dec_ref(targets);
	if (limit)
		py.dec_ref(limit);
	if (!res) {
		give_up("it raised an exception");
		goto out;
	}
	found = py.tuple_get_item(res, 0);
	cut = py.tuple_get_item(res, 1);
	flags = cut && py.is_true(cut) == 1 ? LW_HOLDER_CUT : 0;
	n = found ? (size_t)py.list_size(found) : 0;
	for (size_t i = 0; i < n; i++) {
		struct py_object *t = py.list_get_item(found, (ptrdiff_t)i);

		if (!t || record_one(t, flags) < 0) {
			give_up("it returned something unexpected");
			break;
		}
	}
	/* Cut before it found anything: the report says so. */
	if (n == 0 && flags)
		lw_record_holder(0, "", "", 0, 0, flags);
	py.dec_ref(res);
	py.err_clear();
out:
	lw_leave();
}

static int run_pending(void *arg)
{
	(void)arg;
	__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
	lw_holders_search();
	return 0;
}

void lw_holders_schedule(void)
{
	if (!enabled || __atomic_exchange_n(&pending, 1, __ATOMIC_ACQ_REL))
		return;
	if (!api_state)
		api_state = load_api() == 0 ? 1 : -1;
	if (api_state < 0 || !py.is_initialized() ||
	    py.add_pending_call(run_pending, NULL) != 0)
		__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
}
