/* SPDX-License-Identifier: MIT */
/*
 * Python frames read straight from CPython's structures (see pyframes.h).
 *
 * Per version, what is read:
 *   3.9, 3.10  tstate->frame, a PyFrameObject chain (f_back, f_code, f_lasti);
 *              one evaluation-loop activation per frame.
 *   3.11       tstate->cframe->current_frame, a _PyInterpreterFrame chain
 *              (previous, f_code, prev_instr); is_entry marks the first frame
 *              of each activation.
 *   3.12       the same chain, but each activation pushes a shim frame owned
 *              by FRAME_OWNED_BY_CSTACK below its first frame (ceval.c,
 *              "entry_frame"); is_entry is gone.
 *   3.13       tstate->current_frame; f_executable and instr_ptr replace f_code
 *              and prev_instr; shims as in 3.12. _PyRuntime starts with
 *              _Py_DebugOffsets, which init checks against the table.
 * The thread state comes from PyGILState_GetThisThreadState(), which in every
 * supported version is a flag test plus pthread_getspecific() (checked in the
 * disassembly of 3.9.18, 3.10.13, 3.11.2, 3.11.7, 3.12.1 and 3.13.0). Line
 * tables are decoded here rather than with PyCode_Addr2Line(): 3.11's version
 * reads _co_linearray, which a thread that starts tracing fills in place.
 */
#include "pyframes.h"
#include "lw-hash.h"
#include "pyeval.h"
#include "pyapi.h"
#include "arena.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum frame_kind {
	PY_FRAME_OBJECT, /* 3.9, 3.10 */
	PY_FRAME_311,    /* _PyInterpreterFrame with is_entry */
	PY_FRAME_312,    /* _PyInterpreterFrame with C-stack shim frames */
};

enum line_format {
	PY_LINES_LNOTAB,    /* 3.9 co_lnotab, byte offsets */
	PY_LINES_310,       /* 3.10 co_linetable, byte offsets */
	PY_LINES_LOCATIONS, /* 3.11+ co_linetable, code units (Objects/locations.md) */
};

/* Byte offsets into CPython structures; -1 where a version has no such field. */
struct py_layout {
	int minor;
	enum frame_kind frame_kind;
	enum line_format line_format;
	int tstate_frame;         /* ->frame (3.9/3.10), ->cframe (3.11/3.12), ->current_frame (3.13) */
	int cframe_current_frame; /* _PyCFrame.current_frame (3.11/3.12) */
	int frame_previous;       /* f_back / previous */
	int frame_code;           /* f_code / f_executable */
	int frame_instr;          /* int f_lasti / prev_instr / instr_ptr */
	int frame_owner;
	int frame_is_entry;
	int owner_generator;      /* FRAME_OWNED_BY_GENERATOR */
	int owner_cstack;         /* FRAME_OWNED_BY_CSTACK */
	int code_filename;
	int code_name;            /* co_qualname (3.11+), co_name before */
	int code_first_line;
	int code_line_table;      /* co_lnotab (3.9), co_linetable */
	int code_start;           /* co_code_adaptive (3.11+) */
	int code_first_traceable; /* _co_firsttraceable (3.11+) */
	int object_type;
	int bytes_size;
	int bytes_data;
	int tuple_items;          /* PyTupleObject.ob_item */
	/* Fast locals (lw_py_frame_locals()). 3.11+: the frame object's
	 * _PyInterpreterFrame, its localsplus, and the code's names and kinds
	 * of them; 3.9/3.10: the frame object's f_localsplus, co_nlocals
	 * and co_varnames, then the cells and free variables. */
	int frameobj_frame;
	int frame_localsplus;
	int code_nlocalsplus;
	int code_localsplusnames;
	int code_localspluskinds;
	int code_cellvars;
	int code_freevars;
	int unicode_length;
	int unicode_state;
	int unicode_ascii_size;   /* sizeof(PyASCIIObject): compact ASCII data follows */
	int unicode_compact_size; /* sizeof(PyCompactUnicodeObject): other compact data follows */
	int unicode_data;         /* PyUnicodeObject.data.any, for legacy strings */
	uint32_t kind_mask;       /* bits of PyASCIIObject.state */
	uint32_t compact_mask;
	uint32_t ascii_mask;
	uint32_t ready_mask;      /* 0 from 3.12 (every string is ready) */
	int runtime_finalizing;   /* _PyRuntimeState._finalizing */
	/* Generators (lw_py_generator_frame()): gi_frame, a frame object
	 * (3.9/3.10), or gi_iframe, the frame inside the generator (3.11+),
	 * and gi_frame_state (3.11+; -1 before). */
	int gen_frame;
	int gen_frame_state;
};

/*
 * Produced by `python3 scripts/py-offsets.py` (x86-64 and any LP64 target
 * with the same alignment rules), which compiles a probe against each
 * version's headers, internal ones included, and prints offsetof() values.
 * Rerun it and paste its output here to add or check a version.
 */
