/* SPDX-License-Identifier: MIT */
/*
 * Where the program's Python code comes from: runs facts() of
 * scripts/leakwatch/_origins.py (compiled into the shim as
 * lw_origins_source) inside the program's interpreter, with the GIL held,
 * and writes a PYPATH record for each fact it returns. The report tells
 * the user's code from libraries with them (report/symbols/usercode.c).
 *
 * The Python C API is looked up with dlsym(), as in pyhooks.c and
 * holders.c: the shim does not link against Python.
 */
#include "origins.h"

#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lw-coderoots.h"
#include "pyembed.h"
#include "tracker.h"

extern const char lw_origins_source[];

struct py_object;

static struct {
	int (*is_initialized)(void);
	struct py_object *(*call_objargs)(struct py_object *fn, ...);
	struct py_object *(*bool_from_long)(long v);
	ptrdiff_t (*list_size)(struct py_object *l);
	struct py_object *(*list_get_item)(struct py_object *l, ptrdiff_t i);
	struct py_object *(*tuple_get_item)(struct py_object *t, ptrdiff_t i);
	long (*long_as_long)(struct py_object *o);
	int (*bytes_as_string)(struct py_object *o, char **buf,
			       ptrdiff_t *len);
	void (*dec_ref)(struct py_object *o);
	void (*err_clear)(void);
} py;

/* 0 unknown, 1 usable, -1 not a usable CPython. With the GIL. */
static int api_state;
/* The compiled facts(); with the GIL. */
static struct py_object *facts_fn;
static int failed_once;
/* The next call starts afresh: a new trace (after fork) has none of the
 * facts recorded so far. */
static int fresh = 1;
/* Facts were recorded once the first Python stack was seen. */
static int early_done;
/* The facts of this trace, and the rules made of them for the exit
 * summary (lw_origins_code_origin()); with the GIL. */
static struct lw_code_fact *facts;
static size_t fact_count, fact_capacity;
static struct lw_code_roots *roots;
/* LEAKWATCH_USER_CODE's directories, read once. */
static char **named;
static size_t named_count;
static int named_read;

static int load_api(void)
{
#define LOOK(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))
	LOOK(is_initialized, "Py_IsInitialized");
	LOOK(call_objargs, "PyObject_CallFunctionObjArgs");
	LOOK(bool_from_long, "PyBool_FromLong");
	LOOK(list_size, "PyList_Size");
	LOOK(list_get_item, "PyList_GetItem");
	LOOK(tuple_get_item, "PyTuple_GetItem");
	LOOK(long_as_long, "PyLong_AsLong");
	LOOK(bytes_as_string, "PyBytes_AsStringAndSize");
	LOOK(dec_ref, "Py_DecRef");
	LOOK(err_clear, "PyErr_Clear");
#undef LOOK
	for (size_t i = 0; i < sizeof(py) / sizeof(void *); i++)
		if (!((void **)&py)[i])
			return -1;
	return 0;
}

/* One warning, once: the report then judges code by its paths alone. */
static void give_up(const char *why)
{
	py.err_clear();
	if (!failed_once) {
		failed_once = 1;
		lw_warn_once(LW_WARN_ORIGINS, "reading where Python code comes from failed (%s); reports tell the program's code from libraries by their paths alone", why);
	}
}

/* facts(), compiled the first time. With the GIL. */
static struct py_object *facts_function(void)
{
	if (!facts_fn)
		facts_fn = lw_py_embedded(lw_origins_source,
					  "<leakwatch origins>", "facts");
	return facts_fn;
}

/* Keeps a fact for the exit summary's rules; -1 without memory. */
static int keep_fact(unsigned kind, const char *path, const char *name)
{
	struct lw_code_fact *grown;
	char *p, *n;

	if (fact_count == fact_capacity) {
		size_t next = fact_capacity ? fact_capacity * 2 : 32;

		if (!(grown = realloc(facts, next * sizeof(*grown))))
			return -1;
		facts = grown;
		fact_capacity = next;
	}
	p = strdup(path);
	n = name[0] ? strdup(name) : NULL;
	if (!p || (name[0] && !n)) {
		free(p);
		free(n);
		return -1;
	}
	facts[fact_count++] = (struct lw_code_fact){ kind, p, n };
	return 0;
}

