/* SPDX-License-Identifier: MIT */
/*
 * Who holds it, read from the interpreter's structures (walk.h).
 *
 * Everything here reads. Objects are walked with their types' tp_traverse,
 * the C function the collector itself calls; dictionaries with PyDict_Next;
 * frames, generators and strings through pyframes.h; PyTorch's tensors and
 * autograd nodes through torchread.h. None of these runs bytecode, makes an
 * object, or changes a reference count, so with the GIL held for the whole
 * walk no other thread runs, no signal handler runs (a signal that arrives
 * is handled once the interpreter next evaluates), no finaliser runs and
 * the collector's counts do not move.
 *
 * The walk is breadth first, so that each target is named by its shortest
 * path, from, in this order:
 *  1. the locals of every thread's running functions, of the coroutines
 *     of asyncio's tasks, and __main__'s globals;
 *  2. every other module's globals;
 *  3. the locals of suspended generators and coroutines that nothing
 *     walked so far reaches (a `for` loop's iterator lives on its frame's
 *     value stack, which is not read);
 *  4. reference cycles nothing else refers to: the objects the collector
 *     tracks that the walk has not met, judged as the collector judges
 *     them (a reference count that references from among them explain
 *     is garbage), each cycle walked from the object a person would name.
 * Only paths are kept (a parent index per node); objects that refer only
 * to atoms are checked when met and never queued, and the set of objects
 * met is a bitmap per MiB of address space, so that a walk over millions
 * of objects stays within a few MiB of the shim's own memory; what the
 * first two leave unmet, listed for the last two, is garbage or held from
 * C, and few.
 */
#include "walk.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "lw-cells.h"
#include "lw-format.h"
#include "pyabi.h"
#include "pyapi.h"
#include "pyframes.h"
#include "torchread.h"

/* Holders reported at most, after grouping one container's objects. */
#define MAX_HOLDERS 8
/* Autograd nodes counted behind one root at most. */
#define MAX_GRAPH_NODES 100000
/* The walk's own memory, at most: past it the walk is cut. */
#define MAX_BYTES (24u << 20)
/* Objects the cycle search judges at most. */
#define MAX_UNMET (1u << 18)
/* A path or root as written, at most. */
#define TEXT_MAX 480

/* ---- the interpreter's layout ---- */

/*
 * Offsets the walk reads that pyframes.h does not, per minor version, from
 * the headers of 3.9.18, 3.10.13, 3.11.7, 3.12.1 and 3.13.0
 * (`scripts/py-offsets.py --walk`).
 */
struct walk_layout {
	int minor;
	int interp_gc_generations; /* PyInterpreterState.gc.generations */
	int interp_gc_collecting;  /* PyInterpreterState.gc.collecting */
	int gc_generation_size;    /* sizeof(struct gc_generation) */
	int heap_cached_keys;      /* PyHeapTypeObject.ht_cached_keys */
	int func_code, func_closure, func_defaults, func_kwdefaults, func_dict;
	int exc_traceback, exc_context, exc_cause;
	int values_items;          /* PyDictValues.values */
	unsigned long managed_dict; /* Py_TPFLAGS_MANAGED_DICT, 0 before 3.11 */
	unsigned long inline_values; /* Py_TPFLAGS_INLINE_VALUES (3.13) */
};

static const struct walk_layout walk_layouts[] = {
	{ .minor = 9, .interp_gc_generations = 616 + 24, .interp_gc_collecting = 616 + 200,
	  .gc_generation_size = 24, .heap_cached_keys = 864,
	  .func_code = 16, .func_closure = 48, .func_defaults = 32, .func_kwdefaults = 40, .func_dict = 72,
	  .exc_traceback = 32, .exc_context = 40, .exc_cause = 48,
	  .values_items = 0, .managed_dict = 0, .inline_values = 0 },
	{ .minor = 10, .interp_gc_generations = 616 + 24, .interp_gc_collecting = 616 + 200,
	  .gc_generation_size = 24, .heap_cached_keys = 872,
	  .func_code = 48, .func_closure = 72, .func_defaults = 56, .func_kwdefaults = 64, .func_dict = 88,
	  .exc_traceback = 32, .exc_context = 40, .exc_cause = 48,
	  .values_items = 0, .managed_dict = 0, .inline_values = 0 },
	{ .minor = 11, .interp_gc_generations = 648 + 24, .interp_gc_collecting = 648 + 200,
	  .gc_generation_size = 24, .heap_cached_keys = 872,
	  .func_code = 48, .func_closure = 72, .func_defaults = 56, .func_kwdefaults = 64, .func_dict = 88,
	  .exc_traceback = 40, .exc_context = 48, .exc_cause = 56,
	  .values_items = 0, .managed_dict = 1ul << 4, .inline_values = 0 },
	{ .minor = 12, .interp_gc_generations = 112 + 24, .interp_gc_collecting = 112 + 200,
	  .gc_generation_size = 24, .heap_cached_keys = 880,
	  .func_code = 48, .func_closure = 72, .func_defaults = 56, .func_kwdefaults = 64, .func_dict = 88,
	  .exc_traceback = 40, .exc_context = 48, .exc_cause = 56,
	  .values_items = 0, .managed_dict = 1ul << 4, .inline_values = 0 },
	{ .minor = 13, .interp_gc_generations = 7400 + 24, .interp_gc_collecting = 7400 + 200,
	  .gc_generation_size = 24, .heap_cached_keys = 880,
	  .func_code = 48, .func_closure = 72, .func_defaults = 56, .func_kwdefaults = 64, .func_dict = 88,
	  .exc_traceback = 40, .exc_context = 48, .exc_cause = 56,
	  .values_items = 8, .managed_dict = 1ul << 4, .inline_values = 1ul << 2 },
};

#define CELL_REF 16
#define MODULE_DICT 16
#define WEAKREF_OBJECT 16
#define METHOD_FUNC 16
#define METHOD_SELF 24
#define TB_NEXT 16
#define TB_FRAME 24
#define KEYS_LOG2_INDEX_BYTES 9
#define KEYS_KIND 10
#define KEYS_NENTRIES 24
#define KEYS_INDICES 32
#define LONG_DIGITS 24

/* PyMemberDef, and its object types. */
struct member_def {
	const char *name;
	int type;
	ptrdiff_t offset;
	int flags;
	const char *doc;
};
#define T_OBJECT 6
#define T_OBJECT_EX 16

typedef int (*visit_fn)(void *object, void *arg);
typedef int (*traverse_fn)(void *object, visit_fn visit, void *arg);

static const struct lw_pyapi *api;
static struct {
	int state; /* 0 unknown, 1 usable, -1 not */
	int minor;
	const struct walk_layout *l;
	/* The thread state holding the GIL: no check of its own, unlike
	 * PyThreadState_Get(), which aborts when there is none. */
	void *(*current_tstate)(void);
	int (*is_finalizing)(void);
} py;

static int load(void)
{
	const char *v = lw_py_init() == LW_PY_SUPPORTED ? lw_py_version() : NULL;
	int minor;

	api = lw_pyapi();
	if (!v || sscanf(v, "3.%d", &minor) != 1)
		return -1;
	for (size_t i = 0; i < sizeof(walk_layouts) / sizeof(walk_layouts[0]); i++)
		if (walk_layouts[i].minor == minor)
			py.l = &walk_layouts[i];
	if (!py.l)
		return -1;
	py.minor = minor;
	py.current_tstate = minor >= 13 ? api->PyThreadState_GetUnchecked
					: api->_PyThreadState_UncheckedGet;
	py.is_finalizing = minor >= 13 ? api->Py_IsFinalizing
				       : api->_Py_IsFinalizing;
	if (!api->PyDict_Next || !api->PyInterpreterState_Main ||
	    !api->PyInterpreterState_ThreadHead || !api->PyThreadState_Next ||
	    !api->PyImport_GetModuleDict ||
	    !api->PyGILState_GetThisThreadState || !py.current_tstate ||
	    !api->Py_IsInitialized || !py.is_finalizing ||
	    !api->PyList_Type || !api->PyTuple_Type || !api->PyDict_Type ||
	    !api->PyUnicode_Type || !api->PyLong_Type ||
	    !api->PyModule_Type || !api->PyType_Type ||
	    !api->PyFunction_Type || !api->PyCell_Type ||
	    !api->PyFrame_Type || !api->PyCode_Type ||
	    !api->PyTraceBack_Type || !api->PyGen_Type ||
	    !api->PyCoro_Type || !api->PyMethod_Type ||
	    !api->PyCFunction_Type)
		return -1;
	/* A free-threaded build has no GIL to hold the world still. */
	if (lw_pyapi_found(api, _Py_DecRefShared))
		return -1;
	return 0;
}

/* ---- reading objects ---- */

static inline const void *ptr_at(const void *base, long offset)
{
	const void *p;

	memcpy(&p, (const char *)base + offset, sizeof(p));
	return p;
}

static inline long long_at(const void *base, long offset)
{
	long v;

	memcpy(&v, (const char *)base + offset, sizeof(v));
	return v;
}

static inline const void *type_of(const void *o)
{
	return ptr_at(o, LW_PY_OB_TYPE);
}

static inline unsigned long type_flags(const void *tp)
{
	return (unsigned long)long_at(tp, LW_PY_TP_FLAGS);
}

/* A type's name as Python shows it: the part after the module's dots. */
static const char *type_name(const void *tp)
{
	const char *name = ptr_at(tp, LW_PY_TP_NAME);
	const char *dot;

	if (!name)
		return "?";
	dot = strrchr(name, '.');
	return dot ? dot + 1 : name;
}

/* Whether tp has base in its MRO (read from its tp_mro tuple). */
static bool has_base(const void *tp, const void *base)
{
	const void *mro = ptr_at(tp, LW_PY_TP_MRO);
	long n;

	if (tp == base)
		return true;
	if (!mro || type_of(mro) != api->PyTuple_Type)
		return false;
	n = long_at(mro, LW_PY_OB_SIZE);
	for (long i = 0; i < n; i++)
		if (ptr_at(mro, LW_PY_TUPLE_ITEMS + 8 * i) == base)
			return true;
	return false;
}

/* Items of a list or tuple (a subclass too). */
static const void *const *seq_items(const void *o, long *n)
{
	unsigned long f = type_flags(type_of(o));

	*n = long_at(o, LW_PY_OB_SIZE);
	if (f & LW_PY_TPFLAGS_LIST_SUBCLASS)
		return ptr_at(o, LW_PY_LIST_ITEMS);
	if (f & LW_PY_TPFLAGS_TUPLE_SUBCLASS)
		return (const void *const *)((const char *)o + LW_PY_TUPLE_ITEMS);
	*n = 0;
	return NULL;
}

