/* SPDX-License-Identifier: MIT */
/*
 * The Python C API as the shim uses it, looked up in one table. The shim
 * does not link libpython, nor build against Python's headers: each
 * function and object is found with dlsym() in the running program, once,
 * the first time any reader asks for the table.
 *
 * An object is a void *: the shim reads objects as bytes (base/pyabi.h)
 * and passes them back to the API, never through a type of its own. Every
 * entry is NULL where the program has no such symbol: a Python without
 * it, or no Python at all. Which entries a reader needs, and what it does
 * without them, is the reader's own decision.
 */
#ifndef LW_PYAPI_H
#define LW_PYAPI_H

#include <stddef.h>

/* PyMethodDef (holders/pyhooks.c). */
struct py_method_def;

/* X(return type, name, parameters): every function the shim calls. */
#define LW_PYAPI_FUNCTIONS(X) \
	X(int, Py_IsInitialized, (void)) \
	X(int, Py_AddPendingCall, (int (*fn)(void *), void *arg)) \
	X(const char *, Py_GetVersion, (void)) \
	X(void *, PyGILState_GetThisThreadState, (void)) \
	X(void *, PyInterpreterState_Main, (void)) \
	X(void *, PyInterpreterState_ThreadHead, (void *interp)) \
	X(void *, PyThreadState_Next, (void *tstate)) \
	/* The thread state holding the GIL, unchecked: 3.13 on, then before. */ \
	X(void *, PyThreadState_GetUnchecked, (void)) \
	X(void *, _PyThreadState_UncheckedGet, (void)) \
	/* 3.13 on, then before. */ \
	X(int, Py_IsFinalizing, (void)) \
	X(int, _Py_IsFinalizing, (void)) \
	X(void *, PyImport_GetModuleDict, (void)) \
	X(void *, PyImport_ImportModule, (const char *name)) \
	X(void *, PySys_GetObject, (const char *name)) \
	X(void *, PyObject_GetAttrString, (const void *o, const char *name)) \
	X(void *, PyObject_CallFunctionObjArgs, (const void *fn, ...)) \
	X(void *, PyCFunction_NewEx, (struct py_method_def *def, \
				      const void *self, const void *module)) \
	X(void, Py_IncRef, (const void *o)) \
	X(void, Py_DecRef, (const void *o)) \
	X(void, PyErr_Clear, (void)) \
	X(int, PyType_IsSubtype, (const void *a, const void *b)) \
	X(int, PyDict_Next, (const void *d, ptrdiff_t *pos, void **key, \
			     void **value)) \
	X(void *, PyDict_GetItemString, (const void *d, const char *key)) \
	X(ptrdiff_t, PyList_Size, (const void *l)) \
	X(void *, PyList_GetItem, (const void *l, ptrdiff_t i)) \
	X(int, PyList_Append, (const void *l, const void *item)) \
	X(ptrdiff_t, PyTuple_Size, (const void *t)) \
	X(void *, PyTuple_GetItem, (const void *t, ptrdiff_t i)) \
	X(long, PyLong_AsLongAndOverflow, (const void *o, int *overflow)) \
	X(const char *, PyUnicode_AsUTF8, (const void *o))

/* X(type, name): every object the shim reads or compares with. */
#define LW_PYAPI_OBJECTS(X) \
	X(const unsigned long, Py_Version) /* 3.11 on */ \
	X(const char, _PyRuntime) \
	X(void, _Py_NoneStruct) \
	/* The evaluation loop's code (python/pyeval.h). */ \
	X(void, _PyEval_EvalFrameDefault) \
	/* Only in builds laid out otherwise: free-threaded, then debug. */ \
	X(void, _Py_DecRefShared) \
	X(void, _Py_NegativeRefcount) \
	X(void, _Py_PrintReferences) \
	X(void, PyBaseObject_Type) \
	X(void, PyType_Type) \
	X(void, PyModule_Type) \
	X(void, PyDict_Type) \
	X(void, PyList_Type) \
	X(void, PyTuple_Type) \
	X(void, PySet_Type) \
	X(void, PyFrozenSet_Type) \
	X(void, PyUnicode_Type) \
	X(void, PyBytes_Type) \
	X(void, PyLong_Type) \
	X(void, PyBool_Type) \
	X(void, PyFloat_Type) \
	X(void, PyFunction_Type) \
	X(void, PyCell_Type) \
	X(void, PyCode_Type) \
	X(void, PyFrame_Type) \
	X(void, PyTraceBack_Type) \
	X(void, PyGen_Type) \
	X(void, PyCoro_Type) \
	X(void, PyAsyncGen_Type) \
	X(void, PyMethod_Type) \
	X(void, PyCFunction_Type) \
	X(void, _PyWeakref_RefType) \
	X(void, PyProperty_Type) \
	X(void, PyMemberDescr_Type) \
	X(void, PyGetSetDescr_Type) \
	X(void, PyMethodDescr_Type) \
	X(void, PyWrapperDescr_Type) \
	X(void, PyClassMethodDescr_Type) \
	X(void, PyStaticMethod_Type) \
	X(void, PyClassMethod_Type)

#define LW_PYAPI_FUNCTION_FIELD(type, name, params) type (*name) params;
#define LW_PYAPI_OBJECT_FIELD(type, name) type *name;

/* Each entry under its C name; NULL when it was not found. */
struct lw_pyapi {
	LW_PYAPI_FUNCTIONS(LW_PYAPI_FUNCTION_FIELD)
	LW_PYAPI_OBJECTS(LW_PYAPI_OBJECT_FIELD)
};

#undef LW_PYAPI_FUNCTION_FIELD
#undef LW_PYAPI_OBJECT_FIELD

/*
 * The table, filled the first time it is asked for (any thread; the
 * others wait for it) and never changed after. Never NULL. Cheap enough
 * for any path, but a reader on the allocation path keeps the pointer:
 * reading an entry through it is a load.
 */
const struct lw_pyapi *lw_pyapi(void);

/* Whether the program has name, an entry of the table. */
#define lw_pyapi_found(api, name) ((api)->name != NULL)

#endif
