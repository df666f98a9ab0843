/* SPDX-License-Identifier: MIT */
#include "pyhooks.h"

#include <stddef.h>

#include "events.h"
#include "holders.h"
#include "pyapi.h"
#include "lw-format.h"
#include "origins.h"
#include "tracker.h"

/*
 * The C functions handed to the interpreter, declared by hand: the shim
 * does not build against Python's headers, and these belong to the stable
 * ABI, which keeps them the same in every CPython 3 release. The functions
 * called are pyapi.h's.
 */
struct py_object;
struct py_method_def {
	const char *ml_name;
	struct py_object *(*ml_meth)(struct py_object *self,
				     struct py_object *args);
	int ml_flags;
	const char *ml_doc;
};
#define PY_METH_VARARGS 0x0001
#define PY_METH_NOARGS 0x0004

static const struct lw_pyapi *py;
/* A call is queued; tries so far (torch may be imported late). */
static int pending, attempts;
#define MAX_ATTEMPTS 32

static int load_api(void)
{
	py = lw_pyapi();
	return py->PyObject_CallFunctionObjArgs && py->Py_AddPendingCall &&
	       py->Py_IsInitialized && py->PyImport_ImportModule &&
	       py->PyObject_GetAttrString && py->PyCFunction_NewEx &&
	       py->Py_IncRef && py->Py_DecRef && py->PyErr_Clear &&
	       py->PySys_GetObject && py->PyDict_GetItemString &&
	       py->PyTuple_GetItem && py->PyUnicode_AsUTF8 &&
	       py->PyList_Append && py->_Py_NoneStruct ? 0 : -1;
}

static struct py_object *on_program_end(struct py_object *self,
					struct py_object *args)
{
	/* Where its code came from, with what it imported since: before
	 * the mark, whose exit summary names the program's lines. */
	lw_origins_record();
	lw_record_mark(LW_MARK_PROGRAM_END);
	/* The program's code is done and its objects are all still there:
	 * what holds the memory that outlived its step. */
	lw_holders_search();
	py->Py_IncRef(py->_Py_NoneStruct);
	return py->_Py_NoneStruct;
}

static struct py_method_def program_end_def = {
	"leakwatch_program_end", on_program_end, PY_METH_NOARGS,
	"Marks the end of the program's own code in the leakwatch trace.",
};

/*
 * gc.callbacks entry: called (phase, info) around every pass of the cycle
 * collector, phase "start" or "stop". Frees between the two are memory that
 * only a reference cycle kept alive. Runs with the GIL held; one mark, no
 * flush: a pass can run every few hundred object allocations.
 */
static struct py_object *on_gc(struct py_object *self, struct py_object *args)
{
	struct py_object *phase = py->PyTuple_GetItem(args, 0);
	const char *name = phase ? py->PyUnicode_AsUTF8(phase) : NULL;

	if (!name)
		py->PyErr_Clear();
	else if (name[0] == 's' && name[1] == 't' && name[2] == 'a')
		lw_record_mark(LW_MARK_GC_START);
	else if (name[0] == 's' && name[1] == 't' && name[2] == 'o')
		lw_record_mark(LW_MARK_GC_STOP);
	py->Py_IncRef(py->_Py_NoneStruct);
	return py->_Py_NoneStruct;
}

static struct py_method_def gc_def = {
	"leakwatch_gc", on_gc, PY_METH_VARARGS,
	"Marks the cycle collector's passes in the leakwatch trace.",
};

/*
 * Steps from PyTorch's optimizers. Several optimizers may step in one
 * iteration, and with gradient accumulation an optimizer steps once per
 * several batches: a step ends each time the *leading* optimizer (the first
 * one seen) steps. If another optimizer steps twice while the leader does
 * not (the leader was replaced, say by a new training stage), it leads.
 * Runs with the GIL held, which serialises these statics.
 */
static uintptr_t leader, follower;
static unsigned follower_steps;
/*
 * Steps ended by optimizers, and the optimizers seen since the only one
 * that did, each stepping once: a program that makes a new optimizer every
 * iteration (kept alive in a reference cycle, each a new object) has no
 * leader, and its loop gives the steps (tracker.h).
 */
static unsigned optimizer_steps, remade;

static struct py_object *on_optimizer_step(struct py_object *self,
					   struct py_object *args)
{
	struct py_object *optimizer = py->PyTuple_GetItem(args, 0);
	uintptr_t id = (uintptr_t)optimizer;

