/* SPDX-License-Identifier: MIT */
/*
 * Who holds it: runs the holder search (scripts/leakwatch/_holders.py,
 * compiled into the shim as lw_holders_source) inside the program's own
 * interpreter, with the GIL held, and writes a HOLDER record for each
 * holder it finds. The search looks only for the device memory that
 * outlived the step that made it, so a program with nothing of the kind
 * pays nothing.
 *
 * Three searches. The whole one (lw_holders_search()) at the report point,
 * on leakwatch_snapshot() and on SIGUSR2, for every such allocation. The
 * one during the run (lw_holders_schedule_in_run()), asked at a step end
 * for the stacks that have grown long enough to be judged (kept.h), for
 * their memory only: the holder of a leak inside a function (a list local
 * to train()) is gone once the function returns, so it is found while it
 * runs. Those together may take at most IN_RUN_SHARE of the process's
 * wall time; past it a search waits for a later step end (the first for
 * a growth, and the first for memory kept into the next step, always run),
 * and a later one stops where it would pass that share. Each stops at the
 * budget (LEAKWATCH_HOLDERS_BUDGET).
 *
 * The search reads frames' locals through lw_py_frame_locals(), handed to
 * it as a C function: frame.f_locals would fill each frame's locals dict
 * (3.9 to 3.12), a reference that keeps a step's tensors alive until the
 * frame's next f_locals or its end.
 *
 * The Python C API is looked up with dlsym(), as in pyhooks.c: the shim
 * does not link against Python, and these functions are in every CPython 3.
 */
#include "holders.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lw-format.h"
#include "pyembed.h"
#include "pyframes.h"
#include "tracker.h"

extern const char lw_holders_source[];

#define PY_METH_O 0x0008
/* Targets passed to one search at most: the oldest are as good as any. */
#define MAX_TARGETS 65536
/* The share of the process's wall time the searches during the run may
 * take together. */
#define IN_RUN_SHARE 0.01

struct py_object;
struct py_method_def {
	const char *ml_name;
	struct py_object *(*ml_meth)(struct py_object *self,
				     struct py_object *arg);
	int ml_flags;
	const char *ml_doc;
};

static struct {
	int (*is_initialized)(void);
	int (*add_pending_call)(int (*fn)(void *), void *arg);
	struct py_object *(*bytes_from)(const char *data, ptrdiff_t len);
	struct py_object *(*float_from)(double v);
	struct py_object *(*call_objargs)(struct py_object *fn, ...);
	struct py_object *(*tuple_get_item)(struct py_object *t, ptrdiff_t i);
	ptrdiff_t (*list_size)(struct py_object *l);
	struct py_object *(*list_get_item)(struct py_object *l, ptrdiff_t i);
	unsigned long long (*long_as_ull)(struct py_object *o);
	const char *(*unicode_as_utf8)(struct py_object *o);
	int (*is_true)(struct py_object *o);
	void (*inc_ref)(struct py_object *o);
	void (*dec_ref)(struct py_object *o);
	void (*err_clear)(void);
	struct py_object *(*cfunction_new_ex)(struct py_method_def *def,
					      struct py_object *self,
					      struct py_object *module);
	struct py_object *(*list_new)(ptrdiff_t size);
	int (*list_append)(struct py_object *l, struct py_object *item);
	struct py_object *(*tuple_pack)(ptrdiff_t n, ...);
	struct py_object *(*long_from_ll)(long long v);
	struct py_object *none;
} py;

