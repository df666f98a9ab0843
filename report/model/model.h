/* SPDX-License-Identifier: MIT */
/*
 * The analysis state built from one trace: live allocations, allocation
 * sites, per-kind totals, the device-memory peak and what the trace says
 * about its process.
 *
 * Its memory grows with the number of live allocations and of distinct
 * stacks, strings and modules, never with the number of events. Byte strings
 * (struct lw_bytes) point into the trace buffer, which must outlive the
 * model.
 */
#ifndef LW_MODEL_H
#define LW_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lw-addr-table.h"
#include "lw-format.h"
#include "trace-reader.h"

#define LW_NO_SITE UINT32_MAX

/*
 * Peak attribution: device memory live at a step's peak that was born in
 * an earlier step and freed at most this many steps after it was born
 * (the previous step's loss or outputs, still referenced while the next
 * forward runs) "lingers" at that peak. Memory kept longer is judged by
 * growth, not here.
 */
#define LW_LINGER_STEPS 4

struct lw_totals {
	uint64_t live_bytes;
	uint64_t live_count;
	uint64_t allocations;
	uint64_t bytes_allocated;
};

/* Allocations of one kind made from one stack. */
struct lw_site {
	uint64_t stack_id;	/* 0: no stack captured */
	struct lw_totals totals;
	uint32_t next_site;	/* same stack, another kind; LW_NO_SITE */
	uint8_t kind;		/* enum lw_mem_kind */
	bool dirty;		/* live totals changed since the last point */
	bool torch_block;	/* blocks of PyTorch's caching allocator */
	/* Step series (see lw_step_point): the index of its series, or
	 * LW_NO_SERIES while its live totals were the same at every step
	 * point so far (step_bytes, step_count), or LW_SERIES_UNTRACKED. */
	uint32_t series;
	uint64_t step_bytes;
	uint64_t step_count;
	/* Lingering at step peaks (see struct lw_lingering). */
	uint64_t lingering[LW_LINGER_STEPS]; /* by step % LW_LINGER_STEPS */
	uint64_t lingering_steps;	/* step peaks it added to */
	uint64_t lingering_max;		/* the most it added to one */
	uint64_t lingering_total;	/* summed over those peaks */
	/*
	 * Lifetimes of its allocations freed before the report point, in
	 * steps (STEP records between birth and free), and how many of those
	 * frees ran inside a pass of Python's cycle collector.
	 */
	uint64_t frees;
	uint64_t lifetime_total;
	uint64_t lifetime_max;
	uint64_t long_frees;	/* lived more than LW_LINGER_STEPS steps */
	uint64_t gc_frees;
	uint64_t gc_freed_bytes;
	/* Of those, the frees (and long ones) made in step tail_step: when
	 * that is the unfinished step after the last STEP record, they are
	 * the program's teardown, not its loop. */
	uint64_t tail_step;
	uint64_t tail_frees;
	uint64_t tail_long_frees;
	uint64_t tail_gc_frees;
	uint64_t first_birth_step;	/* of its first allocation */
	uint64_t last_birth_step;	/* of its latest one */
	/* Births while an earlier allocation of the site was still live:
	 * a buffer remade from itself (torch.cat([acc, x])) is born onto
	 * its predecessor; a step's input is not. */
	uint64_t births_onto_live;
	/* Its slot in the shares of open phase instance phase_instance. */
	uint32_t phase_instance;
	uint32_t phase_slot;
};

#define LW_NO_SERIES UINT32_MAX
#define LW_SERIES_UNTRACKED (UINT32_MAX - 1)
/*
 * Step points kept: when the series is full, pairs of points are merged
 * (the later one's live numbers, the larger peak) and the stride doubles,
 * so a run of any length keeps between half and all of this many points.
 */
#define LW_STEP_POINTS_MAX 8192
/*
 * Sites whose live totals change between step points get a series of their
 * own, 12 bytes a point (at most 96 KiB each); past this many such sites,
 * later ones are not tracked (their verdict is "not-enough-steps").
 */
#define LW_SITE_SERIES_MAX 1024