static const struct py_layout layouts[] = {
	{ /* 3.9: from the headers of 3.9.18 */
		.minor = 9, .frame_kind = PY_FRAME_OBJECT, .line_format = PY_LINES_LNOTAB,
		.tstate_frame = 24, .cframe_current_frame = -1, .runtime_finalizing = 16,
		.frame_previous = 24, .frame_code = 32, .frame_instr = 104,
		.frame_owner = -1, .frame_is_entry = -1, .owner_generator = -1, .owner_cstack = -1,
		.code_filename = 104, .code_name = 112, .code_first_line = 40,
		.code_line_table = 120, .code_start = -1, .code_first_traceable = -1,
		.object_type = 8, .bytes_size = 16, .bytes_data = 32, .tuple_items = 24,
		.frameobj_frame = -1, .frame_localsplus = 360,
		.code_nlocalsplus = 28, .code_localsplusnames = 72, .code_localspluskinds = -1,
		.code_cellvars = 88, .code_freevars = 80,
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48,
		.unicode_compact_size = 72, .unicode_data = 72,
		.kind_mask = 0x1c, .compact_mask = 0x20, .ascii_mask = 0x40, .ready_mask = 0x80,
		.gen_frame = 16, .gen_frame_state = -1,
	},
	{ /* 3.10: from the headers of 3.10.13 */
		.minor = 10, .frame_kind = PY_FRAME_OBJECT, .line_format = PY_LINES_310,
		.tstate_frame = 24, .cframe_current_frame = -1, .runtime_finalizing = 16,
		.frame_previous = 24, .frame_code = 32, .frame_instr = 96,
		.frame_owner = -1, .frame_is_entry = -1, .owner_generator = -1, .owner_cstack = -1,
		.code_filename = 104, .code_name = 112, .code_first_line = 40,
		.code_line_table = 120, .code_start = -1, .code_first_traceable = -1,
		.object_type = 8, .bytes_size = 16, .bytes_data = 32, .tuple_items = 24,
		.frameobj_frame = -1, .frame_localsplus = 352,
		.code_nlocalsplus = 28, .code_localsplusnames = 72, .code_localspluskinds = -1,
		.code_cellvars = 88, .code_freevars = 80,
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48,
		.unicode_compact_size = 72, .unicode_data = 72,
		.kind_mask = 0x1c, .compact_mask = 0x20, .ascii_mask = 0x40, .ready_mask = 0x80,
		.gen_frame = 16, .gen_frame_state = -1,
	},
	{ /* 3.11: from the headers of 3.11.7, 3.11.2 */
		.minor = 11, .frame_kind = PY_FRAME_311, .line_format = PY_LINES_LOCATIONS,
		.tstate_frame = 56, .cframe_current_frame = 8, .runtime_finalizing = 24,
		.frame_previous = 48, .frame_code = 32, .frame_instr = 56,
		.frame_owner = 69, .frame_is_entry = 68, .owner_generator = 1, .owner_cstack = -1,
		.code_filename = 112, .code_name = 128, .code_first_line = 72,
		.code_line_table = 136, .code_start = 184, .code_first_traceable = 168,
		.object_type = 8, .bytes_size = 16, .bytes_data = 32, .tuple_items = 24,
		.frameobj_frame = 24, .frame_localsplus = 72,
		.code_nlocalsplus = 76, .code_localsplusnames = 96, .code_localspluskinds = 104,
		.code_cellvars = -1, .code_freevars = -1,
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48,
		.unicode_compact_size = 72, .unicode_data = 72,
		.kind_mask = 0x1c, .compact_mask = 0x20, .ascii_mask = 0x40, .ready_mask = 0x80,
		.gen_frame = 80, .gen_frame_state = 75,
	},
	{ /* 3.12: from the headers of 3.12.1 */
		.minor = 12, .frame_kind = PY_FRAME_312, .line_format = PY_LINES_LOCATIONS,
		.tstate_frame = 56, .cframe_current_frame = 0, .runtime_finalizing = 24,
		.frame_previous = 8, .frame_code = 0, .frame_instr = 56,
		.frame_owner = 70, .frame_is_entry = -1, .owner_generator = 1, .owner_cstack = 3,
		.code_filename = 112, .code_name = 128, .code_first_line = 68,
		.code_line_table = 136, .code_start = 192, .code_first_traceable = 176,
		.object_type = 8, .bytes_size = 16, .bytes_data = 32, .tuple_items = 24,
		.frameobj_frame = 24, .frame_localsplus = 72,
		.code_nlocalsplus = 72, .code_localsplusnames = 96, .code_localspluskinds = 104,
		.code_cellvars = -1, .code_freevars = -1,
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 40,
		.unicode_compact_size = 56, .unicode_data = 56,
		.kind_mask = 0x1c, .compact_mask = 0x20, .ascii_mask = 0x40, .ready_mask = 0x0,
		.gen_frame = 72, .gen_frame_state = 67,
	},
	{ /* 3.13: from the headers of 3.13.0 */
		.minor = 13, .frame_kind = PY_FRAME_312, .line_format = PY_LINES_LOCATIONS,
		.tstate_frame = 72, .cframe_current_frame = -1, .runtime_finalizing = 608,
		.frame_previous = 8, .frame_code = 0, .frame_instr = 56,
		.frame_owner = 70, .frame_is_entry = -1, .owner_generator = 1, .owner_cstack = 3,
		.code_filename = 112, .code_name = 128, .code_first_line = 68,
		.code_line_table = 136, .code_start = 200, .code_first_traceable = 184,
		.object_type = 8, .bytes_size = 16, .bytes_data = 32, .tuple_items = 24,
		.frameobj_frame = 24, .frame_localsplus = 72,
		.code_nlocalsplus = 72, .code_localsplusnames = 96, .code_localspluskinds = 104,
		.code_cellvars = -1, .code_freevars = -1,
		.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 40,
		.unicode_compact_size = 56, .unicode_data = 56,
		.kind_mask = 0x1c, .compact_mask = 0x20, .ascii_mask = 0x40, .ready_mask = 0x0,
		.gen_frame = 72, .gen_frame_state = 67,
	},
};