static void drop_facts(void)
{
	for (size_t i = 0; i < fact_count; i++) {
		free((char *)facts[i].path);
		free((char *)facts[i].name);
	}
	fact_count = 0;
	lw_code_roots_free(roots);
	roots = NULL;
}

/* LEAKWATCH_USER_CODE: colon-separated directories, relative ones
 * against the working directory. */
static void read_named(void)
{
	const char *list = getenv("LEAKWATCH_USER_CODE");
	char cwd[PATH_MAX];
	const char *base = getcwd(cwd, sizeof(cwd)) ? cwd : "/";

	named_read = 1;
	while (list && *list) {
		size_t len = strcspn(list, ":");
		char **grown, *dir;

		if (len && (dir = lw_code_path_normalise(base, list, len))) {
			grown = realloc(named, (named_count + 1) *
						       sizeof(*grown));
			if (!grown) {
				free(dir);
				return;
			}
			named = grown;
			named[named_count++] = dir;
		}
		list += len + (list[len] == ':');
	}
}

/* The rules for the exit summary, made again from the facts so far. */
static void make_roots(void)
{
	struct lw_code_roots *made;

	if (!named_read)
		read_named();
	if (lw_code_roots_new(facts, fact_count, (const char *const *)named,
			      named_count, NULL, &made) < 0)
		return;	/* the summary judges by paths, as before */
	lw_code_roots_free(roots);
	roots = made;
}

enum lw_code_origin lw_origins_code_origin(const char *file)
{
	return lw_code_roots_origin(roots, file, strlen(file));
}

/* A bytes object's text, when it holds no NUL; else NULL. */
static const char *text_of(struct py_object *o)
{
	char *buf;
	ptrdiff_t len;

	if (!o || py.bytes_as_string(o, &buf, &len) < 0)
		return NULL;
	return strlen(buf) == (size_t)len ? buf : NULL;
}

/* Records one (kind, path, name): 0, 1 when no trace took it, -1 when
 * it is not one. */
static int record_one(struct py_object *t)
{
	struct py_object *kind = t ? py.tuple_get_item(t, 0) : NULL;
	const char *path = t ? text_of(py.tuple_get_item(t, 1)) : NULL;
	const char *name = t ? text_of(py.tuple_get_item(t, 2)) : NULL;
	long k = kind ? py.long_as_long(kind) : -1;

	if (!path || !name || k < 1 || k > LW_PYPATH_KIND_MAX)
		return -1;
	if (lw_record_pypath((unsigned)k, path, name) < 0)
		return 1;
	keep_fact((unsigned)k, path, name);
	return 0;
}

void lw_origins_record(void)
{
	struct py_object *fn, *flag, *res;
	ptrdiff_t n;

	if (!lw_enter())
		return;
	if (!api_state)
		api_state = load_api() == 0 ? 1 : -1;
	if (api_state < 0 || !py.is_initialized())
		goto out;
	fn = facts_function();
	flag = fn ? py.bool_from_long(fresh) : NULL;
	res = flag ? py.call_objargs(fn, flag, (struct py_object *)NULL)
		   : NULL;
	if (flag)
		py.dec_ref(flag);
	if (!res) {
		give_up("it raised an exception");
		goto out;
	}
	if (fresh)
		drop_facts();	/* a new trace's */
	fresh = 0;
	n = py.list_size(res);
	for (ptrdiff_t i = 0; i < n; i++) {
		int rc = record_one(py.list_get_item(res, i));

		if (rc < 0) {
			give_up("it returned something unexpected");
			break;
		}
		/* No trace took it: all of them again next time. */
		if (rc > 0)
			fresh = 1;
	}
	if (n < 0)
		give_up("it returned something unexpected");
	py.dec_ref(res);
	py.err_clear();
	if (n > 0)
		make_roots();
out:
	lw_leave();
}

int lw_origins_early_due(void)
{
	return !__atomic_load_n(&early_done, __ATOMIC_ACQUIRE);
}

void lw_origins_record_early(void)
{
	if (__atomic_load_n(&early_done, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&early_done, 1, __ATOMIC_RELEASE);
	lw_origins_record();
}

void lw_origins_reset(void)
{
	fresh = 1;
	__atomic_store_n(&early_done, 0, __ATOMIC_RELEASE);
}