/* A site's live totals at each step point. */
struct lw_site_series {
	uint64_t *bytes;
	uint32_t *counts;	/* saturated at UINT32_MAX */
	size_t capacity;
};

/* Device memory (device + managed) at the end of a step. */
struct lw_step_point {
	uint64_t step;		/* STEP records so far */
	uint64_t live_bytes;
	uint64_t live_count;
	uint64_t peak_bytes;	/* the most live since the previous point */
	/* Of a peak since the previous point (the most, if several): bytes
	 * born in an earlier step and freed later (see LW_LINGER_STEPS). */
	uint64_t lingering_bytes;
	/* The innermost phase open at the step's end: its instance (0: none)
	 * and its index in the model's phases (UINT32_MAX: unnamed or none). */
	uint32_t phase_instance;
	uint32_t phase;
	/* PyTorch's caching allocator (see struct lw_torch_memory): its
	 * blocks and segments live at the point, the most reserved since
	 * the previous one. */
	uint64_t allocated_bytes;
	uint64_t reserved_bytes;
	uint64_t peak_reserved_bytes;
	/* The memory account of the step (since the previous point): the
	 * most allocated, and what the pool held free at that moment
	 * (reserved minus allocated: the pool's fragmentation, see
	 * docs/reference.md); device memory outside the pool (live device
	 * memory that is no block of it: other libraries, raw cudaMalloc)
	 * at the point and at its most; the most the process held on the
	 * device (reserved plus outside); the largest block requested. */
	uint64_t peak_allocated_bytes;
	uint64_t free_at_peak_bytes;
	uint64_t outside_bytes;
	uint64_t peak_outside_bytes;
	uint64_t peak_in_use_bytes;
	uint64_t max_request_bytes;
};

/* A block of PyTorch's pool freed and not yet reused. */
struct lw_torch_freed {
	uint64_t addr, size;
};

/*
 * PyTorch's native caching allocator, at two levels, as
 * torch.cuda.memory_allocated() and memory_reserved() count them: the
 * blocks it handed out (tensors, ALLOC records with CONTEXT api
 * LW_API_TORCH_BLOCK) and the segments it holds (SEGMENT records).
 */
struct lw_torch_memory {
	uint64_t blocks;		/* block allocations seen */
	uint64_t segments;		/* segments seen */
	uint64_t allocated_bytes;	/* live now */
	uint64_t reserved_bytes;
	uint64_t peak_allocated_bytes;
	uint64_t peak_reserved_bytes;
	uint64_t step_peak_reserved;	/* the most since the last point */
	/* The account since the last point (struct lw_step_point). */
	uint64_t step_peak_allocated;
	uint64_t step_free_at_peak;
	uint64_t step_peak_outside;
	uint64_t step_peak_in_use;
	uint64_t step_max_request;
	/* The run's: the most outside the pool, the most in use (reserved
	 * plus outside), and the pool's free bytes at the allocated peak. */
	uint64_t peak_outside_bytes;
	uint64_t peak_in_use_bytes;
	uint64_t free_at_peak_bytes;
	/* Misses of the pool (a new segment, its first block at its start)
	 * for a block the size of one freed earlier and not reused since:
	 * a block held back by work queued on another stream (record_stream;
	 * the profiler hook reports the free when the tensor dies, the pool
	 * reuses it once that work is done), and the bytes those segments
	 * reserved. Seen only in the blocks a trace writes one by one. */
	uint64_t stranded_misses;
	uint64_t stranded_bytes;
	/* Blocks freed and not reused since (torch.c), for the above. */
	struct lw_torch_freed *freed;
	size_t freed_count, freed_capacity;
	/* At the PROGRAM_END mark (what the program's own code last saw;
	 * finalization frees much afterwards). */
	uint64_t program_end_allocated;
	uint64_t program_end_reserved;
	/* Live segments by key (torch.c): few in a real run, one per cache
	 * miss, but found without a scan whatever a trace holds. */
	struct lw_addr_table live_segments;
	uint64_t api;			/* of the CONTEXT in force */
};