/* Written once under pthread_once, read-only afterwards. */
static struct {
	enum lw_py_status status;
	const struct py_layout *layout;
	const struct lw_pyapi *api;
	struct lw_py_eval_ranges eval;
	char version[32];
} py;

static pthread_once_t py_once = PTHREAD_ONCE_INIT;
static int py_ready; /* set with release order once py is filled */

/* ---- reading the interpreter's memory ---- */

static inline const char *load_ptr(const void *base, int offset)
{
	const char *value;
	memcpy(&value, (const char *)base + offset, sizeof(value));
	return value;
}

static inline int load_int(const void *base, int offset)
{
	int value;
	memcpy(&value, (const char *)base + offset, sizeof(value));
	return value;
}

static inline long load_long(const void *base, int offset)
{
	long value;
	memcpy(&value, (const char *)base + offset, sizeof(value));
	return value;
}

static inline int has_type(const void *object, const void *type)
{
	return object && load_ptr(object, py.layout->object_type) == type;
}

/* ---- line tables ---- */

/* Objects/locations.md: 6-bit chunks, least significant first, 0x40 = more. */
static unsigned read_varint(const uint8_t **p, const uint8_t *end)
{
	unsigned value = 0, shift = 0;
	while (*p < end) {
		uint8_t byte = *(*p)++;
		value |= (unsigned)(byte & 63) << shift;
		if (!(byte & 64) || shift > 24)
			break;
		shift += 6;
	}
	return value;
}

static int read_svarint(const uint8_t **p, const uint8_t *end)
{
	unsigned value = read_varint(p, end);
	return (value & 1) ? -(int)(value >> 1) : (int)(value >> 1);
}

/* 3.11+: offset in code units. Mirrors codeobject.c's advance(). */
static int32_t line_from_locations(const uint8_t *p, const uint8_t *end,
				   int line, long offset)
{
	long addr = 0;

	while (p < end) {
		uint8_t head = *p++;
		int code = (head >> 3) & 15;
		long length = (head & 7) + 1;

		if (code == 14 || code == 13) /* long form, no-column form */
			line += read_svarint(&p, end);
		else if (code >= 10 && code <= 12) /* one-line forms */
			line += code - 10;
		if (offset < addr + length)
			return code == 15 ? -1 : line;
		addr += length;
		while (p < end && !(*p & 0x80))
			p++;
	}
	return -1;
}

/* 3.10: (byte delta, signed line delta) pairs; -128 means no line. */
static int32_t line_from_310(const uint8_t *p, const uint8_t *end, int line, long offset)
{
	long addr = 0;

	for (; p + 1 < end; p += 2) {
		long start = addr;
		int delta = (int8_t)p[1];
		addr += p[0];
		if (delta != -128)
			line += delta;
		if (offset >= start && offset < addr)
			return delta == -128 ? -1 : line;
	}
	return -1;
}

/* 3.9: (byte increment, signed line increment) pairs; PyCode_Addr2Line(). */
static int32_t line_from_lnotab(const uint8_t *p, const uint8_t *end, int line, long offset)
{
	long addr = 0;

	for (; p + 1 < end; p += 2) {
		addr += p[0];
		if (addr > offset)
			break;
		line += (int8_t)p[1];
	}
	return line;
}

static int32_t decode_line(const char *table, int first_line, long offset)
{
	const struct py_layout *l = py.layout;

	if (!has_type(table, py.api->PyBytes_Type))
		return -1;
	long size = load_long(table, l->bytes_size);
	const uint8_t *data = (const uint8_t *)table + l->bytes_data;
	if (size < 0)
		return -1;
	switch (l->line_format) {
	case PY_LINES_LNOTAB:
		return line_from_lnotab(data, data + size, first_line, offset);
	case PY_LINES_310:
		return line_from_310(data, data + size, first_line, offset * 2);
	case PY_LINES_LOCATIONS:
		return line_from_locations(data, data + size, first_line, offset);
	}
	return -1;
}

/*
 * Decoding is a linear scan of the table, up to ~1 us for a frame near the
 * end of a long module or function, and the outer frames of a stack sit at
 * the same place capture after capture. So lines are cached, in one 4-way
 * set-associative table shared by all threads without a lock: each entry is
 * three words written and read one by one, the third a hash of the other two
 * and of the code object's line table, so a torn or stale entry reads as a
 * miss.
 */
#define LINE_CACHE_SETS 512
#define LINE_CACHE_WAYS 4

struct line_cache_entry {
	uint64_t code, where, check; /* where: offset << 32 | line */
};

static struct line_cache_entry line_cache[LINE_CACHE_SETS][LINE_CACHE_WAYS];
static unsigned line_cache_victim;

static inline uint64_t line_check(uint64_t code, uint64_t where, uint64_t table)
{
	uint64_t h = (code ^ (table << 7)) * LW_HASH_GOLDEN;
	h ^= where * 0xc2b2ae3d27d4eb4fu;
	return h ^ (h >> 29);
}

/* offset: f_lasti before 3.11 (bytes in 3.9, code units in 3.10), the
 * instruction's index in code units from 3.11. */