/* A non-negative int's value, if it fits 64 bits. */
static bool long_value(const void *o, uint64_t *out)
{
	long ndigits;
	uint64_t v = 0;

	if (!(type_flags(type_of(o)) & LW_PY_TPFLAGS_LONG_SUBCLASS))
		return false;
	if (py.minor >= 12) {
		unsigned long tag = (unsigned long)long_at(o, LW_PY_OB_SIZE);

		if ((tag & 3) == 2)
			return false; /* negative */
		ndigits = (long)(tag >> 3);
	} else {
		ndigits = long_at(o, LW_PY_OB_SIZE);
		if (ndigits < 0)
			return false;
	}
	if (ndigits > 3)
		return false;
	for (long i = ndigits; i-- > 0;) {
		uint32_t d;

		memcpy(&d, (const char *)o + LONG_DIGITS + 4 * i, sizeof(d));
		if (v >> 34)
			return false;
		v = (v << 30) | d;
	}
	*out = v;
	return true;
}

/* Whether a str equals an ASCII C string. */
static bool str_is(const void *s, const char *text)
{
	char buf[64];

	return s && type_of(s) == api->PyUnicode_Type &&
	       lw_py_str(s, buf, sizeof(buf)) == 0 && strcmp(buf, text) == 0;
}

/* ---- an instance's attributes, without making its __dict__ ---- */

struct attr_iter {
	const void *dict;     /* a real dict, or NULL */
	const char *keys;     /* shared keys of inline values */
	const void *const *values;
	long nentries;
	ptrdiff_t pos;
};

/*
 * 3.11+ keep a plain instance's attributes in values beside the object,
 * keyed by its class's shared keys, until something asks for __dict__:
 * read them there. Before, and once made, the __dict__.
 */
static void attrs_begin(const void *o, struct attr_iter *it)
{
	const void *tp = type_of(o);
	unsigned long f = type_flags(tp);
	long offset;

	memset(it, 0, sizeof(*it));
	if (py.l->managed_dict && (f & py.l->managed_dict)) {
		const void *values = NULL;

		if (py.minor == 11) {
			it->dict = ptr_at(o, -3 * 8);
			values = ptr_at(o, -4 * 8);
		} else if (py.minor == 12) {
			uintptr_t dv = (uintptr_t)ptr_at(o, -3 * 8);

			/* _PyDictOrValues_GetValues(): the values pointer
			 * is stored minus one, its low bit the tag. */
			if (dv & 1)
				values = (const void *)(dv + 1);
			else
				it->dict = (const void *)dv;
		} else {
			it->dict = ptr_at(o, -3 * 8);
			if (!it->dict && (f & py.l->inline_values)) {
				const char *v = (const char *)o + long_at(tp, LW_PY_TP_BASICSIZE);

				if (v[3]) /* valid */
					values = v;
			}
		}
		if (!it->dict && values && (f & LW_PY_TPFLAGS_HEAPTYPE)) {
			const char *keys = ptr_at(tp, py.l->heap_cached_keys);

			if (keys && keys[KEYS_KIND] != 0) {
				it->keys = keys;
				it->values = (const void *const *)((const char *)values +
								   py.l->values_items);
				it->nentries = long_at(keys, KEYS_NENTRIES);
			}
		}
		return;
	}
	offset = long_at(tp, LW_PY_TP_DICTOFFSET);
	if (offset > 0)
		it->dict = ptr_at(o, offset);
}

/* The next attribute: its name (a str) and value. */
static bool attrs_next(struct attr_iter *it, const void **name,
		       const void **value)
{
	if (it->dict) {
		void *k, *v;

		if (type_of(it->dict) != api->PyDict_Type &&
		    !(type_flags(type_of(it->dict)) & LW_PY_TPFLAGS_DICT_SUBCLASS))
			return false;
		if (!api->PyDict_Next(it->dict, &it->pos, &k, &v))
			return false;
		*name = k;
		*value = v;
		return true;
	}
	while (it->keys && it->pos < it->nentries) {
		long i = it->pos++;
		const char *entries = it->keys + KEYS_INDICES +
				      (1l << (uint8_t)it->keys[KEYS_LOG2_INDEX_BYTES]);
		const void *v = it->values[i];

		if (v) {
			*name = ptr_at(entries, 16 * i);
			*value = v;
			return true;
		}
	}
	return false;
}

/* The object member (a slot, or a C type's member) named name of tp or
 * its bases; NULL if none. */
static const struct member_def *member_named_type(const void *tp,
						  const char *name)
{
	const void *mro = ptr_at(tp, LW_PY_TP_MRO);
	long n = mro && type_of(mro) == api->PyTuple_Type ?
		 long_at(mro, LW_PY_OB_SIZE) : 0;

	for (long i = 0; i < n; i++) {
		const struct member_def *m = ptr_at(ptr_at(mro, LW_PY_TUPLE_ITEMS + 8 * i),
						    LW_PY_TP_MEMBERS);

		for (; m && m->name; m++)
			if ((m->type == T_OBJECT || m->type == T_OBJECT_EX) &&
			    strcmp(m->name, name) == 0)
				return m;
	}
	return NULL;
}

/* An attribute held in a slot or a C member of o's type. */
static const void *member_named(const void *o, const char *name)
{
	const struct member_def *m = member_named_type(type_of(o), name);

	return m ? ptr_at(o, m->offset) : NULL;
}

/* The dict key named text, in a dict; NULL if absent. */
static const void *dict_get(const void *d, const char *text)
{
	ptrdiff_t pos = 0;
	void *k, *v;

	if (!d || !(type_flags(type_of(d)) & LW_PY_TPFLAGS_DICT_SUBCLASS))
		return NULL;
	while (api->PyDict_Next(d, &pos, &k, &v))
		if (str_is(k, text))
			return v;
	return NULL;
}

/* An attribute of o as its instance holds it: slot, then attributes. */
static const void *attribute(const void *o, const char *name)
{
	struct attr_iter it;
	const void *k, *v;
	const void *m = member_named(o, name);

	if (m)
		return m;
	attrs_begin(o, &it);
	while (attrs_next(&it, &k, &v))
		if (str_is(k, name))
			return v;
	return NULL;
}

/* ---- what a type's objects are to the walk ---- */

enum kind {
	K_ATOM,      /* refers to nothing the walk follows */
	K_SKIP,      /* modules, code, descriptors: never entered */
	K_SEQ,       /* list, tuple */
	K_DICT,
	K_OBJECT,    /* anything else, through tp_traverse */
	K_CLASS,     /* a type object */
	K_TENSOR,    /* a PyTorch tensor */
	K_ARRAY,     /* __cuda_array_interface__ as a dict it holds */
	K_FUNCTION,
	K_CELL,
	K_FRAME,
	K_TRACEBACK,
	K_GEN,
	K_METHOD,
	K_OPTIMIZER, /* torch.optim's: its parameters and state are the model's */
};

struct type_slot {
	const void *type;
	uint8_t kind;
	uint8_t instance_checked;
};

static struct type_slot *types;
static size_t types_cap, types_used;

static enum kind classify(const void *tp)
{
	unsigned long f = type_flags(tp);

	if (tp == api->PyUnicode_Type || tp == api->PyLong_Type ||
	    tp == api->PyBool_Type || tp == api->PyFloat_Type ||
	    tp == api->PyBytes_Type || tp == type_of(api->_Py_NoneStruct))
		return K_ATOM;
	if (f & LW_PY_TPFLAGS_TYPE_SUBCLASS)
		return K_CLASS;
	if (tp == api->PyModule_Type || has_base(tp, api->PyModule_Type) ||
	    tp == api->PyCode_Type ||
	    tp == api->PyCFunction_Type || has_base(tp, api->PyCFunction_Type) ||
	    tp == api->PyProperty_Type || tp == api->PyMemberDescr_Type ||
	    tp == api->PyGetSetDescr_Type || tp == api->PyMethodDescr_Type ||
	    tp == api->PyWrapperDescr_Type || tp == api->PyClassMethodDescr_Type ||
	    tp == api->PyStaticMethod_Type || tp == api->PyClassMethod_Type ||
	    (api->_PyWeakref_RefType && has_base(tp, api->_PyWeakref_RefType)))
		return K_SKIP;
	if (tp == api->PyFunction_Type)
		return K_FUNCTION;
	if (tp == api->PyCell_Type)
		return K_CELL;
	if (tp == api->PyFrame_Type)
		return K_FRAME;
	if (tp == api->PyTraceBack_Type)
		return K_TRACEBACK;
	if (tp == api->PyGen_Type || tp == api->PyCoro_Type ||
	    (api->PyAsyncGen_Type && tp == api->PyAsyncGen_Type))
		return K_GEN;
	if (tp == api->PyMethod_Type)
		return K_METHOD;
	if (lw_torch_is_tensor_type(tp))
		return K_TENSOR;
	if (!(f & LW_PY_TPFLAGS_HAVE_GC) || !ptr_at(tp, LW_PY_TP_TRAVERSE))
		return K_ATOM;
	if (tp == api->PyList_Type || tp == api->PyTuple_Type)
		return K_SEQ;
	if (tp == api->PyDict_Type)
		return K_DICT;
	if (f & LW_PY_TPFLAGS_HEAPTYPE) {
		const void *mro = ptr_at(tp, LW_PY_TP_MRO);
		long n = mro && type_of(mro) == api->PyTuple_Type ?
			 long_at(mro, LW_PY_OB_SIZE) : 0;

		for (long i = 0; i < n; i++) {
			const void *base = ptr_at(mro, LW_PY_TUPLE_ITEMS + 8 * i);
			const void *d = ptr_at(base, LW_PY_TP_DICT); /* tp_dict */

			if (strcmp(type_name(base), "Optimizer") == 0 &&
			    dict_get(d, "zero_grad"))
				return K_OPTIMIZER;
			const void *iface = d ? dict_get(d, "__cuda_array_interface__") : NULL;

			/* A dict as a class attribute; a property is the
			 * program's code, never run. */
			if (iface && type_of(iface) == api->PyDict_Type)
				return K_ARRAY;
		}
		if (member_named_type(tp, "__cuda_array_interface__"))
			return K_ARRAY;
	}
	return K_OBJECT;
}

/* ---- the walk's memory: all the shim's, counted, given back at the end ---- */

static size_t bytes_used;

static void *walk_alloc(size_t size)
{
	void *p;

	if (bytes_used + size > MAX_BYTES)
		return NULL;
	p = lw_arena_alloc(size);
	if (p)
		bytes_used += size;
	return p;
}

static void walk_free(void *p, size_t size)
{
	if (p) {
		lw_arena_free(p);
		bytes_used -= size;
	}
}