struct lw_stack {
	size_t first_frame;	/* index into the stack table's frames */
	uint32_t frame_count;
	uint32_t first_site;	/* LW_NO_SITE until an ALLOC uses it */
	/* Its entry in the model's short-lived table, or LW_NO_SITE. */
	uint32_t short_lived;
	/* Its Python frames (PYSTACK), in the stack table's pyframes and evals. */
	size_t first_pyframe;
	size_t first_eval;
	uint32_t pyframe_count;
	uint32_t eval_count;
};

struct lw_pycode {
	uint64_t id;
	uint64_t file_string;	/* STRING ids */
	uint64_t name_string;
	uint64_t first_line;
};

/* Live memory at one moment. */
struct lw_live_count {
	uint64_t live_bytes;
	uint64_t live_count;
};

/* What a run of frames folded into one stands for (pystack.h). */
enum lw_fold_kind {
	LW_FOLD_NONE,		/* not folded: a frame of its own */
	LW_FOLD_INTERPRETER,	/* the interpreter's, libffi's, pybind11's */
	LW_FOLD_START,		/* the start of the process or thread */
	LW_FOLD_FRAMEWORK,	/* the framework's libraries: one operator */
};

/*
 * What a run of the framework's frames did, in the report symbolizer's
 * strings (NULL where unknown): the operator, NAME of the outermost
 * at::_ops::NAME::call or ::redispatch frame ("empty_strided"); the
 * autograd node whose apply() ran it ("MmBackward0"); the file name of the
 * module of its outermost frame ("libtorch_cpu.so").
 */
struct lw_fold_name {
	const char *op;
	const char *node;
	const char *module;
	uint32_t op_len;
	uint32_t node_len;
};

/* One frame of a stack as reported: native or Python. */
struct lw_frame {
	bool python;
	uint64_t address;			/* native: return address */
	const struct lw_trace_pyframe *py;	/* Python */
	/* A run of this many frames folded into one (lw_fold_stack), of
	 * kind fold (enum lw_fold_kind); python and address then mean
	 * nothing. */
	uint32_t folded;
	uint8_t fold;
	struct lw_fold_name name;	/* LW_FOLD_FRAMEWORK */
};

/* A live allocation, keyed by addr in the model's live table. */
struct lw_live {
	uint64_t addr;
	uint64_t size;
	uint64_t birth_step;	/* STEP records before it */
	uint32_t site;
	uint32_t phase;		/* the open phase it was born in + 1; 0: none */
	uint16_t context;	/* index into the model's contexts */
	uint8_t used;		/* the live table's */
};

/*
 * Device memory (device and managed kinds) by the CONTEXT its allocation
 * was made in: the API, the device (-1: not known; PyTorch's allocator
 * says it, a bare cudaMalloc does not) and the stream (0: the default
 * stream, or none). Past LW_CONTEXTS_MAX distinct contexts, later ones
 * count in the last, marked other.
 */
#define LW_CONTEXTS_MAX 64

struct lw_context_totals {
	uint64_t api;		/* enum lw_api; 0: not known (the first
				 * context: before any CONTEXT record) */
	int64_t device;
	uint64_t stream;
	bool other;		/* every context past the table's room */
	struct lw_totals totals;	/* live: at the end of the trace */
	struct lw_live_count program_end;	/* live at PROGRAM_END */
};

struct lw_context_table {
	struct lw_context_totals items[LW_CONTEXTS_MAX];
	uint16_t count;
	uint16_t current;	/* the CONTEXT in force: an index */
};

/* A site's share of something: bytes and allocations. */
struct lw_site_share {
	uint32_t site;
	uint64_t bytes;
	uint64_t count;
};

/* A growable set of shares, one per site, in the order sites joined. */
struct lw_shares {
	struct lw_site_share *items;
	size_t count, capacity;
};

/*
 * The first out-of-memory report of PyTorch's allocator: the request, its
 * counters, and what was live then, per site (live), with the sites that
 * held more then than at the first step point (grew; everything live when
 * no step had ended).
 */
struct lw_oom {
	bool seen;
	uint64_t count;			/* OOM records in the trace */
	uint64_t size, allocated, reserved;
	int64_t device;
	uint64_t steps;			/* STEP records before it */
	uint64_t live_device_bytes, live_device_count;
	/* leakwatch's own allocated and reserved counts then: */
	uint64_t tracked_allocated, tracked_reserved;
	struct lw_shares live, grew;
};

