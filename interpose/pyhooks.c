/* SPDX-License-Identifier: MIT */
#include "pyhooks.h"

#include <dlfcn.h>
#include <stddef.h>

#include "lw-format.h"
#include "tracker.h"

/*
 * The few Python C API pieces used here, declared by hand: the shim does not
 * build against Python's headers, and these belong to the stable ABI, which
 * keeps them the same in every CPython 3 release.
 */
struct py_object;
struct py_method_def {
	const char *ml_name;
	struct py_object *(*ml_meth)(struct py_object *self,
				     struct py_object *args);
	int ml_flags;
	const char *ml_doc;
};
#define PY_METH_NOARGS 0x0004

struct py_api {
	int (*add_pending_call)(int (*fn)(void *), void *arg);
	int (*is_initialized)(void);
	struct py_object *(*import_module)(const char *name);
	struct py_object *(*get_attr_string)(struct py_object *o,
					     const char *name);
	struct py_object *(*cfunction_new_ex)(struct py_method_def *def,
					      struct py_object *self,
					      struct py_object *module);
	struct py_object *(*call_objargs)(struct py_object *fn, ...);
	void (*inc_ref)(struct py_object *o);
	void (*dec_ref)(struct py_object *o);
	void (*err_clear)(void);
	struct py_object *none;
};

static struct py_api py;
static int scheduled;

static void *lookup(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static int load_api(void)
{
	*(void **)&py.add_pending_call = lookup("Py_AddPendingCall");
	*(void **)&py.is_initialized = lookup("Py_IsInitialized");
	*(void **)&py.import_module = lookup("PyImport_ImportModule");
	*(void **)&py.get_attr_string = lookup("PyObject_GetAttrString");
	*(void **)&py.cfunction_new_ex = lookup("PyCFunction_NewEx");
	*(void **)&py.call_objargs = lookup("PyObject_CallFunctionObjArgs");
	*(void **)&py.inc_ref = lookup("Py_IncRef");
	*(void **)&py.dec_ref = lookup("Py_DecRef");
	*(void **)&py.err_clear = lookup("PyErr_Clear");
	py.none = lookup("_Py_NoneStruct");
	return py.call_objargs && py.add_pending_call && py.is_initialized &&
	       py.import_module &&
	       py.get_attr_string && py.cfunction_new_ex && py.inc_ref &&
	       py.dec_ref && py.err_clear && py.none ? 0 : -1;
}

static struct py_object *on_program_end(struct py_object *self,
					struct py_object *args)
{
	lw_record_mark(LW_MARK_PROGRAM_END);
	py.inc_ref(py.none);
	return py.none;
}

static struct py_method_def program_end_def = {
	"leakwatch_program_end", on_program_end, PY_METH_NOARGS,
	"Marks the end of the program's own code in the leakwatch trace.",
};

/* Runs in the interpreter's main thread with the GIL held. */
static int register_atexit(void *arg)
{
	struct py_object *atexit, *reg, *fn, *res;

	atexit = py.import_module("atexit");
	if (!atexit)
		goto fail;
	reg = py.get_attr_string(atexit, "register");
	py.dec_ref(atexit);
	if (!reg)
		goto fail;
	fn = py.cfunction_new_ex(&program_end_def, NULL, NULL);
	if (!fn) {
		py.dec_ref(reg);
		goto fail;
	}
	res = py.call_objargs(reg, fn, (struct py_object *)NULL);
	py.dec_ref(fn);
	py.dec_ref(reg);
	if (!res)
		goto fail;
	py.dec_ref(res);
	return 0;
fail:
	/* Never leave an exception behind in the program. */
	py.err_clear();
	return 0;
}

int lw_py_schedule_program_end_mark(void)
{
	if (__atomic_exchange_n(&scheduled, 1, __ATOMIC_ACQ_REL))
		return 0;
	if (load_api() < 0 || !py.is_initialized())
		return -1;
	return py.add_pending_call(register_atexit, NULL) == 0 ? 0 : -1;
}