static size_t hash_ptr(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

static struct type_slot *type_slot(const void *tp)
{
	size_t i;

	if (types_used * 2 >= types_cap) {
		size_t cap = types_cap ? types_cap * 2 : 1024;
		struct type_slot *t = walk_alloc(cap * sizeof(*t));

		if (!t)
			return NULL;
		for (size_t j = 0; j < types_cap; j++) {
			if (!types[j].type)
				continue;
			for (i = hash_ptr(types[j].type) & (cap - 1); t[i].type;
			     i = (i + 1) & (cap - 1))
				;
			t[i] = types[j];
		}
		walk_free(types, types_cap * sizeof(*types));
		types = t;
		types_cap = cap;
	}
	for (i = hash_ptr(tp) & (types_cap - 1); types[i].type;
	     i = (i + 1) & (types_cap - 1))
		if (types[i].type == tp)
			return &types[i];
	types[i].type = tp;
	types[i].kind = (uint8_t)classify(tp);
	types_used++;
	return &types[i];
}

/* The kind of o's type, decided with the first object of it met: a class
 * whose instances carry __cuda_array_interface__ in their own attributes
 * is an array type. */
static enum kind kind_of(const void *o)
{
	struct type_slot *t = type_slot(type_of(o));
	const void *iface;

	if (!t)
		return classify(type_of(o));
	if (t->kind == K_OBJECT && !t->instance_checked) {
		t->instance_checked = 1;
		iface = attribute(o, "__cuda_array_interface__");
		if (iface && type_of(iface) == api->PyDict_Type)
			t->kind = K_ARRAY;
	}
	return (enum kind)t->kind;
}

/*
 * What the walk has met: one bit per 8 bytes of address space, in a
 * 16 KiB bitmap per MiB that holds any of it.
 */
#define REGION_SHIFT 20
struct region {
	uintptr_t key; /* address >> REGION_SHIFT, plus one */
	uint64_t *bits;
};

static struct region *regions;
static size_t regions_cap, regions_used;

static uint64_t *region_bits(uintptr_t key, bool make)
{
	size_t i;

	if (make && regions_used * 2 >= regions_cap) {
		size_t cap = regions_cap ? regions_cap * 2 : 256;
		struct region *t = walk_alloc(cap * sizeof(*t));

		if (!t)
			return NULL;
		for (size_t j = 0; j < regions_cap; j++) {
			if (!regions[j].key)
				continue;
			for (i = hash_ptr((void *)regions[j].key) & (cap - 1);
			     t[i].key; i = (i + 1) & (cap - 1))
				;
			t[i] = regions[j];
		}
		walk_free(regions, regions_cap * sizeof(*regions));
		regions = t;
		regions_cap = cap;
	}
	if (!regions_cap)
		return NULL;
	for (i = hash_ptr((void *)key) & (regions_cap - 1); regions[i].key;
	     i = (i + 1) & (regions_cap - 1))
		if (regions[i].key == key)
			return regions[i].bits;
	if (!make)
		return NULL;
	regions[i].bits = walk_alloc((1u << (REGION_SHIFT - 3)) / 8);
	if (!regions[i].bits)
		return NULL;
	regions[i].key = key;
	regions_used++;
	return regions[i].bits;
}

static bool seen(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	uint64_t *bits = region_bits((a >> REGION_SHIFT) + 1, false);
	size_t bit = (a & ((1u << REGION_SHIFT) - 1)) >> 3;

	return bits && (bits[bit >> 6] >> (bit & 63) & 1);
}

/* Marks p met; false if it was, or if there is no memory to say so (the
 * walk is then cut). */
static bool out_of_memory;

static bool mark(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	uint64_t *bits = region_bits((a >> REGION_SHIFT) + 1, true);
	size_t bit = (a & ((1u << REGION_SHIFT) - 1)) >> 3;

	if (!bits) {
		out_of_memory = true;
		return false;
	}
	if (bits[bit >> 6] >> (bit & 63) & 1)
		return false;
	bits[bit >> 6] |= 1ull << (bit & 63);
	return true;
}

/* ---- the walk's nodes: what it queued, and from where ---- */

enum node_type { N_PY, N_GRAPH, N_IMPL };

struct node {
	const void *obj;
	uint32_t parent; /* NO_PARENT for a root */
	uint32_t aux;    /* node_type in the low 2 bits; for a root, its
			  * index among the roots above them */
};
#define NO_PARENT UINT32_MAX
#define CHUNK_SHIFT 16

static struct node *chunks[1u << 12];
static uint32_t nodes_used;

static struct node *node(uint32_t i)
{
	return &chunks[i >> CHUNK_SHIFT][i & ((1u << CHUNK_SHIFT) - 1)];
}

static uint32_t add_node(const void *obj, uint32_t parent, unsigned type,
			 uint32_t root)
{
	uint32_t i = nodes_used;
	struct node *n;

	if ((i >> CHUNK_SHIFT) >= sizeof(chunks) / sizeof(chunks[0]))
		goto full;
	if (!chunks[i >> CHUNK_SHIFT] &&
	    !(chunks[i >> CHUNK_SHIFT] =
		      walk_alloc(sizeof(struct node) << CHUNK_SHIFT)))
		goto full;
	n = node(i);
	n->obj = obj;
	n->parent = parent;
	n->aux = (root << 3) | type;
	nodes_used++;
	return i;
full:
	out_of_memory = true;
	return NO_PARENT;
}

/* Roots: how a node with no parent is named. */
enum root_kind { R_LOCAL, R_GLOBAL, R_SUSPENDED, R_TASK, R_CYCLE };

struct root {
	const void *name;  /* a str: the local's or global's name */
	const void *where; /* the code object (R_LOCAL, R_SUSPENDED) or the
			    * module's name (R_GLOBAL) */
	int line;          /* R_LOCAL: the function's first line */
	uint8_t kind;
	uint32_t objects;  /* R_CYCLE: its objects */
};

static struct root *roots;
static uint32_t roots_cap, roots_used;

static uint32_t add_root(const struct root *r)
{
	if (roots_used == roots_cap) {
		uint32_t cap = roots_cap ? roots_cap * 2 : 1024;
		struct root *t = walk_alloc(cap * sizeof(*t));

		if (!t) {
			out_of_memory = true;
			return NO_PARENT;
		}
		if (roots)
			memcpy(t, roots, roots_used * sizeof(*t));
		walk_free(roots, roots_cap * sizeof(*roots));
		roots = t;
		roots_cap = cap;
	}
	roots[roots_used] = *r;
	return roots_used++;
}

/* ---- targets ---- */

static const uint64_t *targets; /* (start, size) pairs, sorted */
static size_t targets_n, targets_found;
static uint32_t *found_at; /* node of each target, NO_PARENT before */

static long target_of(uint64_t address)
{
	size_t lo = 0, hi = targets_n;

	if (!address)
		return -1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (targets[2 * mid] <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	lo--;
	return address < targets[2 * lo] + targets[2 * lo + 1] ? (long)lo : -1;
}

/* The device address an object's memory starts at, 0 if none. */
static uint64_t buffer_of(const void *obj, unsigned type)
{
	if (type == N_IMPL)
		return lw_torch_impl_data(obj);
	if (type != N_PY)
		return 0;
	switch (kind_of(obj)) {
	case K_TENSOR:
		return lw_torch_impl_data(lw_torch_impl(obj));
	case K_ARRAY: {
		const void *iface = member_named(obj, "__cuda_array_interface__");
		const void *data;
		long n;
		const void *const *items;
		uint64_t v;

		if (!iface)
			iface = attribute(obj, "__cuda_array_interface__");
		if (!iface) {
			const void *mro = ptr_at(type_of(obj), LW_PY_TP_MRO);
			long m = mro ? long_at(mro, LW_PY_OB_SIZE) : 0;

			for (long i = 0; i < m && !iface; i++)
				iface = dict_get(ptr_at(ptr_at(mro, LW_PY_TUPLE_ITEMS + 8 * i), LW_PY_TP_DICT),
						 "__cuda_array_interface__");
		}
		if (!iface || type_of(iface) != api->PyDict_Type)
			return 0;
		data = dict_get(iface, "data");
		if (!data || type_of(data) != api->PyTuple_Type)
			return 0;
		items = seq_items(data, &n);
		return n > 0 && long_value(items[0], &v) ? v : 0;
	}
	default:
		return 0;
	}
}

/* Records obj, met as node i, if it is a target; true once all are. */
static bool check_target(const void *obj, unsigned type, uint32_t i)
{
	long t = target_of(buffer_of(obj, type));

	if (t >= 0 && found_at[t] == NO_PARENT) {
		found_at[t] = i;
		targets_found++;
	}
	return targets_found == targets_n;
}

/* ---- what an object refers to, and how ---- */

static bool late(void);
/* Set while a path is written: no time limit cuts an enumeration then. */
static bool labelling;

/* How a parent refers to a child, as a path writes it. */
enum via {
	V_NONE,    /* through tp_traverse: named by the parent's attributes */
	V_INDEX,   /* [index] */
	V_KEY,     /* [key], or .key in a dict of attributes */
	V_LOCAL,   /* a frame's local: key is its name */
	V_TEXT,    /* text, as it is */
	V_CLOSURE, /* .__closure__[index] */
	V_DEFAULT, /* .__defaults__[index] */
};

struct edge {
	const void *obj;
	unsigned type;    /* N_* */
	enum via via;
	long index;
	const void *key;  /* V_KEY, V_LOCAL: a Python object */
	const char *text; /* V_TEXT */
};

/* Called for each edge; true stops the enumeration. */
typedef bool (*edge_fn)(const struct edge *e, void *ctx);

struct edges_ctx {
	edge_fn fn;
	void *ctx;
	const void *skip[2]; /* an optimizer's own attributes */
	bool stopped;
};

static bool emit(struct edges_ctx *c, const void *obj, unsigned type,
		 enum via via, long index, const void *key, const char *text)
{
	struct edge e = { obj, type, via, index, key, text };

	if (c->stopped || !obj)
		return c->stopped;
	if (obj == c->skip[0] || obj == c->skip[1])
		return false;
	return c->stopped = c->fn(&e, c->ctx);
}

/* The traversal the collector would call for obj: none for an object it
 * does not manage (a static type, whose tp_is_gc says so). */
static traverse_fn traverse_of(const void *obj)
{
	const void *tp = type_of(obj);
	traverse_fn fn;
	int (*is_gc)(const void *o);

	if (!(type_flags(tp) & LW_PY_TPFLAGS_HAVE_GC))
		return NULL;
	memcpy(&is_gc, (const char *)tp + LW_PY_TP_IS_GC, sizeof(is_gc));
	if (is_gc && !is_gc(obj))
		return NULL;
	memcpy(&fn, (const char *)tp + LW_PY_TP_TRAVERSE, sizeof(fn));
	return fn;
}

static int visit_edge(void *obj, void *arg)
{
	return emit(arg, obj, N_PY, V_NONE, 0, NULL, NULL);
}

static void traverse(const void *obj, struct edges_ctx *c)
{
	traverse_fn fn = traverse_of(obj);

	if (fn)
		fn((void *)obj, visit_edge, c);
}

/* A local's value, its cell's contents for a cell. */
static const void *unwrapped(const void *v)
{
	return v && type_of(v) == api->PyCell_Type ? ptr_at(v, CELL_REF) : v;
}

static void local_edge(const void *name, const void *value, void *ctx)
{
	emit(ctx, unwrapped(value), N_PY, V_LOCAL, 0, name, NULL);
}

static void tuple_edges(struct edges_ctx *c, const void *t, enum via via)
{
	long m;
	const void *const *items;

	if (!t || type_of(t) != api->PyTuple_Type)
		return;
	items = seq_items(t, &m);
	for (long j = 0; j < m; j++)
		if (emit(c, items[j], N_PY, via, j, NULL, NULL))
			return;
}

/*
 * Calls fn for what node n refers to, as the walk follows it, with how it
 * refers to each: the one place that knows the objects' structure, for the
 * walk and for the paths alike.
 */
/* Whether n was reached from an unreachable cycle: what nothing reachable
 * refers to is garbage, an optimizer's state included. */
static bool from_cycle(const struct node *n)
{
	while (n->parent != NO_PARENT)
		n = node(n->parent);
	return roots[n->aux >> 3].kind == R_CYCLE;
}

static void edges(const struct node *n, edge_fn fn, void *ctx)
{
	struct edges_ctx c = { fn, ctx, { NULL, NULL }, false };
	unsigned type = n->aux & 3;
	const void *o = n->obj;

	if (type == N_GRAPH) {
		const void *next[64], *saved[64], *pyobj;
		bool hooked = false, accumulate;
		char name[32];
		size_t k = lw_torch_node_next(o, next, 64);

		for (size_t j = 0; j < k; j++)
			if (emit(&c, next[j], N_GRAPH, V_TEXT, 0, NULL, " \u2192"))
				return;
		accumulate = lw_torch_node_name(o, name, sizeof(name)) == 0 &&
			     strcmp(name, "AccumulateGrad") == 0;
		k = lw_torch_node_saved(o, saved, 64, &hooked);
		for (size_t j = 0; j < k; j++)
			if (emit(&c, saved[j], N_IMPL, V_TEXT, 0, NULL,
				 accumulate ? ".variable" : " saved tensor"))
				return;
		/* What a pack hook of saved_tensors_hooks returned, as the
		 * hook keeps it: walked, never unpacked. */
		if (hooked) {
			k = lw_torch_node_packed(o, saved, 64);
			for (size_t j = 0; j < k; j++)
				if (emit(&c, saved[j], N_PY, V_TEXT, 0, NULL,
					 " saved tensor"))
					return;
		}
		/* A custom Function's ctx: its attributes are the path's. */
		pyobj = lw_torch_node_pyobj(o);
		emit(&c, pyobj, N_PY, V_TEXT, 0, NULL, "");
		return;
	}
	if (type == N_IMPL) {
		emit(&c, lw_torch_impl_grad(o), N_IMPL, V_TEXT, 0, NULL, ".grad");
		return;
	}
	switch (kind_of(o)) {
	case K_SEQ: {
		long m;
		const void *const *items = seq_items(o, &m);

		for (long j = 0; j < m; j++) {
			/* Time is checked between nodes; inside a container
			 * only past a million items. */
			if (!(j & 0xfffff) && j && !labelling && late())
				return;
			if (emit(&c, items[j], N_PY, V_INDEX, j, NULL, NULL))
				return;
		}
		break;
	}
	case K_DICT: {
		ptrdiff_t pos = 0;
		void *k, *v;
		long j = 0;

		while (api->PyDict_Next(o, &pos, &k, &v)) {
			if (!(j & 0xfffff) && j && !labelling && late())
				return;
			if (emit(&c, v, N_PY, V_KEY, j++, k, NULL))
				return;
		}
		break;
	}
	case K_TENSOR: {
		const void *impl = lw_torch_impl(o);
		const void *fn_node = lw_torch_impl_grad_fn(impl);

		/* A custom Function's ctx, which the tensor's own traversal
		 * meets as its grad_fn's Python object, is its grad_fn. */
		c.skip[0] = lw_torch_node_pyobj(fn_node);
		traverse(o, &c);
		c.skip[0] = NULL;
		if (emit(&c, fn_node, N_GRAPH, V_TEXT, 0, NULL, ".grad_fn"))
			return;
		/* A parameter's gradient is the model's, never what to let
		 * go of. */
		if (strcmp(type_name(type_of(o)), "Parameter") != 0)
			emit(&c, lw_torch_impl_grad(impl), N_IMPL, V_TEXT, 0,
			     NULL, ".grad");
		break;
	}
	case K_FUNCTION:
		tuple_edges(&c, ptr_at(o, py.l->func_closure), V_CLOSURE);
		tuple_edges(&c, ptr_at(o, py.l->func_defaults), V_DEFAULT);
		emit(&c, ptr_at(o, py.l->func_kwdefaults), N_PY, V_TEXT, 0, NULL,
		     ".__kwdefaults__");
		/* Its __dict__: the entries are attributes. */
		emit(&c, ptr_at(o, py.l->func_dict), N_PY, V_TEXT, 0, NULL, "");
		break;
	case K_CELL:
		emit(&c, ptr_at(o, CELL_REF), N_PY, V_TEXT, 0, NULL, ".cell_contents");
		break;
	case K_FRAME:
		lw_py_frame_locals(o, local_edge, &c);
		break;
	case K_TRACEBACK:
		if (!emit(&c, ptr_at(o, TB_NEXT), N_PY, V_TEXT, 0, NULL, ".tb_next"))
			emit(&c, ptr_at(o, TB_FRAME), N_PY, V_TEXT, 0, NULL, ".tb_frame");
		break;
	case K_GEN: {
		const void *frame = lw_py_generator_frame(o);

		if (frame)
			lw_py_live_frame_locals(frame, local_edge, &c);
		break;
	}
	case K_METHOD:
		if (!emit(&c, ptr_at(o, METHOD_FUNC), N_PY, V_TEXT, 0, NULL, ".__func__"))
			emit(&c, ptr_at(o, METHOD_SELF), N_PY, V_TEXT, 0, NULL, ".__self__");
		break;
	case K_OPTIMIZER:
		/* Its parameter groups and state are the model's parameters
		 * and its own: never a path to offer as what to let go of,
		 * unless the optimizer itself is garbage (one remade every
		 * iteration, left in a cycle: its state is what is kept). */
		if (!from_cycle(n)) {
			c.skip[0] = attribute(o, "param_groups");
			c.skip[1] = attribute(o, "state");
		}
		traverse(o, &c);
		break;
	case K_OBJECT:
	case K_CLASS:
		traverse(o, &c);
		break;
	default:
		break;
	}
}

/* Whether the walk enters obj, met from a parent of kind parent_kind. */
static bool followed(enum kind k, enum kind parent_kind, bool root)
{
	switch (k) {
	case K_ATOM:
	case K_SKIP:
		return false;
	case K_CLASS:
		/* A class from a container or as a global, never from each
		 * of its instances. */
		return root || parent_kind == K_SEQ || parent_kind == K_DICT;
	case K_FRAME:
		/* A finished frame a traceback keeps; live frames are roots. */
		return parent_kind == K_TRACEBACK;
	default:
		return true;
	}
}

static bool all_atoms(const void *o, enum kind k, int depth);

/* Stops a traversal at the first object the walk would enter from an
 * instance: its class is not, nor a container of atoms. */
static int visit_stop(void *obj, void *arg)
{
	enum kind k = kind_of(obj);

	(void)arg;
	if (k == K_ATOM || k == K_SKIP || k == K_CLASS)
		return 0;
	if ((k == K_SEQ || k == K_DICT) && all_atoms(obj, k, 1))
		return 0;
	return 1;
}


/* An item of a container checked for leaves: an atom, or (depth left) a
 * small container of atoms itself, as a sample's (id, [labels]). */
#define LEAF_ITEMS 16

static bool atom_like(const void *o, int depth)
{
	enum kind k = kind_of(o);
	long m;

	if (k == K_ATOM)
		return true;
	if (!depth || (k != K_SEQ && k != K_DICT))
		return false;
	if (k == K_SEQ)
		seq_items(o, &m);
	else
		m = long_at(o, LW_PY_OB_SIZE); /* ma_used */
	return m <= LEAF_ITEMS && all_atoms(o, k, depth - 1);
}

static bool all_atoms(const void *o, enum kind k, int depth)
{
	if (k == K_SEQ) {
		long m;
		const void *const *items = seq_items(o, &m);

		for (long j = 0; j < m; j++)
			if (items[j] && !atom_like(items[j], depth))
				return false;
		return true;
	}
	if (k == K_DICT) {
		ptrdiff_t pos = 0;
		void *key, *v;

		while (api->PyDict_Next(o, &pos, &key, &v))
			if (!atom_like(v, depth))
				return false;
		return true;
	}
	if (k == K_OBJECT) {
		traverse_fn fn = traverse_of(o);

		return !fn || fn((void *)o, visit_stop, NULL) == 0;
	}
	return false;
}

/* ---- the walk ---- */

static double deadline;
static bool cut;
static uint32_t expanded;

static bool late(void)
{
	if (!cut && (out_of_memory || lw_walk_now() > deadline))
		cut = true;
	return cut;
}

#define F_LEAF 4 /* aux: met and checked, nothing to follow */

/* Adds obj as met from parent (NO_PARENT: a root, named by root); true
 * once every target is found. */
static bool meet(const void *obj, unsigned type, uint32_t parent,
		 enum kind parent_kind, uint32_t root)
{
	enum kind k = type == N_PY ? kind_of(obj) : K_OBJECT;
	bool leaf = false;
	uint32_t i;

	if (type == N_PY && !followed(k, parent_kind, parent == NO_PARENT))
		return false;
	if (!mark(obj))
		return false;
	if (type == N_PY) {
		if (k == K_ARRAY)
			leaf = true;
		else if (k == K_TENSOR) {
			const void *impl = lw_torch_impl(obj);

			leaf = !lw_torch_impl_grad_fn(impl) &&
			       !lw_torch_impl_grad(impl);
		} else if (all_atoms(obj, k, 1))
			return false;
	} else if (type == N_IMPL) {
		leaf = !lw_torch_impl_grad(obj);
	}
	i = add_node(obj, parent, type, parent == NO_PARENT ? root : 0);
	if (i == NO_PARENT)
		return false;
	if (leaf)
		node(i)->aux |= F_LEAF;
	if ((type == N_PY && (k == K_TENSOR || k == K_ARRAY)) || type == N_IMPL)
		return check_target(obj, type, i);
	return false;
}

struct meet_ctx {
	uint32_t parent;
	enum kind parent_kind;
};

static bool meet_edge(const struct edge *e, void *ctx)
{
	const struct meet_ctx *m = ctx;

	return meet(e->obj, e->type, m->parent, m->parent_kind, 0);
}

/* Expands the nodes from first on; true once every target is found. */
static bool walk_from(uint32_t first)
{
	for (uint32_t i = first; i < nodes_used; i++) {
		struct node n = *node(i);
		struct meet_ctx m = { i, (n.aux & 3) == N_PY ? kind_of(n.obj)
							    : K_OBJECT };

		if (!(++expanded & 255) && late())
			return false;
		if (n.aux & F_LEAF)
			continue;
		edges(&n, meet_edge, &m);
		if (targets_found == targets_n)
			return true;
		if (cut)
			return false;
	}
	return targets_found == targets_n;
}

static bool root_object(const void *obj, const struct root *r)
{
	uint32_t idx;

	obj = unwrapped(obj);
	if (!obj || kind_of(obj) == K_ATOM || kind_of(obj) == K_SKIP || seen(obj))
		return false;
	idx = add_root(r);
	return idx != NO_PARENT && meet(obj, N_PY, NO_PARENT, K_SEQ, idx);
}

struct frame_ctx {
	const void *code;
	int line;
	uint8_t kind;
	bool done;
};

static void root_local(const void *name, const void *value, void *data)
{
	struct frame_ctx *f = data;
	struct root r = { name, f->code, f->line, f->kind, 0 };

	if (!f->done && root_object(value, &r))
		f->done = true;
}

static int root_frame(const void *frame, const void *code, int line,
		      void *data)
{
	struct frame_ctx *f = data;
	int first = 0;

	(void)line;
	lw_py_code_info(code, NULL, 0, NULL, 0, &first);
	f->code = code;
	f->line = first;
	f->kind = R_LOCAL;
	lw_py_live_frame_locals(frame, root_local, f);
	return f->done;
}

/* The globals of a module as roots; true once every target is found. */
static bool root_globals(const void *module, const void *name)
{
	const void *d = ptr_at(module, MODULE_DICT);
	ptrdiff_t pos = 0;
	void *k, *v;

	if (!d || type_of(d) != api->PyDict_Type)
		return false;
	while (api->PyDict_Next(d, &pos, &k, &v)) {
		struct root r = { k, name, 0, R_GLOBAL, 0 };

		if (root_object(v, &r))
			return true;
	}
	return false;
}

/* The locals of a suspended generator or coroutine, as roots of kind. */
static bool generator_roots(const void *gen, uint8_t kind)
{
	const void *frame = lw_py_generator_frame(gen);
	struct frame_ctx f = { 0 };
	int line = 0;

	if (!frame)
		return false;
	f.kind = kind;
	f.code = lw_py_live_frame_code(frame);
	lw_py_code_info(f.code, NULL, 0, NULL, 0, &line);
	f.line = line;
	lw_py_live_frame_locals(frame, root_local, &f);
	return f.done;
}

static int visit_coroutine(void *obj, void *arg)
{
	bool *done = arg;

	if (kind_of(obj) != K_GEN || !mark(obj))
		return 0;
	*done = generator_roots(obj, R_TASK);
	return 1; /* a task has one coroutine */
}

/* A task of asyncio's sets: its coroutine's locals, as roots. */
static int visit_task(void *obj, void *arg)
{
	bool *done = arg;
	traverse_fn fn;

	if (api->_PyWeakref_RefType && has_base(type_of(obj), api->_PyWeakref_RefType))
		obj = (void *)ptr_at(obj, WEAKREF_OBJECT);
	if (!obj || obj == api->_Py_NoneStruct || long_at(obj, LW_PY_OB_REFCNT) <= 0 ||
	    kind_of(obj) == K_ATOM || !(fn = traverse_of(obj)))
		return 0;
	fn(obj, visit_coroutine, done);
	return *done;
}

/*
 * The coroutines of the tasks an asyncio event loop runs: their locals are
 * roots like a running function's (the loop reaches them only through its
 * own queues). asyncio keeps them in asyncio.tasks' sets: _all_tasks
 * (3.9 to 3.11) or _scheduled_tasks (3.12+), weak, and _eager_tasks.
 */
static bool task_roots(void)
{
	static const char *const sets[] = { "_all_tasks", "_scheduled_tasks",
					    "_eager_tasks" };
	const void *modules = api->PyImport_GetModuleDict(), *d = NULL;
	ptrdiff_t pos = 0;
	void *k, *v;
	bool done = false;

	while (modules && api->PyDict_Next(modules, &pos, &k, &v))
		if (str_is(k, "asyncio.tasks") && type_of(v) == api->PyModule_Type)
			d = ptr_at(v, MODULE_DICT);
	for (size_t i = 0; d && i < sizeof(sets) / sizeof(sets[0]) && !done; i++) {
		const void *set = dict_get(d, sets[i]);
		traverse_fn fn;

		if (set && kind_of(set) == K_OBJECT)
			set = attribute(set, "data"); /* a WeakSet's */
		if (!set || (type_of(set) != api->PySet_Type) || !(fn = traverse_of(set)))
			continue;
		fn((void *)set, visit_task, &done);
	}
	return done;
}

/* Phase 1: every thread's frames, asyncio's tasks, then __main__'s
 * globals. */
static bool phase_frames(void)
{
	void *me = py.current_tstate();
	struct frame_ctx f = { 0 };
	const void *modules = api->PyImport_GetModuleDict();
	ptrdiff_t pos = 0;
	void *k, *v;

	lw_py_thread_frames(me, root_frame, &f);
	for (void *t = api->PyInterpreterState_ThreadHead(
			api->PyInterpreterState_Main());
	     t && !f.done; t = api->PyThreadState_Next(t))
		if (t != me)
			lw_py_thread_frames(t, root_frame, &f);
	if (f.done || task_roots())
		return true;
	while (modules && api->PyDict_Next(modules, &pos, &k, &v))
		if (str_is(k, "__main__") && type_of(v) == api->PyModule_Type)
			return root_globals(v, k);
	return false;
}

/* Phase 2: every other module's globals. */
static bool phase_modules(void)
{
	const void *modules = api->PyImport_GetModuleDict();
	ptrdiff_t pos = 0;
	void *k, *v;

	while (modules && api->PyDict_Next(modules, &pos, &k, &v)) {
		if (late())
			return false;
		uint32_t first = nodes_used;

		if (!v || type_of(v) != api->PyModule_Type || str_is(k, "__main__"))
			continue;
		if (root_globals(v, k) || walk_from(first))
			return true;
	}
	return false;
}

/* ---- the collector's objects: suspended generators, garbage ---- */

struct gc_head {
	struct gc_head *next;
	uintptr_t prev;
};

static const char *gc_state(void)
{
	return api->PyInterpreterState_Main();
}

static bool collector_running(void)
{
	int collecting;

	memcpy(&collecting, gc_state() + py.l->interp_gc_collecting,
	       sizeof(collecting));
	return collecting != 0;
}

static bool collector_enabled(void)
{
	int enabled;

	/* gc.enabled sits 12 bytes before the generations in every
	 * supported version (_gc_runtime_state). */
	memcpy(&enabled, gc_state() + py.l->interp_gc_generations - 12,
	       sizeof(enabled));
	return enabled != 0;
}

/* Calls fn on every object the collector tracks, youngest generation
 * first, until it returns true. */
static bool each_tracked(bool (*fn)(const void *obj, void *ctx), void *ctx)
{
	for (int g = 0; g < 3; g++) {
		struct gc_head *head = (struct gc_head *)(uintptr_t)(
			gc_state() + py.l->interp_gc_generations +
			g * py.l->gc_generation_size);
		size_t steps = 0;

		for (struct gc_head *p = head->next; p && p != head; p = p->next) {
			if (!(++steps & 4095) && late())
				return true;
			if (fn(p + 1, ctx))
				return true;
		}
	}
	return false;
}

/* Objects not met yet, from the collector's lists. */
static const void **unmet;
static size_t unmet_n, unmet_cap;

static bool collect_unmet(const void *obj, void *ctx)
{
	(void)ctx;
	if (seen(obj))
		return false;
	if (unmet_n == unmet_cap) {
		size_t cap = unmet_cap ? unmet_cap * 2 : 4096;
		const void **t;

		if (cap > MAX_UNMET || !(t = walk_alloc(cap * sizeof(*t)))) {
			out_of_memory = true;
			return true;
		}
		if (unmet)
			memcpy(t, unmet, unmet_n * sizeof(*t));
		walk_free(unmet, unmet_cap * sizeof(*unmet));
		unmet = t;
		unmet_cap = cap;
	}
	unmet[unmet_n++] = obj;
	return false;
}

/* Phase 3: the locals of suspended generators and coroutines. */
static bool phase_suspended(void)
{
	uint32_t first = nodes_used;

	for (size_t i = 0; i < unmet_n; i++)
		if (kind_of(unmet[i]) == K_GEN && !seen(unmet[i]) &&
		    generator_roots(unmet[i], R_SUSPENDED))
			return true;
	return walk_from(first);
}

/* Index of an object among the unmet, through an open-addressed table. */
static uint32_t *slots;
static size_t slots_cap;

static long unmet_index(const void *obj)
{
	for (size_t i = hash_ptr(obj) & (slots_cap - 1); slots[i];
	     i = (i + 1) & (slots_cap - 1))
		if (unmet[slots[i] - 1] == obj)
			return (long)slots[i] - 1;
	return -1;
}

static long *refs;
static uint32_t *owner; /* union-find over garbage */
static uint8_t *reached;

static int visit_subtract(void *obj, void *arg)
{
	long i = unmet_index(obj);

	(void)arg;
	if (i >= 0)
		refs[i]--;
	return 0;
}

static uint32_t find(uint32_t i)
{
	while (owner[i] != i) {
		owner[i] = owner[owner[i]];
		i = owner[i];
	}
	return i;
}

static long visit_from = -1;
static uint32_t *stack;
static size_t stack_n;

static int visit_reach(void *obj, void *arg)
{
	long i = unmet_index(obj);

	(void)arg;
	if (i >= 0 && !reached[i]) {
		reached[i] = 1;
		stack[stack_n++] = (uint32_t)i;
	}
	return 0;
}

static int visit_union(void *obj, void *arg)
{
	long i = unmet_index(obj);

	(void)arg;
	if (i >= 0 && !reached[i]) {
		uint32_t a = find((uint32_t)visit_from), b = find((uint32_t)i);

		if (a != b)
			owner[b] = a;
	}
	return 0;
}

static void traverse_with(const void *obj, visit_fn fn)
{
	traverse_fn t = traverse_of(obj);

	if (t)
		t((void *)obj, fn, NULL);
}

/* The object a person would name in a cycle: an instance of a class of
 * theirs, else a container. */
static bool instance(const void *o)
{
	return kind_of(o) == K_OBJECT &&
	       (type_flags(type_of(o)) & LW_PY_TPFLAGS_HEAPTYPE);
}

static bool better_head(const void *a, const void *b)
{
	if (!b)
		return true;
	return instance(a) && !instance(b);
}

/*
 * Whether garbage object i is in a reference cycle: it reaches itself
 * through garbage. A cycle's head must be: what merely hangs off a cycle
 * (a tensor's storage, which refers to nothing) reaches none of it.
 * Depth first over the garbage, each object once per question.
 */
static uint32_t *asked_in; /* the question that last met each object */
static uint8_t *cyclic;    /* per group: its head is in a cycle */
static uint32_t question;
static size_t cycle_work;  /* objects the questions met */
static uint32_t cycle_of;
static bool cycle_found;

static int visit_cycle(void *obj, void *arg)
{
	long i = unmet_index(obj);

	(void)arg;
	if (i < 0 || reached[i])
		return 0;
	cycle_work++;
	if ((uint32_t)i == cycle_of)
		cycle_found = true;
	if (asked_in[i] != question) {
		asked_in[i] = question;
		stack[stack_n++] = (uint32_t)i;
	}
	return 0;
}

static bool in_cycle(uint32_t i)
{
	question++;
	cycle_of = i;
	cycle_found = false;
	stack_n = 0;
	traverse_with(unmet[i], visit_cycle);
	while (stack_n && !cycle_found)
		traverse_with(unmet[stack[--stack_n]], visit_cycle);
	return cycle_found;
}

/*
 * Phase 4: reference cycles nothing outside them refers to, found as the
 * collector finds them: among the objects not met, a reference count that
 * references from among them do not explain is a reference from outside
 * (a met object, C code, a frame's value stack), and what that reaches is
 * not garbage; the rest is.
 */
static bool phase_cycles(void)
{
	size_t n = 0, kept = 0;
	uint32_t first;
	uint32_t *heads, *count;
	bool done = false;

	/* What phase 3 met is not garbage. */
	for (size_t i = 0; i < unmet_n; i++)
		if (!seen(unmet[i]))
			unmet[n++] = unmet[i];
	unmet_n = n;
	if (!n)
		return false;
	for (slots_cap = 16; slots_cap < 2 * n; slots_cap *= 2)
		;
	slots = walk_alloc(slots_cap * sizeof(*slots));
	refs = walk_alloc(n * sizeof(*refs));
	owner = walk_alloc(n * sizeof(*owner));
	reached = walk_alloc(n);
	stack = walk_alloc(n * sizeof(*stack));
	heads = walk_alloc(n * sizeof(*heads));
	count = walk_alloc(n * sizeof(*count));
	cyclic = walk_alloc(n);
	asked_in = walk_alloc(n * sizeof(*asked_in));
	if (!slots || !refs || !owner || !reached || !stack || !heads || !count) {
		out_of_memory = true;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t s = hash_ptr(unmet[i]) & (slots_cap - 1);

		while (slots[s])
			s = (s + 1) & (slots_cap - 1);
		slots[s] = (uint32_t)i + 1;
		refs[i] = long_at(unmet[i], LW_PY_OB_REFCNT);
		owner[i] = (uint32_t)i;
	}
	for (size_t i = 0; i < n; i++)
		traverse_with(unmet[i], visit_subtract);
	if (late())
		goto out;
	stack_n = 0;
	for (size_t i = 0; i < n; i++)
		if (refs[i] > 0 && !reached[i]) {
			reached[i] = 1;
			stack[stack_n++] = (uint32_t)i;
		}
	while (stack_n)
		traverse_with(unmet[stack[--stack_n]], visit_reach);
	for (size_t i = 0; i < n; i++) {
		if (reached[i])
			continue;
		visit_from = (long)i;
		traverse_with(unmet[i], visit_union);
	}
	for (size_t i = 0; i < n; i++) {
		heads[i] = UINT32_MAX;
		count[i] = 0;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t r;

		if (reached[i])
			continue;
		r = find((uint32_t)i);
		count[r]++;
		if (heads[r] == UINT32_MAX ||
		    better_head(unmet[i], unmet[heads[r]]))
			heads[r] = (uint32_t)i;
	}
	/* The head a person would name among the objects in a cycle, not
	 * among those that hang off one (the storage of a tensor a list that
	 * holds itself keeps: it reaches nothing): the group's best head if
	 * it is in a cycle, else the first in a cycle, instances of the
	 * program's classes asked first. The questions stop past a bound on
	 * their work (a long chain off a cycle): the best head then stays. */
	if (!cyclic || !asked_in) {
		out_of_memory = true;
		goto out;
	}
	memset(cyclic, 0, n);
	memset(asked_in, 0, n * sizeof(*asked_in));
	question = 0;
	cycle_work = 0;
	for (int pass = 0, asked = 0; pass < 3; pass++)
		for (size_t i = 0; i < n && cycle_work < 8 * n + 4096; i++) {
			uint32_t r;

			if (reached[i])
				continue;
			r = find((uint32_t)i);
			if (cyclic[r] ||
			    (pass == 0 && heads[r] != (uint32_t)i) ||
			    (pass == 1 && !instance(unmet[i])))
				continue;
			if (!(++asked & 255) && late())
				goto out;
			if (in_cycle((uint32_t)i)) {
				heads[r] = (uint32_t)i;
				cyclic[r] = 1;
			}
		}
	if (late())
		goto out;
	first = nodes_used;
	for (size_t i = 0; i < n && !done; i++) {
		struct root r = { NULL, NULL, 0, R_CYCLE, 0 };

		if (reached[i] || find((uint32_t)i) != i || heads[i] == UINT32_MAX)
			continue;
		r.objects = count[i];
		done = root_object(unmet[heads[i]], &r);
		kept++;
	}
	if (!done)
		done = walk_from(first);
out:
	walk_free(slots, slots_cap * sizeof(*slots));
	walk_free(refs, n * sizeof(*refs));
	walk_free(owner, n * sizeof(*owner));
	walk_free(reached, n);
	walk_free(stack, n * sizeof(*stack));
	walk_free(heads, n * sizeof(*heads));
	walk_free(count, n * sizeof(*count));
	walk_free(cyclic, n);
	walk_free(asked_in, n * sizeof(*asked_in));
	cyclic = NULL;
	asked_in = NULL;
	slots = NULL;
	refs = NULL;
	owner = NULL;
	reached = NULL;
	stack = NULL;
	(void)kept;
	return done;
}

/* ---- how a person writes the path ---- */

struct text {
	char *buf;
	size_t size, len;
};

static void put(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->len + 1 >= t->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len += (size_t)n < t->size - t->len ? (size_t)n
						     : t->size - t->len - 1;
}

/* A key as the path shows it: a short identifier-like string or a number
 * as it is; anything else by its type and position, so that no secret of
 * the program (a token used as a cache key) reaches the trace. */
static void put_key(struct text *t, const void *k, long position, bool attr)
{
	char s[32];
	uint64_t v;

	if (k && type_of(k) == api->PyUnicode_Type && lw_py_str(k, s, sizeof(s)) == 0) {
		size_t n = strlen(s);
		bool ident = n > 0 && n < 25 && !(s[0] >= '0' && s[0] <= '9');

		/* A dict's key may be a number written as a str too:
		 * nn.Sequential's _modules['0']. */
		bool digits = !attr && n > 0 && n < 25;

		for (size_t i = 0; i < n && ident; i++)
			ident = (s[i] >= 'a' && s[i] <= 'z') ||
				(s[i] >= 'A' && s[i] <= 'Z') ||
				(s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
				(!attr && (s[i] == '.' || s[i] == '-'));
		for (size_t i = 0; i < n && digits; i++)
			digits = s[i] >= '0' && s[i] <= '9';
		if (ident || digits) {
			if (attr)
				put(t, ".%s", s);
			else
				put(t, "['%s']", s);
			return;
		}
	}
	if (k && (type_of(k) == api->PyLong_Type || type_of(k) == api->PyBool_Type) &&
	    long_value(k, &v)) {
		if (type_of(k) == api->PyBool_Type)
			put(t, "[%s]", v ? "True" : "False");
		else
			put(t, "[%llu]", (unsigned long long)v);
		return;
	}
	if (k == api->_Py_NoneStruct) {
		put(t, "[None]");
		return;
	}
	put(t, "[<%s #%ld>]", k ? type_name(type_of(k)) : "?", position);
}

/* Whether dict d holds the attributes of o (a class's or an instance's). */
static bool attributes_of(const void *o, const void *d)
{
	struct attr_iter it;

	if (!o)
		return false;
	if (kind_of(o) == K_CLASS)
		return ptr_at(o, LW_PY_TP_DICT) == d; /* tp_dict */
	if (kind_of(o) == K_FUNCTION)
		return ptr_at(o, py.l->func_dict) == d;
	attrs_begin(o, &it);
	return it.dict == d;
}

struct edge_find {
	const void *obj;
	unsigned type;
	struct edge e;
	bool found;
};

static bool find_edge(const struct edge *e, void *ctx)
{
	struct edge_find *f = ctx;

	if (e->obj != f->obj || e->type != f->type)
		return false;
	f->e = *e;
	f->found = true;
	return true;
}

/* How the node at index i is reached from its parent: the edge that led
 * there, else (a generic object's, through tp_traverse) the attribute,
 * slot or item of the parent that holds it. */
static void label(uint32_t i, struct text *t)
{
	const struct node *n = node(i);
	const struct node *p = node(n->parent);
	const void *c = n->obj, *o = p->obj;
	struct edge_find f = { c, n->aux & 3, { 0 }, false };

	labelling = true;
	edges(p, find_edge, &f);
	labelling = false;
	switch (f.found ? f.e.via : V_NONE) {
	case V_INDEX:
		put(t, "[%ld]", f.e.index);
		return;
	case V_KEY:
		put_key(t, f.e.key, f.e.index,
			p->parent != NO_PARENT &&
				attributes_of(node(p->parent)->obj, o));
		return;
	case V_LOCAL:
		put(t, "%s.f_locals", type_of(o) == api->PyCoro_Type ? ".cr_frame"
				      : type_of(o) == api->PyGen_Type ? ".gi_frame"
				      : kind_of(o) == K_GEN ? ".ag_frame" : "");
		put_key(t, f.e.key, 0, false);
		return;
	case V_TEXT:
		put(t, "%s", f.e.text);
		return;
	case V_CLOSURE:
		put(t, ".__closure__[%ld]", f.e.index);
		return;
	case V_DEFAULT:
		put(t, ".__defaults__[%ld]", f.e.index);
		return;
	case V_NONE:
		break;
	}
	if ((n->aux & 3) != N_PY || (p->aux & 3) != N_PY) {
		put(t, ".<?>");
		return;
	}
	{
	struct attr_iter it;
	const void *k, *v;
	const void *mro;
	long m;

	attrs_begin(o, &it);
	if (it.dict == c)
		return; /* the __dict__: its entries are attributes */
	while (attrs_next(&it, &k, &v))
		if (v == c) {
			put_key(t, k, 0, true);
			return;
		}
	mro = ptr_at(type_of(o), LW_PY_TP_MRO);
	m = mro && type_of(mro) == api->PyTuple_Type ? long_at(mro, LW_PY_OB_SIZE) : 0;
	for (long j = 0; j < m; j++) {
		const struct member_def *d =
			ptr_at(ptr_at(mro, LW_PY_TUPLE_ITEMS + 8 * j), LW_PY_TP_MEMBERS);

		for (; d && d->name; d++)
			if ((d->type == T_OBJECT || d->type == T_OBJECT_EX) &&
			    ptr_at(o, d->offset) == c) {
				put(t, ".%s", d->name);
				return;
			}
	}
	if (type_flags(type_of(o)) & LW_PY_TPFLAGS_BASE_EXC_SUBCLASS) {
		if (c == ptr_at(o, py.l->exc_traceback)) {
			put(t, ".__traceback__");
			return;
		}
		if (c == ptr_at(o, py.l->exc_context)) {
			put(t, ".__context__");
			return;
		}
		if (c == ptr_at(o, py.l->exc_cause)) {
			put(t, ".__cause__");
			return;
		}
	}
	if (type_flags(type_of(o)) &
	    (LW_PY_TPFLAGS_LIST_SUBCLASS | LW_PY_TPFLAGS_TUPLE_SUBCLASS)) {
		const void *const *items = seq_items(o, &m);

		for (long j = 0; j < m; j++)
			if (items[j] == c) {
				put(t, "[%ld]", j);
				return;
			}
	}
	if (type_flags(type_of(o)) & LW_PY_TPFLAGS_DICT_SUBCLASS) {
		ptrdiff_t pos = 0;
		void *dk, *dv;
		long j = 0;

		while (api->PyDict_Next(o, &pos, &dk, &dv)) {
			if (dv == c) {
				put_key(t, dk, j, false);
				return;
			}
			j++;
		}
	}
	/* functools' lru_cache keeps its entries in a dict only its
	 * tp_traverse shows: named as the cached function's, with how
	 * many entries it holds (what tells a cache with no bound). */
	if (type_of(c) == api->PyDict_Type &&
	    strcmp(type_name(type_of(o)), "_lru_cache_wrapper") == 0) {
		put(t, " (an lru_cache: %ld entries)", long_at(c, LW_PY_OB_SIZE));
		return;
	}
	put(t, ".<%s>", type_name(type_of(c)));
	}
}

/* A graph node's name: its Python class's for a custom Function. */
static void node_name(const void *n, char *out, size_t size)
{
	const void *ctx = lw_torch_node_pyobj(n);

	if (ctx)
		snprintf(out, size, "%s", type_name(type_of(ctx)));
	else if (lw_torch_node_name(n, out, size) < 0)
		snprintf(out, size, "?");
}

static void put_hops(struct text *t, int folded, const char *last)
{
	if (folded <= 0)
		put(t, " \u2192 %s", last);
	else
		put(t, " \u2192 \u2026 \u2192 %s", last);
}

/* nn.Module's own dicts read as the attributes they serve:
 * "._modules['fc']" is ".fc", "._parameters['0']" is "[0]". */
static void pretty(char *path)
{
	static const char *const dicts[] = { "._modules['", "._parameters['",
					     "._buffers['" };
	char *w = path;
	const char *r = path;

	while (*r) {
		bool done = false;

		for (size_t d = 0; d < 3 && !done; d++) {
			size_t n = strlen(dicts[d]);
			const char *end;

			if (strncmp(r, dicts[d], n) != 0 ||
			    !(end = strstr(r + n, "']")))
				continue;
			bool digits = end > r + n, ident = end > r + n;

			for (const char *q = r + n; q < end; q++) {
				digits &= *q >= '0' && *q <= '9';
				ident &= (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
					 (*q >= '0' && *q <= '9') || *q == '_';
			}
			if (digits) {
				*w++ = '[';
				memmove(w, r + n, (size_t)(end - r - n));
				w += end - r - n;
				*w++ = ']';
			} else if (ident && !(r[n] >= '0' && r[n] <= '9')) {
				*w++ = '.';
				memmove(w, r + n, (size_t)(end - r - n));
				w += end - r - n;
			} else {
				continue;
			}
			r = end + 2;
			done = true;
		}
		if (!done)
			*w++ = *r++;
	}
	*w = '\0';
}

/* The path to node i; *graph when it runs through an autograd graph. */
static void path_of(uint32_t i, char *out, size_t size, bool *graph)
{
	uint32_t chain[256];
	size_t n = 0;
	struct text t = { out, size, 0 };
	int hops = 0;
	char last[64] = "", name[64];
	const struct root *r;

	for (uint32_t j = i; j != NO_PARENT && n < 256; j = node(j)->parent)
		chain[n++] = j;
	out[0] = '\0';
	*graph = false;
	r = &roots[node(chain[n - 1])->aux >> 3];
	if (node(chain[n - 1])->parent != NO_PARENT)
		put(&t, "\u2026"); /* deeper than a path is written */
	else if (r->kind == R_CYCLE)
		put(&t, "<%s>", type_name(type_of(node(chain[n - 1])->obj)));
	else if (r->name && lw_py_str(r->name, name, sizeof(name)) == 0)
		put(&t, "%s", name);
	for (size_t k = n - 1; k-- > 0;) {
		char lab[160];
		struct text l = { lab, sizeof(lab), 0 };
		const struct node *c = node(chain[k]);

		lab[0] = '\0';
		label(chain[k], &l);
		if ((c->aux & 3) == N_GRAPH)
			node_name(c->obj, name, sizeof(name));
		else if ((c->aux & 3) == N_PY)
			snprintf(name, sizeof(name), "%s", type_name(type_of(c->obj)));
		if (strcmp(lab, ".grad_fn") == 0) {
			put(&t, ".grad_fn (%s)", name);
			*graph = true;
			hops = 0;
			snprintf(last, sizeof(last), "%s", name);
		} else if (strcmp(lab, " \u2192") == 0) {
			hops++;
			snprintf(last, sizeof(last), "%s", name);
		} else if (strcmp(lab, " saved tensor") == 0) {
			char of[96];

			node_name(node(c->parent)->obj, name, sizeof(name));
			snprintf(of, sizeof(of), "saved tensor of %s", name);
			put_hops(&t, hops ? hops - 1 : 0, of);
			hops = 0;
		} else {
			if (hops)
				put_hops(&t, hops - 1, last);
			hops = 0;
			put(&t, "%s", lab);
		}
	}
	if (hops)
		put_hops(&t, hops - 1, last);
	pretty(out);
}

static void root_text(const struct root *r, bool collecting,
		      int64_t steps_since_gc, char *out, size_t size)
{
	char qual[128], file[256], mod[128];

	switch (r->kind) {
	case R_LOCAL:
	case R_SUSPENDED:
	case R_TASK:
		/* Named by the function's own line (r->line, co_firstlineno),
		 * said as such: the line its frame was paused at is wherever
		 * the search happened to find it. */
		lw_py_code_info(r->where, file, sizeof(file), qual, sizeof(qual),
				NULL);
		snprintf(out, size, "local of %s (defined at %s:%d)%s", qual,
			 file, r->line,
			 r->kind == R_SUSPENDED ? ", a suspended generator"
			 : r->kind == R_TASK ? ", an asyncio task" : "");
		return;
	case R_GLOBAL:
		if (lw_py_str(r->where, mod, sizeof(mod)) < 0)
			snprintf(mod, sizeof(mod), "?");
		snprintf(out, size, "global of %s", mod);
		return;
	case R_CYCLE:
		if (!collecting)
			snprintf(out, size, "unreachable reference cycle (%u objects; the collector is off)",
				 r->objects);
		else if (steps_since_gc >= 0)
			snprintf(out, size, "unreachable reference cycle (%u objects; the collector last ran %lld step%s ago)",
				 r->objects, (long long)steps_since_gc,
				 steps_since_gc == 1 ? "" : "s");
		else
			snprintf(out, size, "unreachable reference cycle (%u objects; the collector has not run since)",
				 r->objects);
		return;
	}
	out[0] = '\0';
}

/* The path with its list indexes left out: the objects of one list are one
 * holder, as are the entries of one dict. */
static void container(const char *path, char *out, size_t size)
{
	size_t w = 0, last = (size_t)-1;

	for (const char *p = path; *p && w + 4 < size;) {
		if (*p == '[') {
			const char *q = p + 1;
			bool number = *q >= '0' && *q <= '9';

			while (*q && *q != ']')
				number &= (*q >= '0' && *q <= '9') || *q == ' ', q++;
			if (*q == ']' && (number || p[1] == '<')) {
				last = w;
				memcpy(out + w, "[*]", 3);
				w += 3;
				p = q + 1;
				continue;
			}
			last = w;
		}
		out[w++] = *p++;
	}
	out[w] = '\0';
	if (w && out[w - 1] == ']' && last != (size_t)-1)
		out[last] = '\0';
}

/* Autograd nodes behind a root tensor, counted up to MAX_GRAPH_NODES. */
static uint64_t graph_nodes(const void *obj)
{
	const void **todo;
	size_t n = 0, cap = 4096, count = 0, mark_cap = 1 << 17;
	const void **marks;
	const void *fn;

	if (kind_of(obj) != K_TENSOR ||
	    !(fn = lw_torch_impl_grad_fn(lw_torch_impl(obj))))
		return 0;
	todo = walk_alloc(cap * sizeof(*todo));
	marks = walk_alloc(mark_cap * sizeof(*marks));
	if (!todo || !marks)
		goto out;
	todo[n++] = fn;
	while (n && count < MAX_GRAPH_NODES && count * 2 < mark_cap) {
		const void *next[64];
		const void *cur = todo[--n];
		size_t s = hash_ptr(cur) & (mark_cap - 1), k;

		while (marks[s] && marks[s] != cur)
			s = (s + 1) & (mark_cap - 1);
		if (marks[s])
			continue;
		marks[s] = cur;
		count++;
		k = lw_torch_node_next(cur, next, 64);
		for (size_t j = 0; j < k && n < cap; j++)
			todo[n++] = next[j];
	}
out:
	walk_free(todo, cap * sizeof(*todo));
	walk_free(marks, mark_cap * sizeof(*marks));
	return count;
}

/* ---- one search ---- */

double lw_walk_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void lw_walk_cells(void (*found)(const char *name, const char *text,
				 size_t len, void *ctx),
		   void *ctx)
{
	static char text[LW_WALK_CELL_MAX], line[LW_WALK_CELL_MAX];
	char name[512];
	const void *modules = api->PyImport_GetModuleDict(), *cache = NULL;
	ptrdiff_t pos = 0;
	void *k, *v;

	while (modules && api->PyDict_Next(modules, &pos, &k, &v))
		if (str_is(k, "linecache") && type_of(v) == api->PyModule_Type)
			cache = dict_get(ptr_at(v, MODULE_DICT), "cache");
	if (!cache || type_of(cache) != api->PyDict_Type)
		return;
	pos = 0;
	while (api->PyDict_Next(cache, &pos, &k, &v)) {
		const void *const *entry, *const *lines;
		long n, count;
		size_t len = 0;

		if (type_of(k) != api->PyUnicode_Type ||
		    lw_py_str(k, name, sizeof(name)) < 0 ||
		    !lw_cell_name(name, strlen(name), NULL, 0))
			continue;
		/* (size, mtime, lines, fullname); a lazy entry is a
		 * 1-tuple, with no text yet. */
		if (!(type_flags(type_of(v)) & LW_PY_TPFLAGS_TUPLE_SUBCLASS) ||
		    !(entry = seq_items(v, &n)) || n < 3 || !entry[2] ||
		    !(type_flags(type_of(entry[2])) & LW_PY_TPFLAGS_LIST_SUBCLASS) ||
		    !(lines = seq_items(entry[2], &count)))
			continue;
		for (long i = 0; i < count; i++) {
			size_t l;

			if (!lines[i] || type_of(lines[i]) != api->PyUnicode_Type ||
			    lw_py_str(lines[i], line, sizeof(line)) < 0)
				break;
			l = strlen(line);
			if (len + l >= sizeof(text))
				break;	/* cut at a line's end */
			memcpy(text + len, line, l);
			len += l;
		}
		found(name, text, len, ctx);
	}
}

bool lw_walk_possible(void)
{
	void *me;

	if (!py.state)
		py.state = load() == 0 ? 1 : -1;
	if (py.state < 0 || !api->Py_IsInitialized() || py.is_finalizing())
		return false;
	/* This thread holds the GIL: the state holding it is this thread's. */
	me = py.current_tstate();
	if (!me || me != api->PyGILState_GetThisThreadState())
		return false;
	return !collector_running();
}

/*
 * Whether the path to node i runs through a metric's declared state: an
 * attribute of an object that keeps its states' defaults and reductions
 * (torchmetrics' Metric: add_state() fills _defaults and _reductions),
 * named among those defaults. What such a state keeps stays until the
 * metric is reset.
 */
static bool through_metric_state(uint32_t i)
{
	for (; node(i)->parent != NO_PARENT; i = node(i)->parent) {
		const struct node *p = node(node(i)->parent);
		const void *metric = p->obj, *defaults, *k, *v;
		struct attr_iter it;
		char name[64];

		if ((p->aux & 3) != N_PY || (node(i)->aux & 3) != N_PY)
			continue;
		/* An attribute is met through its object's __dict__. */
		if (type_of(metric) == api->PyDict_Type && p->parent != NO_PARENT &&
		    attributes_of(node(p->parent)->obj, metric))
			metric = node(p->parent)->obj;
		if (kind_of(metric) != K_OBJECT)
			continue;
		defaults = attribute(metric, "_defaults");
		if (!defaults || type_of(defaults) != api->PyDict_Type ||
		    !attribute(metric, "_reductions"))
			continue;
		attrs_begin(metric, &it);
		while (attrs_next(&it, &k, &v))
			if (v == node(i)->obj && type_of(k) == api->PyUnicode_Type &&
			    lw_py_str(k, name, sizeof(name)) == 0 &&
			    dict_get(defaults, name))
				return true;
	}
	return false;
}

struct group {
	char key[2 * TEXT_MAX];
	struct lw_walk_holder h;
	char path[TEXT_MAX], root[TEXT_MAX];
	uint64_t sizes[LW_WALK_SIZES];
};

#define MAX_GROUPS 32

static void report(int64_t steps_since_gc, bool was_cut,
		   void (*found)(const struct lw_walk_holder *h, void *ctx),
		   void *ctx)
{
	struct group *groups = walk_alloc(MAX_GROUPS * sizeof(*groups));
	size_t ngroups = 0;
	bool collecting = collector_enabled();
	/* A holder found by a search cut short says so: another may hold
	 * the rest of what it was asked about. */
	unsigned torch = (lw_torch_ready() == 1 ? LW_HOLDER_TORCH : 0) |
			 (was_cut ? LW_HOLDER_CUT : 0);

	if (!groups)
		return;
	/* In the order met: the most direct first. */
	for (;;) {
		uint32_t best = NO_PARENT;
		size_t t = 0;
		char path[TEXT_MAX], root[TEXT_MAX], key[2 * TEXT_MAX];
		bool graph;
		uint32_t top;
		const struct root *r;
		struct group *g = NULL;
		unsigned flags = torch;

		for (size_t j = 0; j < targets_n; j++)
			if (found_at[j] != NO_PARENT &&
			    (best == NO_PARENT || found_at[j] < best)) {
				best = found_at[j];
				t = j;
			}
		if (best == NO_PARENT)
			break;
		found_at[t] = NO_PARENT;
		path_of(best, path, sizeof(path), &graph);
		for (top = best; node(top)->parent != NO_PARENT;)
			top = node(top)->parent;
		r = &roots[node(top)->aux >> 3];
		root_text(r, collecting, steps_since_gc, root, sizeof(root));
		if (r->kind == R_CYCLE)
			flags |= LW_HOLDER_UNREACHABLE |
				 (collecting ? 0 : LW_HOLDER_GC_OFF);
		if (through_metric_state(best))
			flags |= LW_HOLDER_METRIC_STATE;
		container(path, key, TEXT_MAX);
		snprintf(key + strlen(key), sizeof(key) - strlen(key), "\n%s",
			 r->kind == R_CYCLE ? "unreachable" : root);
		for (size_t j = 0; j < ngroups && !g; j++)
			if (strcmp(groups[j].key, key) == 0)
				g = &groups[j];
		if (!g) {
			if (ngroups == MAX_GROUPS)
				continue;
			g = &groups[ngroups++];
			memset(g, 0, sizeof(*g));
			snprintf(g->key, sizeof(g->key), "%s", key);
			snprintf(g->root, sizeof(g->root), "%s", root);
			g->h.flags = flags;
			g->h.graph_nodes = graph ? graph_nodes(node(top)->obj) : 0;
		}
		g->h.objects++;
		/* The last one found (a list's highest index) names it. */
		snprintf(g->path, sizeof(g->path), "%s", path);
		/* An allocation of each size it holds, so that the report can
		 * tell which of its lines' memory it keeps. */
		size_t s = 0;

		while (s < g->h.count && g->sizes[s] != targets[2 * t + 1])
			s++;
		if (s == g->h.count && s < LW_WALK_SIZES) {
			g->sizes[s] = targets[2 * t + 1];
			g->h.addresses[s] = targets[2 * t];
			g->h.count++;
		} else if (s < g->h.count) {
			g->h.addresses[s] = targets[2 * t];
		}
	}
	for (size_t j = 0; j < ngroups && j < MAX_HOLDERS; j++) {
		groups[j].h.path = groups[j].path;
		groups[j].h.root = groups[j].root;
		found(&groups[j].h, ctx);
	}
	walk_free(groups, MAX_GROUPS * sizeof(*groups));
}

static void release(void)
{
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		walk_free(chunks[i], sizeof(struct node) << CHUNK_SHIFT);
		chunks[i] = NULL;
	}
	for (size_t i = 0; i < regions_cap; i++)
		walk_free(regions[i].bits, (1u << (REGION_SHIFT - 3)) / 8);
	walk_free(regions, regions_cap * sizeof(*regions));
	walk_free(types, types_cap * sizeof(*types));
	walk_free(roots, roots_cap * sizeof(*roots));
	walk_free(unmet, unmet_cap * sizeof(*unmet));
	walk_free(found_at, targets_n * sizeof(*found_at));
	regions = NULL;
	types = NULL;
	roots = NULL;
	unmet = NULL;
	found_at = NULL;
	regions_cap = regions_used = types_cap = types_used = 0;
	roots_cap = roots_used = 0;
	unmet_cap = unmet_n = 0;
	nodes_used = 0;
}

struct lw_walk_result lw_walk(const uint64_t *pairs, size_t n, double until,
			      int64_t steps_since_gc,
			      void (*found)(const struct lw_walk_holder *h,
					    void *ctx),
			      void *ctx)
{
	struct lw_walk_result res = { false, false };

	if (!n || !lw_walk_possible())
		return res;
	res.searched = true;
	deadline = until;
	cut = out_of_memory = false;
	expanded = 0;
	targets = pairs;
	targets_n = n;
	targets_found = 0;
	found_at = walk_alloc(n * sizeof(*found_at));
	if (!found_at) {
		res.cut = true;
		release();
		return res;
	}
	memset(found_at, 0xff, n * sizeof(*found_at));
	/* The program's own roots, then the modules'; what is left unmet
	 * then is garbage or held from C, and few: only those are listed
	 * for the suspended generators and the cycles. */
	if (!phase_frames() && !walk_from(0) && !late() && !phase_modules() &&
	    !late()) {
		each_tracked(collect_unmet, NULL);
		if (!late() && !phase_suspended() && !late())
			phase_cycles();
	}
	res.cut = cut && targets_found < targets_n;
	report(steps_since_gc, res.cut, found, ctx);
	release();
	return res;
}