/*
 * A named phase (PHASE_BEGIN naming a STRING): what was born inside it
 * (inside its innermost open phase: memory born in a nested phase counts
 * for the nested one) and was still live when it ended, summed over its
 * instances, by site.
 */
struct lw_phase {
	uint64_t string_id;
	uint64_t instances;	/* ended */
	uint64_t surviving_bytes;
	uint64_t surviving_count;
	struct lw_shares sites;
};

/* An open phase: what was born in it and is still live, by site. */
struct lw_open_phase {
	uint32_t phase;		/* index into the model's phases; UINT32_MAX: unnamed */
	uint32_t instance;	/* tells this instance from earlier ones */
	struct lw_shares live;
};

#define LW_PHASE_DEPTH_MAX 64

/* Peak attribution of one step (see LW_LINGER_STEPS). */
struct lw_lingering {
	uint64_t step;		/* the step: STEP records before it */
	uint64_t peak_bytes;	/* device memory at its peak */
	uint64_t bytes;		/* of which born in earlier steps, freed later */
	struct lw_shares sites;	/* bytes (count: allocations) by site */
};

/* A FREE of memory born in an earlier step, during the current step. */
struct lw_late_free {
	uint64_t event;		/* when (the model's counts.events) */
	uint64_t birth_step;
	uint64_t size;
	uint32_t site;
};

struct lw_string {
	uint64_t id;
	struct lw_bytes text;
	uint64_t phase_begins;	/* PHASE_BEGIN records naming it */
};

/*
 * A holder found by the shim's search (HOLDER): the live object, and the
 * reference path to it, that keeps an allocation of site alive.
 */
struct lw_holder {
	uint32_t site;
	uint64_t path, root;	/* string ids */
	uint64_t objects;	/* objects found through it */
	uint64_t graph;		/* autograd graph nodes behind it */
	uint64_t flags;		/* enum lw_holder_flags */
	uint32_t search;	/* which search found it, from 1 */
};

/* A fact of the interpreter about where Python code comes from (PYPATH);
 * a trace's first LW_PYPATHS_MAX distinct ones are kept. */
#define LW_PYPATHS_MAX 4096
struct lw_pypath {
	uint64_t kind;		/* enum lw_pypath_kind */
	uint64_t path, name;	/* string ids; name 0: none */
};

/* Allocation calls of one API that failed with one error. */
struct lw_failed_allocation {
	uint64_t api;		/* enum lw_api */
	uint64_t error;		/* the API's own code */
	uint64_t count;
};

#define LW_FAILED_KINDS_MAX 8

struct lw_info {
	struct lw_bytes key;
	struct lw_bytes value;
};

/* Sites, indexed from 0 in the order they were first used. */
struct lw_site_table {
	struct lw_site *items;
	uint32_t count;
	size_t capacity;
	/*
	 * Sites a suppression matched (lw_trace_file_set_rules()), indexed by
	 * site; NULL when no suppression was given. Growth verdicts leave
	 * them out of the run's, and reports out of their lists.
	 */
	bool *suppressed;
};

/* Stacks and their frames, native and Python. */
struct lw_stack_table {
	/* Indexed by stack id; [0] is the "no stack" stack. */
	struct lw_stack *items;
	uint64_t count;
	size_t capacity;
	uint64_t *frames;
	size_t frame_count, frame_capacity;
	struct lw_pycode *pycodes;
	size_t pycode_count, pycode_capacity;
	struct lw_addr_table pycode_ids;	/* of struct lw_id_slot */
	struct lw_trace_pyframe *pyframes;
	size_t pyframe_count, pyframe_capacity;
	uint32_t *evals;
	size_t eval_count, eval_capacity;
};

/* The step series: device memory at a point every stride steps, and the
 * sites' series beside it. */