	if (!optimizer) {
		py->PyErr_Clear();
	} else if (remade >= 2) {
		/* The loop's steps, not the optimizers'. */
	} else if (!leader || id == leader) {
		leader = id;
		follower_steps = 0;
		optimizer_steps++;
		lw_record_step(LW_STEP_OPTIMIZER);
	} else if (id == follower && ++follower_steps >= 2) {
		leader = id;
		follower_steps = 0;
		optimizer_steps++;
		lw_record_step(LW_STEP_OPTIMIZER);
	} else if (id != follower) {
		/* A second optimizer that steps once after another that
		 * stepped once, while the leader stepped once: remade. */
		if (optimizer_steps == 1 && ++remade >= 2)
			lw_record_optimizer_remade();
		follower = id;
		follower_steps = 1;
	}
	/* The GIL is held here: a search asked for may run now. */
	lw_events_poll();
	py->Py_IncRef(py->_Py_NoneStruct);
	return py->_Py_NoneStruct;
}

static struct py_method_def optimizer_step_def = {
	"leakwatch_optimizer_step", on_optimizer_step, PY_METH_VARARGS,
	"Marks a training step in the leakwatch trace.",
};

/* Calls module.attr(fn); 0 on success. With the GIL. */
static int call_with_function(struct py_object *module, const char *attr,
			      struct py_method_def *def)
{
	struct py_object *reg, *fn, *res;

	reg = py->PyObject_GetAttrString(module, attr);
	if (!reg)
		return -1;
	fn = py->PyCFunction_NewEx(def, NULL, NULL);
	if (!fn) {
		py->Py_DecRef(reg);
		return -1;
	}
	res = py->PyObject_CallFunctionObjArgs(reg, fn, (struct py_object *)NULL);
	py->Py_DecRef(fn);
	py->Py_DecRef(reg);
	if (!res)
		return -1;
	py->Py_DecRef(res);
	return 0;
}

static int program_end_registered, optimizer_hook_registered;
static int gc_registered;

/* Appends the GC callback to gc.callbacks; 0 on success. With the GIL. */
static int register_gc_callback(void)
{
	struct py_object *gc, *callbacks, *fn;
	int rc = -1;

	gc = py->PyImport_ImportModule("gc");
	if (!gc)
		return -1;
	callbacks = py->PyObject_GetAttrString(gc, "callbacks");
	fn = callbacks ? py->PyCFunction_NewEx(&gc_def, NULL, NULL) : NULL;
	if (fn) {
		rc = py->PyList_Append(callbacks, fn);
		py->Py_DecRef(fn);
	}
	if (callbacks)
		py->Py_DecRef(callbacks);
	py->Py_DecRef(gc);
	return rc;
}

/*
 * Runs in the interpreter's main thread with the GIL held. Registers what
 * is not registered yet; PyTorch's hook only once torch.optim is imported
 * (an already imported module is looked up, never imported from here).
 */
static int install_hooks(void *arg)
{
	/* Where the program's code comes from, once its first Python
	 * stack is seen. */
	lw_origins_record_early();
	if (!program_end_registered) {
		struct py_object *atexit = py->PyImport_ImportModule("atexit");
		if (atexit) {
			program_end_registered = call_with_function(
				atexit, "register", &program_end_def) == 0;
			py->Py_DecRef(atexit);
		}
		py->PyErr_Clear();
	}
	if (!gc_registered) {
		gc_registered = register_gc_callback() == 0;
		py->PyErr_Clear();
	}
	if (!optimizer_hook_registered) {
		struct py_object *modules = py->PySys_GetObject("modules");
		struct py_object *optim = modules ? py->PyDict_GetItemString(
				modules, "torch.optim.optimizer") : NULL;
		if (optim)
			optimizer_hook_registered = call_with_function(
				optim, "register_optimizer_step_post_hook",
				&optimizer_step_def) == 0;
		/* Never leave an exception behind in the program. */
		py->PyErr_Clear();
	}
	__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
	return 0;
}

int lw_py_schedule_hooks(void)
{
	static int api_state; /* 0 unknown, 1 loaded, -1 not a usable Python */

	if (__atomic_load_n(&optimizer_hook_registered, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&program_end_registered, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&gc_registered, __ATOMIC_ACQUIRE) &&
	    !lw_origins_early_due())
		return 0;
	if (__atomic_load_n(&attempts, __ATOMIC_RELAXED) >= MAX_ATTEMPTS)
		return -1;
	if (__atomic_exchange_n(&pending, 1, __ATOMIC_ACQ_REL))
		return 0; /* one is queued already */
	if (!api_state)
		api_state = load_api() == 0 ? 1 : -1;
	if (api_state < 0 || !py->Py_IsInitialized()) {
		__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
		return -1;
	}
	__atomic_fetch_add(&attempts, 1, __ATOMIC_RELAXED);
	if (py->Py_AddPendingCall(install_hooks, NULL) != 0) {
		__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
		return -1;
	}
	return 0;
}

static void on_new_code(const struct lw_event *event, void *ctx)
{
	(void)event;
	(void)ctx;
	lw_py_schedule_hooks();
}

void lw_py_hooks_start(void)
{
	lw_events_subscribe(LW_EVENT_NEW_CODE, on_new_code, NULL);
}