static int32_t code_line(const char *code, long offset)
{
	const struct py_layout *l = py.layout;
	int first_line = load_int(code, l->code_first_line);
	const char *table = load_ptr(code, l->code_line_table);

	if (offset < 0 || offset > INT32_MAX)
		return offset < 0 ? first_line : -1;

	uint64_t key = (uint64_t)(uintptr_t)code;
	uint64_t table_key = (uint64_t)(uintptr_t)table;
	uint64_t mix = (key ^ ((uint64_t)offset << 40)) * LW_HASH_GOLDEN;
	struct line_cache_entry *set = line_cache[(mix >> 40) % LINE_CACHE_SETS];

	for (unsigned way = 0; way < LINE_CACHE_WAYS; way++) {
		struct line_cache_entry *e = &set[way];
		if (__atomic_load_n(&e->code, __ATOMIC_RELAXED) != key)
			continue;
		uint64_t where = __atomic_load_n(&e->where, __ATOMIC_RELAXED);
		uint64_t check = __atomic_load_n(&e->check, __ATOMIC_RELAXED);
		if ((where >> 32) == (uint64_t)offset &&
		    check == line_check(key, where, table_key))
			return (int32_t)(uint32_t)where;
	}

	int32_t line = decode_line(table, first_line, offset);
	uint64_t where = (uint64_t)offset << 32 | (uint32_t)line;
	unsigned victim = __atomic_fetch_add(&line_cache_victim, 1, __ATOMIC_RELAXED);
	struct line_cache_entry *e = &set[victim % LINE_CACHE_WAYS];
	__atomic_store_n(&e->code, key, __ATOMIC_RELAXED);
	__atomic_store_n(&e->where, where, __ATOMIC_RELAXED);
	__atomic_store_n(&e->check, line_check(key, where, table_key), __ATOMIC_RELAXED);
	return line;
}

/* ---- the frame walk ---- */

static const char *top_frame(const char *tstate)
{
	const struct py_layout *l = py.layout;
	const char *frame = load_ptr(tstate, l->tstate_frame);

	if (l->cframe_current_frame >= 0 && frame)
		frame = load_ptr(frame, l->cframe_current_frame);
	return frame;
}

/* The frames written since the last activation boundary (run of them) end
 * an activation: the last one written is its entry frame. */
static inline void end_activation(struct lw_py_frame *frames, unsigned n, unsigned *run)
{
	if (*run)
		frames[n - 1].entry = 1;
	*run = 0;
}

/*
 * The lines of each thread's previous capture, by position: the outer frames
 * of a Python stack sit at the same call, capture after capture, and this
 * small per-thread array stays in the cache where the shared line cache,
 * looked up once per frame, mostly does not. An entry counts only for the
 * same code object, line table and instruction.
 */
struct line_memo {
	const char *code, *table;
	long offset;
	int32_t line;
};

static __thread struct line_memo *line_memo
	__attribute__((tls_model("initial-exec")));
static pthread_key_t line_memo_key;
static pthread_once_t line_memo_once = PTHREAD_ONCE_INIT;
static int line_memo_key_made;

/* What line_memo holds once its thread's destructors freed it: a later
 * destructor may still allocate, and captures without one. */
#define LINE_MEMO_GONE ((struct line_memo *)1)

static void free_line_memo(void *data)
{
	lw_arena_free(data);
	line_memo = LINE_MEMO_GONE;
}

static void make_line_memo_key(void)
{
	if (pthread_key_create(&line_memo_key, free_line_memo) == 0)
		line_memo_key_made = 1;
}

static struct line_memo *thread_line_memo(void)
{
	if (line_memo == LINE_MEMO_GONE)
		return NULL;
	if (line_memo)
		return line_memo;
	pthread_once(&line_memo_once, make_line_memo_key);
	if (!line_memo_key_made)
		return NULL;
	line_memo = lw_arena_alloc(LW_MAX_PY_FRAMES * sizeof(*line_memo));
	if (line_memo) {
		memset(line_memo, 0, LW_MAX_PY_FRAMES * sizeof(*line_memo));
		pthread_setspecific(line_memo_key, line_memo);
	}
	return line_memo;
}

/* code_line(), through the memo entry of output position n. */
static int32_t memo_line(struct line_memo *memo, unsigned n, const char *code,
			 long offset)
{
	if (!memo || n >= LW_MAX_PY_FRAMES)
		return code_line(code, offset);

	struct line_memo *e = &memo[n];
	const char *table = load_ptr(code, py.layout->code_line_table);

	if (e->code == code && e->table == table && e->offset == offset)
		return e->line;
	e->code = code;
	e->table = table;
	e->offset = offset;
	e->line = code_line(code, offset);
	return e->line;
}

uint64_t lw_py_locals_hash(const void *frame, const void *code)
{
	const struct py_layout *l = py.layout;
	const char *const *locals;
	uint64_t h = LW_HASH_GOLDEN;
	int n;

	if (!frame || !code || py.status != LW_PY_SUPPORTED ||
	    l->frame_localsplus < 0 || l->code_nlocalsplus < 0)
		return 0;
	n = load_int(code, l->code_nlocalsplus);
	if (n <= 0)
		return 0;
	if (n > 16)
		n = 16;
	locals = (const char *const *)((const char *)frame +
				       l->frame_localsplus);
	for (int i = 0; i < n; i++)
		h = lw_hash_mix(h ^ (uintptr_t)locals[i]);
	return h;
}