struct lw_step_points {
	struct lw_step_point *items;
	size_t count, capacity;
	uint64_t stride;	/* 1, then doubling */
	uint64_t peak;		/* the most live since the last point */
	/* Per-site series, as long as the step series. */
	struct lw_site_series *series;
	uint32_t series_count;
	size_t series_capacity;
	/* Sites whose live totals changed since the last point. */
	uint32_t *dirty;
	size_t dirty_count, dirty_capacity;
	/*
	 * Steps inferred from the allocation pattern (infer.c): with
	 * anchor set (a stack id, 0: none), every ALLOC from that stack
	 * after its first one ends a step, as a STEP record would.
	 */
	uint64_t anchor;
	bool anchor_seen;
	bool inferred;
	/* The trace's first STEP records that end no step, left to skip
	 * (INFO "steps_void": the shim took an inner loop, or a weaker
	 * source, for the steps before it knew better). */
	uint64_t void_steps;
	/* The next STEP record ends the loop's last iteration at the
	 * program's end (INFO "step_at_program_end"): counted, no point. */
	bool step_at_program_end;
};

/*
 * Bounded traces: per stack, the allocations made and freed within each
 * interval, as the SHORT_LIVED records last said (common/lw-format.h);
 * every SHORT_LIVED record adds them all.
 */
struct lw_short_lived_entry {
	uint64_t stack_id;
	uint32_t site;
	uint16_t context;	/* index into the model's contexts */
	bool torch_block;	/* made by PyTorch's caching allocator */
	uint64_t count, bytes;
	uint64_t gc_count, gc_bytes;
};

struct lw_short_lived_table {
	struct lw_short_lived_entry *items;
	size_t count, capacity;
	uint64_t records;	/* SHORT_LIVED records read */
	uint64_t allocations;	/* allocations they summed */
};

/* Named phases, in the order they first began, and the open ones (the
 * innermost LW_PHASE_DEPTH_MAX of them). */
struct lw_phase_table {
	uint64_t depth;
	struct lw_phase *items;
	size_t count, capacity;
	struct lw_open_phase open[LW_PHASE_DEPTH_MAX];
	uint32_t instances;
	uint64_t unbalanced_ends;
	uint64_t unnamed_begins;	/* naming an undefined string */
	uint64_t begins;
};

/* The device-memory peak, and what lingers at each step's peak. */
struct lw_peak {
	uint64_t bytes;		/* the most device memory live */
	uint64_t step;		/* STEP records before it */
	/* The current step's peak and when it was reached, its late frees,
	 * the steps still open to lingering (by step % LW_LINGER_STEPS):
	 * the sites touched, their peaks and lingering bytes. */
	uint64_t cur_bytes;
	uint64_t cur_event;
	/* cur_bytes when the interval of a bounded trace began (its
	 * SHORT_LIVED record says whether its peak passed it). */
	uint64_t interval_bytes;
	struct lw_late_free *late_frees;
	size_t late_free_count, late_free_capacity;
	uint32_t *touched[LW_LINGER_STEPS];
	size_t touched_count[LW_LINGER_STEPS];
	size_t touched_capacity[LW_LINGER_STEPS];
	uint64_t open_peak[LW_LINGER_STEPS];
	uint64_t open_bytes[LW_LINGER_STEPS];
	uint64_t lingering_steps;	/* steps whose peak had lingering bytes */
	bool have_worst;
	/* At the highest step peak judged (the first if several): */
	struct lw_lingering worst;
	/* The step with the most lingering bytes at its peak: */
	struct lw_lingering most;
};

/* What the trace says of itself and its process. */
/* INFO keys a report asks for, found without a scan (model.c). */
#define LW_KNOWN_INFO_KEYS 16

/* The position of the last record with an id, in an array: strings and
 * code objects, whose ids a trace need not keep dense (model.c). */
struct lw_id_slot {
	uint64_t id;
	uint32_t index;
	uint8_t used;
};