/* 0 unknown, 1 usable, -1 not a usable CPython. With the GIL. */
static int api_state;
/* The compiled search, and frame_locals() for it; with the GIL. */
static struct py_object *search_fn, *locals_fn;
static int failed_once;
/* Searches queued (PENDING_*), for the next pending call. */
static int pending;
#define PENDING_WHOLE 1
#define PENDING_IN_RUN 2
static double budget = 2.0;
static int enabled = 1;
/* The searches during the run: how many, their time, since when. */
static unsigned in_run_searches;
static double in_run_seconds, started;

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int load_api(void)
{
#define LOOK(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))
	LOOK(is_initialized, "Py_IsInitialized");
	LOOK(add_pending_call, "Py_AddPendingCall");
	LOOK(bytes_from, "PyBytes_FromStringAndSize");
	LOOK(float_from, "PyFloat_FromDouble");
	LOOK(call_objargs, "PyObject_CallFunctionObjArgs");
	LOOK(tuple_get_item, "PyTuple_GetItem");
	LOOK(list_size, "PyList_Size");
	LOOK(list_get_item, "PyList_GetItem");
	LOOK(long_as_ull, "PyLong_AsUnsignedLongLong");
	LOOK(unicode_as_utf8, "PyUnicode_AsUTF8");
	LOOK(is_true, "PyObject_IsTrue");
	LOOK(inc_ref, "Py_IncRef");
	LOOK(dec_ref, "Py_DecRef");
	LOOK(err_clear, "PyErr_Clear");
	LOOK(cfunction_new_ex, "PyCFunction_NewEx");
	LOOK(list_new, "PyList_New");
	LOOK(list_append, "PyList_Append");
	LOOK(tuple_pack, "PyTuple_Pack");
	LOOK(long_from_ll, "PyLong_FromLongLong");
	LOOK(none, "_Py_NoneStruct");
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
	started = now_seconds();
}

void lw_holders_in_run_stats(unsigned *searches, double *seconds)
{
	*searches = in_run_searches;
	*seconds = in_run_seconds;
}

/* frame_locals(frame): [(name, value)...] of a frame object's bound fast
 * locals, or None where they cannot be read (lw_py_frame_locals()). */
struct locals_ctx {
	struct py_object *list;
	int failed;
};

static void add_local(const void *name, const void *value, void *data)
{
	struct locals_ctx *ctx = data;
	struct py_object *pair;

	if (ctx->failed)
		return;
	pair = py.tuple_pack(2, (struct py_object *)name,
			     (struct py_object *)value);
	if (!pair || py.list_append(ctx->list, pair) < 0)
		ctx->failed = 1;
	if (pair)
		py.dec_ref(pair);
}

static struct py_object *frame_locals(struct py_object *self,
				      struct py_object *frame)
{
	struct locals_ctx ctx = { py.list_new(0), 0 };

	(void)self;
	if (!ctx.list)
		return NULL;
	if (lw_py_frame_locals(frame, add_local, &ctx) < 0 || ctx.failed) {
		py.dec_ref(ctx.list);
		if (ctx.failed)
			return NULL;
		py.inc_ref(py.none);
		return py.none;
	}
	return ctx.list;
}

static struct py_method_def frame_locals_def = {
	"frame_locals", frame_locals, PY_METH_O,
	"The bound fast locals of a frame, read without filling f_locals.",
};

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
	if (search_fn)
		return search_fn;
	search_fn = lw_py_embedded(lw_holders_source, "<leakwatch holders>",
				   "search");
	if (search_fn && !locals_fn)
		locals_fn = py.cfunction_new_ex(&frame_locals_def, NULL, NULL);
	if (!locals_fn)
		search_fn = NULL;
	return search_fn;
}

/* Writes the HOLDER records of one ([address...], path, root, objects,
 * graph, flags): one for each address it names. */