unsigned lw_py_capture(struct lw_py_frame *frames, unsigned max)
{
	if (!__atomic_load_n(&py_ready, __ATOMIC_ACQUIRE))
		lw_py_init();
	if (py.status != LW_PY_SUPPORTED || max == 0)
		return 0;

	const struct py_layout *l = py.layout;
	/* Read once: the loop's stores could otherwise make it reload. */
	const void *code_type = py.api->PyCode_Type;
	const char *tstate = py.api->PyGILState_GetThisThreadState();
	if (!tstate)
		return 0;
	/* Finalisation frees the other threads' states: only the finalising
	 * thread's own frames are still safe to read. */
	const char *finalizing = __atomic_load_n(
		(const char *const *)(py.api->_PyRuntime + l->runtime_finalizing),
		__ATOMIC_ACQUIRE);
	if (finalizing && finalizing != tstate)
		return 0;

	const char *frame = top_frame(tstate);
	struct line_memo *memo = thread_line_memo();
	unsigned n = 0, run = 0; /* run: frames written for the current activation */
	/* A bound on the walk, in case the chain were corrupt: each written
	 * frame may follow a shim or a skipped frame. */
	unsigned steps = max < 1u << 30 ? 2 * max + 16 : ~0u;

	for (; frame && steps; frame = load_ptr(frame, l->frame_previous), steps--) {
		const char *code;
		long offset;
		int entry = 1;

		if (l->frame_kind == PY_FRAME_OBJECT) {
			if (n == max)
				break;
			code = load_ptr(frame, l->frame_code);
			if (!has_type(code, code_type))
				continue;
			offset = load_int(frame, l->frame_instr);
		} else {
			int owner = *(const signed char *)(frame + l->frame_owner);
			if (owner == l->owner_cstack) {
				/* 3.12+: the shim below an activation's first frame. */
				end_activation(frames, n, &run);
				continue;
			}
			if (n == max)
				break;
			entry = l->frame_is_entry >= 0 && frame[l->frame_is_entry];
			code = load_ptr(frame, l->frame_code);
			if (!has_type(code, code_type)) {
				if (entry)
					end_activation(frames, n, &run);
				continue;
			}
			intptr_t instr = (intptr_t)load_ptr(frame, l->frame_instr);
			offset = (long)(instr - (intptr_t)(code + l->code_start)) / 2;
			/* Incomplete: set up but not yet at its RESUME, skipped
			 * like _PyFrame_IsIncomplete() does. */
			if (owner != l->owner_generator &&
			    offset < load_int(code, l->code_first_traceable)) {
				if (entry)
					end_activation(frames, n, &run);
				continue;
			}
		}
		frames[n].frame = frame;
		frames[n].code = code;
		frames[n].line = memo_line(memo, n, code, offset);
		frames[n].entry = (uint8_t)entry;
		n++;
		run = entry ? 0 : run + 1;
	}
	/* The chain ended inside an activation: the outermost one. */
	if (!frame)
		end_activation(frames, n, &run);
	return n;
}

/* ---- strings ---- */