struct lw_trace_meta {
	struct lw_trace_header header;
	struct lw_string *strings;
	size_t string_count, string_capacity;
	struct lw_addr_table string_ids;	/* of struct lw_id_slot */
	struct lw_info *infos;
	size_t info_count, info_capacity;
	/* For each key the report asks for (model.c), 1 + the index of its
	 * last INFO record; 0: none. */
	size_t known_infos[LW_KNOWN_INFO_KEYS];
	struct lw_bytes *warnings;
	size_t warning_count, warning_capacity;
	struct lw_trace_module *modules;
	size_t module_count, module_capacity;
	/*
	 * Allocation calls that failed (ALLOC_FAILED): how many, and the
	 * first few distinct (API, error) pairs with their counts.
	 */
	uint64_t failed_allocations;
	struct lw_failed_allocation failed[LW_FAILED_KINDS_MAX];
	size_t failed_kind_count;
	bool have_end;
	uint64_t end_events;
	uint64_t end_dropped;
	uint64_t dropped;	/* sum of DROPPED records */
	/* PYPATH records, in trace order, each distinct one once. */
	struct lw_pypath *pypaths;
	size_t pypath_count, pypath_capacity;
};

/* Holders, in trace order; whether a search ran out of time. A search is
 * the run of HOLDER records with no event between. */
struct lw_holder_list {
	struct lw_holder *items;
	size_t count, capacity;
	bool cut;
	uint32_t searches;
	uint64_t events;	/* events at the last HOLDER record */
};

/* Counts over the whole trace (to the report point for the gc ones). */
struct lw_event_counts {
	uint64_t events;	/* ALLOC, FREE, STEP, PHASE_BEGIN, PHASE_END */
	uint64_t allocations;
	uint64_t frees;
	uint64_t unknown_frees;
	uint64_t reused_live_addresses;
	uint64_t steps;		/* STEP records (or steps inferred) */
	uint64_t live_device_bytes;	/* device + managed, now */
	/* Python's cycle collector (GC_START/GC_STOP marks): passes, and
	 * frees inside them. */
	uint64_t gc_passes;
	uint64_t gc_frees;
};

/*
 * The model, one member per concern. Renderers read it through the
 * accessors below (lw_model_counts(), lw_model_site(), ...), never the
 * members: what the model keeps, and how, is its own business.
 */
struct lw_model {
	struct lw_trace_meta meta;
	struct lw_event_counts counts;
	/* Live allocations (struct lw_live), keyed by addr. */
	struct lw_addr_table live;
	struct lw_site_table sites;
	struct lw_stack_table stacks;
	/* Indexed by enum lw_mem_kind; [0] unused. */
	struct lw_totals kinds[LW_MEM_KIND_MAX + 1];
	struct lw_step_points points;
	struct lw_phase_table phases;
	struct lw_peak peak;
	struct lw_holder_list holders;
	struct lw_context_table contexts;
	struct lw_short_lived_table short_lived;
	bool in_gc;	/* inside a pass of the cycle collector */

	/*
	 * The first PROGRAM_END mark (a Python program's own code finished;
	 * finalization frees much afterwards): what was live then, per kind
	 * and per site (sites made later were empty then).
	 */
	bool have_program_end;
	uint64_t program_end_steps;
	struct lw_live_count program_end_kinds[LW_MEM_KIND_MAX + 1];
	struct lw_live_count *program_end_sites;
	uint32_t program_end_site_count;

	struct lw_torch_memory torch;
	struct lw_oom oom;
};

/* The callbacks that feed a struct lw_model (the ctx) from lw_trace_read. */
extern const struct lw_trace_ops lw_model_ops;

/* Returns 0 or -ENOMEM. lw_model_fini() releases it either way. */
int lw_model_init(struct lw_model *model);
/*
 * Ends the analysis once the trace is read: settles the peak attribution of
 * the last steps and sorts each phase's sites, largest first. Returns 0 or
 * -ENOMEM.
 */
int lw_model_finish(struct lw_model *model);
void lw_model_fini(struct lw_model *model);

/*
 * A report describes live memory at one moment, the report point: the
 * PROGRAM_END mark when the trace has one, else the end of the trace.
 *
 * Totals of a kind (enum lw_mem_kind) or a site: live_* at the report
 * point, allocations and bytes_allocated over the whole trace.
 */
struct lw_totals lw_model_kind_totals(const struct lw_model *model,
				      unsigned kind);
struct lw_totals lw_model_site_totals(const struct lw_model *model,
				      uint32_t site);

