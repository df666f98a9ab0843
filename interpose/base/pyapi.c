/* SPDX-License-Identifier: MIT */
/*
 * The Python C API's table (pyapi.h), looked up with dlsym(RTLD_DEFAULT):
 * the interpreter's symbols are global, in the python executable or in a
 * libpython loaded with its symbols global, which extension modules need.
 */
#include "pyapi.h"

#include <dlfcn.h>
#include <pthread.h>

/* Written once under pthread_once, read-only afterwards. */
static struct lw_pyapi api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;
static int api_ready; /* set with release order once api is filled */

static void load(void)
{
#define LOOK_FUNCTION(type, name, params) \
	*(void **)&api.name = dlsym(RTLD_DEFAULT, #name);
#define LOOK_OBJECT(type, name) \
	api.name = dlsym(RTLD_DEFAULT, #name);
	LW_PYAPI_FUNCTIONS(LOOK_FUNCTION)
	LW_PYAPI_OBJECTS(LOOK_OBJECT)
#undef LOOK_FUNCTION
#undef LOOK_OBJECT
	__atomic_store_n(&api_ready, 1, __ATOMIC_RELEASE);
}

const struct lw_pyapi *lw_pyapi(void)
{
	if (!__atomic_load_n(&api_ready, __ATOMIC_ACQUIRE))
		pthread_once(&api_once, load);
	return &api;
}