/* Appends one code point as UTF-8 if it fits (keeping room for the NUL). */
static int put_utf8(char *out, size_t size, size_t *pos, uint32_t c)
{
	uint8_t buf[4];
	size_t len;

	if (c >= 0xdc80 && c <= 0xdcff) {
		/* surrogateescape: an undecodable byte of a file name */
		buf[0] = (uint8_t)(c - 0xdc00);
		len = 1;
	} else if (c < 0x80) {
		buf[0] = (uint8_t)c;
		len = 1;
	} else if (c < 0x800) {
		buf[0] = (uint8_t)(0xc0 | (c >> 6));
		buf[1] = (uint8_t)(0x80 | (c & 0x3f));
		len = 2;
	} else if (c < 0x10000) {
		if (c >= 0xd800 && c <= 0xdfff)
			c = 0xfffd; /* a lone surrogate: not encodable */
		buf[0] = (uint8_t)(0xe0 | (c >> 12));
		buf[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		buf[2] = (uint8_t)(0x80 | (c & 0x3f));
		len = 3;
	} else {
		if (c > 0x10ffff)
			c = 0xfffd;
		buf[0] = (uint8_t)(0xf0 | (c >> 18));
		buf[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
		buf[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		buf[3] = (uint8_t)(0x80 | (c & 0x3f));
		len = 4;
	}
	if (*pos + len >= size)
		return -1;
	memcpy(out + *pos, buf, len);
	*pos += len;
	return 0;
}

/* A str object's text as UTF-8, from its PEP 393 representation. */
static int copy_str(const char *str, char *out, size_t size)
{
	const struct py_layout *l = py.layout;

	if (size == 0)
		return -1;
	out[0] = '\0';
	if (!has_type(str, py.api->PyUnicode_Type))
		return -1;

	uint32_t state;
	memcpy(&state, str + l->unicode_state, sizeof(state));
	long length = load_long(str, l->unicode_length);
	unsigned kind = (state & l->kind_mask) >> __builtin_ctz(l->kind_mask);
	const char *data;

	if (state & l->compact_mask)
		data = str + ((state & l->ascii_mask) ? l->unicode_ascii_size
						     : l->unicode_compact_size);
	else if (l->ready_mask && !(state & l->ready_mask))
		return -1; /* a legacy string never made ready: no data yet */
	else
		data = load_ptr(str, l->unicode_data);
	if (!data || length < 0 || (kind != 1 && kind != 2 && kind != 4))
		return -1;

	size_t pos = 0;
	if (state & l->ascii_mask) {
		pos = (size_t)length < size - 1 ? (size_t)length : size - 1;
		memcpy(out, data, pos);
	} else {
		for (long i = 0; i < length; i++) {
			uint32_t c;
			if (kind == 1) {
				c = ((const uint8_t *)data)[i];
			} else if (kind == 2) {
				uint16_t c16;
				memcpy(&c16, data + 2 * i, sizeof(c16));
				c = c16;
			} else {
				memcpy(&c, data + 4 * i, sizeof(c));
			}
			if (put_utf8(out, size, &pos, c) < 0)
				break;
		}
	}
	out[pos] = '\0';
	return 0;
}

int lw_py_code_info(const void *code, char *file, size_t file_size,
		    char *qualname, size_t qualname_size, int *first_line)
{
	if (file_size)
		file[0] = '\0';
	if (qualname_size)
		qualname[0] = '\0';
	if (lw_py_init() != LW_PY_SUPPORTED || !has_type(code, py.api->PyCode_Type))
		return -1;

	const struct py_layout *l = py.layout;
	if (file_size)
		copy_str(load_ptr(code, l->code_filename), file, file_size);
	if (qualname_size)
		copy_str(load_ptr(code, l->code_name), qualname, qualname_size);
	if (first_line)
		*first_line = load_int(code, l->code_first_line);
	return 0;
}

/* ---- a frame's fast locals ---- */

/* The i-th item of a tuple, NULL past its end. */
static const char *tuple_item(const char *tuple, long i)
{
	const struct py_layout *l = py.layout;

	if (!has_type(tuple, py.api->PyTuple_Type) || i < 0 ||
	    i >= load_long(tuple, l->bytes_size))
		return NULL;
	return load_ptr(tuple, l->tuple_items + (int)(i * (long)sizeof(void *)));
}

/* CO_FAST_HIDDEN (3.12+): a comprehension's inlined variable. */
#define CO_FAST_HIDDEN 0x10
/* CO_FAST_FREE (3.11+): a free variable, its value a closure's cell. */
#define CO_FAST_FREE 0x80

/* The fast locals of code whose values start at values: fn(name, value)
 * for each that is bound (a cell's value is the cell). */
static int locals_of(const char *code, const char *values,
		     void (*fn)(const void *name, const void *value, void *ctx),
		     void *ctx)
{
	const struct py_layout *l = py.layout;
	const char *names, *kinds = NULL, *cells = NULL, *frees = NULL;
	long count, locals, ncells = 0;

	if (!has_type(code, py.api->PyCode_Type))
		return -1;
	locals = load_int(code, l->code_nlocalsplus);
	names = load_ptr(code, l->code_localsplusnames);
	if (!has_type(names, py.api->PyTuple_Type) || locals < 0)
		return -1;
	count = locals;
	if (l->code_localspluskinds >= 0) {
		kinds = load_ptr(code, l->code_localspluskinds);
		if (!has_type(kinds, py.api->PyBytes_Type) ||
		    load_long(kinds, l->bytes_size) < count)
			return -1;
	} else {
		/* 3.9/3.10: the locals, then the cells, then the frees. */
		cells = load_ptr(code, l->code_cellvars);
		frees = load_ptr(code, l->code_freevars);
		if (!has_type(cells, py.api->PyTuple_Type) ||
		    !has_type(frees, py.api->PyTuple_Type))
			return -1;
		ncells = load_long(cells, l->bytes_size);
		count += ncells + load_long(frees, l->bytes_size);
	}
	for (long i = 0; i < count; i++) {
		const char *value = load_ptr(values, (int)(i * (long)sizeof(void *)));
		const char *name;

		if (!value)
			continue;
		if (kinds && ((const uint8_t *)kinds + l->bytes_data)[i] &
				     CO_FAST_HIDDEN)
			continue;
		if (i < locals)
			name = tuple_item(names, i);
		else if (i < locals + ncells)
			name = tuple_item(cells, i - locals);
		else
			name = tuple_item(frees, i - locals - ncells);
		if (name)
			fn(name, value, ctx);
	}
	return 0;
}

int lw_py_frame_locals(const void *frame,
		       void (*fn)(const void *name, const void *value,
				  void *ctx),
		       void *ctx)
{
	const struct py_layout *l;

	if (lw_py_init() != LW_PY_SUPPORTED || !has_type(frame, py.api->PyFrame_Type))
		return -1;
	l = py.layout;
	if (l->frameobj_frame >= 0) {
		const char *iframe = load_ptr(frame, l->frameobj_frame);

		if (!iframe)
			return -1;
		return locals_of(load_ptr(iframe, l->frame_code),
				 iframe + l->frame_localsplus, fn, ctx);
	}
	return locals_of(load_ptr(frame, l->frame_code),
			 (const char *)frame + l->frame_localsplus, fn, ctx);
}

int lw_py_live_frame_locals(const void *frame,
			    void (*fn)(const void *name, const void *value,
				       void *ctx),
			    void *ctx)
{
	const struct py_layout *l;

	if (lw_py_init() != LW_PY_SUPPORTED || !frame)
		return -1;
	l = py.layout;
	if (l->frame_kind == PY_FRAME_OBJECT)
		return lw_py_frame_locals(frame, fn, ctx);
	return locals_of(load_ptr(frame, l->frame_code),
			 (const char *)frame + l->frame_localsplus, fn, ctx);
}

int lw_py_thread_frames(const void *tstate,
			int (*fn)(const void *frame, const void *code,
				  int line, void *ctx),
			void *ctx)
{
	const struct py_layout *l;
	const char *frame;
	unsigned steps = 1u << 16; /* a bound, were the chain corrupt */

	if (lw_py_init() != LW_PY_SUPPORTED || !tstate)
		return -1;
	l = py.layout;
	for (frame = top_frame(tstate); frame && steps;
	     frame = load_ptr(frame, l->frame_previous), steps--) {
		const char *code = load_ptr(frame, l->frame_code);
		long offset;

		if (!has_type(code, py.api->PyCode_Type))
			continue; /* 3.12+: a C-stack shim */
		if (l->frame_kind == PY_FRAME_OBJECT) {
			offset = load_int(frame, l->frame_instr);
		} else {
			int owner = *(const signed char *)(frame + l->frame_owner);
			intptr_t instr = (intptr_t)load_ptr(frame, l->frame_instr);

			if (owner == l->owner_cstack)
				continue;
			offset = (long)(instr - (intptr_t)(code + l->code_start)) / 2;
			/* Incomplete frames have no locals to read yet. */
			if (owner != l->owner_generator &&
			    offset < load_int(code, l->code_first_traceable))
				continue;
		}
		if (fn(frame, code, code_line(code, offset), ctx))
			break;
	}
	return 0;
}

const void *lw_py_live_frame_code(const void *frame)
{
	const void *code;

	if (lw_py_init() != LW_PY_SUPPORTED || !frame)
		return NULL;
	code = load_ptr(frame, py.layout->frame_code);
	return has_type(code, py.api->PyCode_Type) ? code : NULL;
}

const void *lw_py_generator_frame(const void *gen)
{
	const struct py_layout *l = py.layout;

	if (!__atomic_load_n(&py_ready, __ATOMIC_ACQUIRE) ||
	    py.status != LW_PY_SUPPORTED || l->gen_frame < 0)
		return NULL;
	if (l->gen_frame_state < 0)
		return load_ptr(gen, l->gen_frame); /* 3.9/3.10: gi_frame */
	/* 3.11+: the frame lives in the generator; from FRAME_COMPLETED (1)
	 * on its locals are gone. */
	if (*(const signed char *)((const char *)gen + l->gen_frame_state) > 0)
		return NULL;
	return (const char *)gen + l->gen_frame;
}

const void *lw_py_code_freevar(const void *code, long i)
{
	const struct py_layout *l = py.layout;

	if (!__atomic_load_n(&py_ready, __ATOMIC_ACQUIRE) ||
	    py.status != LW_PY_SUPPORTED || !has_type(code, py.api->PyCode_Type) || i < 0)
		return NULL;
	if (l->code_localspluskinds < 0)
		return tuple_item(load_ptr(code, l->code_freevars), i);
	const char *names = load_ptr(code, l->code_localsplusnames);
	const char *kinds = load_ptr(code, l->code_localspluskinds);
	long count = load_int(code, l->code_nlocalsplus);

	if (!has_type(kinds, py.api->PyBytes_Type) ||
	    load_long(kinds, l->bytes_size) < count)
		return NULL;
	/* The free variables are the last of localsplus, in closure order. */
	for (long j = 0, k = 0; j < count; j++) {
		if (!(((const uint8_t *)kinds + l->bytes_data)[j] & CO_FAST_FREE))
			continue;
		if (k++ == i)
			return tuple_item(names, j);
	}
	return NULL;
}

/* ---- the evaluation function's address ranges ---- */

int lw_py_is_eval_address(uintptr_t addr)
{
	if (!__atomic_load_n(&py_ready, __ATOMIC_ACQUIRE))
		return 0;
	/* A return address follows its call, so it may equal the end. */
	for (unsigned i = 0; i < py.eval.count; i++)
		if (addr > py.eval.range[i].start && addr <= py.eval.range[i].end)
			return 1;
	return 0;
}

/* ---- detection ---- */

/* The head of 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h),
 * which _PyRuntime starts with: the interpreter's own statement of the
 * offsets a debugger needs. */
struct debug_offsets_313 {
	char cookie[8];
	uint64_t version;
	uint64_t free_threaded;
	uint64_t runtime_state[3]; /* size, finalizing, interpreters_head */
	uint64_t interpreter_state[13];
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id,
			 native_thread_id, datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno,
			 argcount, localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct {
		uint64_t size, ob_type;
	} pyobject;
};

static int debug_offsets_agree(const struct py_layout *l, unsigned long hex)
{
	const struct debug_offsets_313 *d = (const void *)py.api->_PyRuntime;

	return memcmp(d->cookie, "xdebugpy", 8) == 0 &&
	       (d->version >> 16) == (hex >> 16) &&
	       d->free_threaded == 0 &&
	       d->runtime_state[1] == (uint64_t)l->runtime_finalizing &&
	       d->thread_state.current_frame == (uint64_t)l->tstate_frame &&
	       d->interpreter_frame.previous == (uint64_t)l->frame_previous &&
	       d->interpreter_frame.executable == (uint64_t)l->frame_code &&
	       d->interpreter_frame.instr_ptr == (uint64_t)l->frame_instr &&
	       d->interpreter_frame.owner == (uint64_t)l->frame_owner &&
	       d->interpreter_frame.localsplus == (uint64_t)l->frame_localsplus &&
	       d->code_object.localsplusnames == (uint64_t)l->code_localsplusnames &&
	       d->code_object.localspluskinds == (uint64_t)l->code_localspluskinds &&
	       d->code_object.filename == (uint64_t)l->code_filename &&
	       d->code_object.qualname == (uint64_t)l->code_name &&
	       d->code_object.linetable == (uint64_t)l->code_line_table &&
	       d->code_object.firstlineno == (uint64_t)l->code_first_line &&
	       d->code_object.co_code_adaptive == (uint64_t)l->code_start &&
	       d->pyobject.ob_type == (uint64_t)l->object_type;
}

static char *put_number(char *p, unsigned long value)
{
	char digits[24];
	int n = 0;

	do
		digits[n++] = (char)('0' + value % 10);
	while ((value /= 10) && n < (int)sizeof(digits));
	while (n)
		*p++ = digits[--n];
	return p;
}

/* PY_VERSION_HEX: 0xMMmmppLS, L = 0xA alpha, 0xB beta, 0xC candidate, 0xF final. */
static void format_version(unsigned long hex)
{
	char *p = py.version;

	p = put_number(p, hex >> 24);
	*p++ = '.';
	p = put_number(p, (hex >> 16) & 0xff);
	*p++ = '.';
	p = put_number(p, (hex >> 8) & 0xff);
	unsigned level = (hex >> 4) & 0xf;
	if (level >= 0xa && level <= 0xc) {
		static const char *const names[] = { "a", "b", "rc" };
		const char *name = names[level - 0xa];
		while (*name)
			*p++ = *name++;
		p = put_number(p, hex & 0xf);
	}
	*p = '\0';
}

/* Py_GetVersion() (before 3.11): "3.9.18 (main, ...) [GCC ...]". */
static unsigned long parse_version(const char *text)
{
	unsigned long part[3] = { 0, 0, 0 };
	size_t len = 0;

	while (text[len] && text[len] != ' ' && len < sizeof(py.version) - 1)
		len++;
	memcpy(py.version, text, len);
	py.version[len] = '\0';
	for (unsigned i = 0; i < 3 && *text >= '0' && *text <= '9'; i++) {
		while (*text >= '0' && *text <= '9')
			part[i] = part[i] * 10 + (unsigned long)(*text++ - '0');
		if (*text == '.')
			text++;
	}
	return (part[0] & 0xff) << 24 | (part[1] & 0xff) << 16 | (part[2] & 0xff) << 8;
}

static enum lw_py_status detect(void)
{
	const struct lw_pyapi *api = lw_pyapi();
	unsigned long hex;

	py.api = api;
	if (api->Py_Version) { /* 3.11+ */
		hex = *api->Py_Version;
		format_version(hex);
	} else if (api->Py_GetVersion) {
		/* Formats into a static buffer with snprintf: runs no Python
		 * code, takes no lock. */
		hex = parse_version(api->Py_GetVersion());
	} else {
		return LW_PY_NOT_PYTHON;
	}

	/* The table holds LP64 little-endian offsets and bit-field masks. */
	if (sizeof(void *) != 8 || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		return LW_PY_UNSUPPORTED;
	const struct py_layout *layout = NULL;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if ((hex >> 24) == 3 && ((hex >> 16) & 0xff) == (unsigned long)layouts[i].minor)
			layout = &layouts[i];
	if (!layout)
		return LW_PY_UNSUPPORTED;

	/* Free-threaded (3.13t) and debug builds lay objects out differently;
	 * these symbols exist only there. */
	if (lw_pyapi_found(api, _Py_DecRefShared) ||
	    lw_pyapi_found(api, _Py_NegativeRefcount) ||
	    lw_pyapi_found(api, _Py_PrintReferences))
		return LW_PY_UNSUPPORTED;

	if (!api->_PyEval_EvalFrameDefault ||
	    !api->PyGILState_GetThisThreadState || !api->_PyRuntime ||
	    !api->PyCode_Type || !api->PyFrame_Type || !api->PyTuple_Type ||
	    !api->PyBytes_Type || !api->PyUnicode_Type)
		return LW_PY_UNSUPPORTED;
	if (layout->minor == 13 && !debug_offsets_agree(layout, hex))
		return LW_PY_UNSUPPORTED;

	lw_py_find_eval_ranges(api->_PyEval_EvalFrameDefault, &py.eval);
	py.layout = layout;
	return LW_PY_SUPPORTED;
}

static void init_once(void)
{
	py.status = detect();
	if (py.status != LW_PY_SUPPORTED)
		py.eval.count = 0;
	__atomic_store_n(&py_ready, 1, __ATOMIC_RELEASE);
}

enum lw_py_status lw_py_init(void)
{
	pthread_once(&py_once, init_once);
	return py.status;
}

const char *lw_py_version(void)
{
	lw_py_init();
	return py.version;
}

uintptr_t lw_py_eval_address(void)
{
	lw_py_init();
	return py.eval.count ? py.eval.range[0].start : 0;
}

int lw_py_str(const void *str, char *out, size_t size)
{
	if (lw_py_init() != LW_PY_SUPPORTED)
		return -1;
	return copy_str(str, out, size);
}