/* Live memory of a site at the end of the trace. */
struct lw_live_count lw_model_site_live_at_end(const struct lw_model *model,
					       uint32_t site);
/*
 * Live memory of a site at the PROGRAM_END mark. Returns false (and zeros)
 * when the trace has no such mark.
 */
bool lw_model_site_live_at_program_end(const struct lw_model *model,
				       uint32_t site,
				       struct lw_live_count *out);

/* Live device memory (device + managed kinds) at the report point. */
uint64_t lw_model_device_live_bytes(const struct lw_model *model);
uint64_t lw_model_device_live_count(const struct lw_model *model);
/* The same at the end of the trace. */
uint64_t lw_model_device_live_bytes_at_end(const struct lw_model *model);
uint64_t lw_model_device_live_count_at_end(const struct lw_model *model);

/* Events dropped by the writer, as far as the trace says. */
uint64_t lw_model_dropped(const struct lw_model *model);

/* The last value of an INFO key, or NULL. */
const struct lw_bytes *lw_model_info(const struct lw_model *model,
				     const char *key);
const struct lw_bytes *lw_model_info_bytes(const struct lw_model *model,
					   struct lw_bytes key);

/* The STRING with this id, or NULL. */
const struct lw_string *lw_model_string(const struct lw_model *model,
					uint64_t id);

/* The frames of a stack (innermost first); NULL with *count 0 for id 0. */
const uint64_t *lw_model_frames(const struct lw_model *model,
				uint64_t stack_id, uint32_t *count);

/*
 * The frames of a stack as reported, innermost first: the native frames
 * with the Python frames of its PYSTACK merged in (each activation of the
 * evaluation loop in place of the native frame that runs it; all of them
 * innermost when the two do not match up). On success *out is malloc'ed
 * (NULL when there are no frames). Returns 0 or -ENOMEM.
 */
int lw_model_stack(const struct lw_model *model, uint64_t stack_id,
		   struct lw_frame **out, size_t *count);

/*
 * Whether a site's memory came from a thread that ran no Python code (the
 * autograd engine, CUDA callbacks, native workers): the trace is of a
 * Python program (it has INFO "python") and the site's stack has no Python
 * frames. False for a site without a captured stack (or an empty one):
 * nothing is known of it.
 */
bool lw_model_site_native_thread(const struct lw_model *model, uint32_t site);

/* The function and file of a Python frame; data NULL where unknown. */
void lw_model_pyframe_names(const struct lw_model *model,
			    const struct lw_trace_pyframe *frame,
			    struct lw_bytes *function, struct lw_bytes *file);

/*
 * Sites with memory live at the report point or at the end of the trace
 * (memory that finalization allocated and never freed), largest first: by
 * live bytes at the report point, then at the end, then live counts, stack
 * id and kind; suppressed sites are left out. On success *out is a
 * malloc'ed array of site indices the caller frees (NULL when there are
 * none). Returns 0 or -ENOMEM.
 */
int lw_model_live_sites(const struct lw_model *model, uint32_t **out,
			size_t *count);

/*
 * A site's live totals at step point i (0 <= i < step_point_count); false
 * when the site is not tracked (LW_SERIES_UNTRACKED).
 */
bool lw_model_site_at_point(const struct lw_model *model, uint32_t site,
			    size_t i, struct lw_live_count *out);

/*
 * The step source: "api", "optimizer", "loop" (the user's loop, found by
 * the shim) or "line" (LEAKWATCH_STEP_AT) (the shim's INFO
 * "step_source"), "inferred" (infer.c) or "none".
 */
const char *lw_model_step_source(const struct lw_model *model);

/* Where the steps of source "loop" or "line" come from: the loop's (or
 * the marked line's) file, line and function, as the shim wrote them
 * (INFO "step_loop"); false for another source or a value that does not
 * parse. file and function are NUL-terminated, cut to their sizes. */
bool lw_model_step_loop(const struct lw_model *model, char *file,
			size_t file_size, long *line, char *function,
			size_t function_size);

/* A site's shares sorted by bytes, largest first (then site index). */
void lw_shares_sort(struct lw_shares *shares);