static int record_one(struct py_object *t, unsigned flags)
{
	struct py_object *f[6];
	const char *path, *root;
	unsigned long long objects, graph, own;
	ptrdiff_t n;

	for (int i = 0; i < 6; i++)
		if (!(f[i] = py.tuple_get_item(t, i)))
			return -1;
	path = py.unicode_as_utf8(f[1]);
	root = py.unicode_as_utf8(f[2]);
	objects = py.long_as_ull(f[3]);
	graph = py.long_as_ull(f[4]);
	own = py.long_as_ull(f[5]);
	if (!path || !root || (n = py.list_size(f[0])) < 0 ||
	    own == (unsigned long long)-1)
		return -1;
	/* The search's own flags: where the holder is (LW_HOLDER_UNREACHABLE,
	 * LW_HOLDER_GC_OFF), whether it could see PyTorch's graphs. */
	flags |= (unsigned)own & (LW_HOLDER_UNREACHABLE | LW_HOLDER_GC_OFF |
				  LW_HOLDER_TORCH);
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

/* One search: of every suspect, or (in_run) of the stacks asked for. */
static void search(int in_run)
{
	struct py_object *fn, *targets, *limit, *gc_steps, *res, *found, *cut;
	uint64_t *pairs;
	size_t n, count;
	unsigned flags;
	double start, limit_seconds;

	if (!enabled || !lw_enter())
		return;
	if (!api_state)
		api_state = load_api() == 0 ? 1 : -1;
	if (api_state < 0 || !py.is_initialized())
		goto out;
	start = now_seconds();
	/* The first search during the run for each reason (a growth,
	 * memory kept into the next step) always runs, with the whole
	 * budget; later ones wait while the searches have taken more than
	 * their share, and stop where they would take more. */
	limit_seconds = budget;
	if (in_run && in_run_searches && !lw_holders_first_of_its_reason()) {
		double left = IN_RUN_SHARE * (start - started) - in_run_seconds;

		if (left <= 0)
			goto out;
		if (left < limit_seconds)
			limit_seconds = left;
	}
	count = lw_holder_targets(NULL, 0, in_run);
	if (count == 0)
		goto out; /* nothing outlived its step: nothing to explain */
	if (count > MAX_TARGETS)
		count = MAX_TARGETS;
	pairs = malloc(2 * count * sizeof(*pairs));
	if (!pairs) {
		give_up("out of memory");
		goto out;
	}
	n = lw_holder_targets(pairs, count, in_run);
	if (n > count)
		n = count;
	/* Little-endian (start, size) pairs, as the search unpacks them. */
	targets = py.bytes_from((const char *)pairs,
				(ptrdiff_t)(2 * n * sizeof(*pairs)));
	free(pairs);
	limit = py.float_from(limit_seconds);
	gc_steps = py.long_from_ll(lw_steps_since_gc());
	fn = search_function();
	res = fn && targets && limit && gc_steps
		      ? py.call_objargs(fn, targets, limit, locals_fn, gc_steps,
					(struct py_object *)NULL)
		      : NULL;
	if (targets)
		py.dec_ref(targets);
	if (limit)
		py.dec_ref(limit);
	if (gc_steps)
		py.dec_ref(gc_steps);
	if (!res) {
		give_up("it raised an exception");
		goto timed;
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
timed:
	if (in_run) {
		in_run_searches++;
		in_run_seconds += now_seconds() - start;
	}
out:
	lw_leave();
}

void lw_holders_search(void)
{
	search(0);
}

static int run_pending(void *arg)
{
	int what = __atomic_exchange_n(&pending, 0, __ATOMIC_ACQ_REL);

	(void)arg;
	/* The whole search covers the stacks asked for too, but leaves
	 * their ask: it may have been cut before it reached them. */
	if (what & PENDING_WHOLE)
		search(0);
	if (what & PENDING_IN_RUN)
		search(1);
	return 0;
}

static void schedule(int what)
{
	if (!enabled || (__atomic_fetch_or(&pending, what, __ATOMIC_ACQ_REL)))
		return; /* a call is queued already: it runs this too */
	if (!api_state)
		api_state = load_api() == 0 ? 1 : -1;
	if (api_state < 0 || !py.is_initialized() ||
	    py.add_pending_call(run_pending, NULL) != 0)
		__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
}

void lw_holders_schedule(void)
{
	schedule(PENDING_WHOLE);
}

void lw_holders_schedule_in_run(void)
{
	schedule(PENDING_IN_RUN);
}
