/* SPDX-License-Identifier: MIT */
#include "pyembed.h"

#include <dlfcn.h>
#include <stddef.h>

#define PY_FILE_INPUT 257

/* Looked up with dlsym(), as everywhere in the shim: it does not link
 * against Python. */
static struct {
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
	void (*dec_ref)(struct py_object *o);
} py;

/* 0 unknown, 1 usable, -1 not. With the GIL. */
static int api_state;

static int load_api(void)
{
#define LOOK(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))
	LOOK(compile, "Py_CompileString");
	LOOK(eval_code, "PyEval_EvalCode");
	LOOK(dict_new, "PyDict_New");
	LOOK(dict_get_item_string, "PyDict_GetItemString");
	LOOK(dict_set_item_string, "PyDict_SetItemString");
	LOOK(import_module, "PyImport_ImportModule");
	LOOK(dec_ref, "Py_DecRef");
#undef LOOK
	for (size_t i = 0; i < sizeof(py) / sizeof(void *); i++)
		if (!((void **)&py)[i])
			return -1;
	return 0;
}

struct py_object *lw_py_embedded(const char *source, const char *file,
				 const char *name)
{
	struct py_object *code, *globals, *builtins, *res;

	if (!api_state)
		api_state = load_api() == 0 ? 1 : -1;
	if (api_state < 0)
		return NULL;
	code = py.compile(source, file, PY_FILE_INPUT);
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
	/* The globals stay: they are the module of what is returned. */
	return py.dict_get_item_string(globals, name);
}