/* The named phase of a STRING id, or NULL. */
const struct lw_phase *lw_model_phase(const struct lw_model *model,
				      uint64_t string_id);

/*
 * Sites that lingered at some step's peak, by the most they added to one
 * (then site index); suppressed sites are left out. *out is malloc'ed
 * (NULL when none). Returns 0 or -ENOMEM.
 */
int lw_model_lingering_sites(const struct lw_model *model, uint32_t **out,
			     size_t *count);

/*
 * The name of an allocation API's error code ("cudaErrorMemoryAllocation",
 * "CUDA_ERROR_OUT_OF_MEMORY"), or NULL when it is not one leakwatch knows.
 */
const char *lw_alloc_error_name(uint64_t api, uint64_t error);

/* Whether a suppression matched the site (see suppressed_sites). */
static inline bool lw_model_site_suppressed(const struct lw_model *model,
					    uint32_t site)
{
	return model->sites.suppressed && site < model->sites.count &&
	       model->sites.suppressed[site];
}

/*
 * Accessors: renderers read the finished model through these, never its
 * members. Sub-structures come back const: what they hold is documented
 * with them above.
 */
static inline const struct lw_trace_header *
lw_model_header(const struct lw_model *m)
{
	return &m->meta.header;
}

static inline const struct lw_trace_meta *
lw_model_meta(const struct lw_model *m)
{
	return &m->meta;
}

static inline const struct lw_event_counts *
lw_model_counts(const struct lw_model *m)
{
	return &m->counts;
}

static inline uint32_t lw_model_site_count(const struct lw_model *m)
{
	return m->sites.count;
}

/* Site site (< lw_model_site_count()). */
static inline const struct lw_site *lw_model_site(const struct lw_model *m,
						   uint32_t site)
{
	return &m->sites.items[site];
}

/* The step series: its points, the steps between two, whether the steps
 * were inferred from the allocation pattern. */
static inline size_t lw_model_point_count(const struct lw_model *m)
{
	return m->points.count;
}

static inline const struct lw_step_point *
lw_model_point(const struct lw_model *m, size_t i)
{
	return &m->points.items[i];
}

static inline uint64_t lw_model_step_stride(const struct lw_model *m)
{
	return m->points.stride;
}

static inline bool lw_model_steps_inferred(const struct lw_model *m)
{
	return m->points.inferred;
}

static inline const struct lw_phase_table *
lw_model_phases(const struct lw_model *m)
{
	return &m->phases;
}

static inline const struct lw_peak *lw_model_peak(const struct lw_model *m)
{
	return &m->peak;
}

static inline bool lw_model_has_program_end(const struct lw_model *m)
{
	return m->have_program_end;
}

static inline const struct lw_torch_memory *
lw_model_torch(const struct lw_model *m)
{
	return &m->torch;
}

static inline const struct lw_oom *lw_model_oom(const struct lw_model *m)
{
	return &m->oom;
}

/* Device memory by context (see struct lw_context_totals). */
static inline size_t lw_model_context_count(const struct lw_model *m)
{
	return m->contexts.count;
}

static inline const struct lw_context_totals *
lw_model_context(const struct lw_model *m, size_t i)
{
	return &m->contexts.items[i];
}

/* Its live device memory at the report point. */
static inline struct lw_live_count
lw_model_context_live(const struct lw_model *m, size_t i)
{
	const struct lw_context_totals *c = &m->contexts.items[i];

	if (m->have_program_end)
		return c->program_end;
	return (struct lw_live_count){ c->totals.live_bytes,
				       c->totals.live_count };
}

/*
 * The sites (0 <= site < site_count) that keep says to keep, in order (a
 * qsort_r comparison of two uint32_t site indices; ctx is passed to both).
 * *out is malloc'ed (NULL when none). Returns 0 or -ENOMEM.
 */
int lw_select_sites(uint32_t site_count,
		    bool (*keep)(const void *ctx, uint32_t site),
		    int (*order)(const void *a, const void *b, void *ctx),
		    const void *ctx, uint32_t **out, size_t *count);

/* "device", "managed", "pinned_host", "host_registered". */
const char *lw_kind_name(unsigned kind);

#endif
