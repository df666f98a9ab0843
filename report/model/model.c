/* SPDX-License-Identifier: MIT */
/*
 * The analysis state, fed record by record by lw_trace_read().
 *
 * The ALLOC and FREE paths are the hot ones: a site is found through a dense
 * array indexed by stack id (one short chain for the rare stack used with
 * several kinds of memory) and the live allocation through the address
 * table (common/lw-addr-table.h), whose frees leave no tombstones, so
 * lookups stay short however long the trace runs.
 *
 * This file keeps sites, stacks, the trace's own records and the live
 * totals; the step series (model-points.c), phases (model-phases.c) and
 * peak attribution (model-peak.c) are their own files. A site's live totals
 * changing marks it dirty, so that a step point visits only the sites that
 * changed: memory stays bounded by those sites times LW_STEP_POINTS_MAX.
 */
#include "model-parts.h"
#include "torch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/*
 * Memory for the live table. Lookups land anywhere in it: past a few MiB,
 * huge pages save a TLB miss on most of them.
 */
static void *alloc_table(size_t bytes)
{
	const size_t huge = 2 * 1024 * 1024;
	void *p;

	if (bytes < 2 * huge)
		return malloc(bytes);
	if (posix_memalign(&p, huge, bytes) != 0)
		return NULL;
	madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

static const struct lw_addr_table_kind live_kind = {
	.slot_size = sizeof(struct lw_live),
	.used_offset = offsetof(struct lw_live, used),
	.alloc = alloc_table,
	.release = free,
	.max_load = 128,
};

/*
 * Remembers that a site's live totals changed, for the next step point, so
 * that a step point visits only the sites that changed. The list has room
 * for every site (new_site() grows it), and a site is on it at most once.
 */
static void mark_dirty(struct lw_model *m, struct lw_site *s, uint32_t site)
{
	if (s->dirty)
		return;
	s->dirty = true;
	m->points.dirty[m->points.dirty_count++] = site;
}

/* Takes a live allocation out of the live totals of its site and kind. */
static void unaccount(struct lw_model *m, const struct lw_live *e)
{
	struct lw_site *s = &m->sites.items[e->site];
	struct lw_totals *k = &m->kinds[s->kind];

	mark_dirty(m, s, e->site);
	s->totals.live_bytes -= e->size;
	s->totals.live_count--;
	k->live_bytes -= e->size;
	k->live_count--;
	if (lw_mem_kind_is_device(s->kind)) {
		struct lw_totals *c = &m->contexts.items[e->context].totals;

		m->counts.live_device_bytes -= e->size;
		c->live_bytes -= e->size;
		c->live_count--;
	}
}

uint16_t lw_model_context_index(struct lw_model *m, uint64_t api,
				int64_t device, uint64_t stream)
{
	struct lw_context_table *t = &m->contexts;
	uint16_t i;

	for (i = 0; i < t->count; i++) {
		const struct lw_context_totals *c = &t->items[i];

		if (c->api == api && c->device == device && c->stream == stream)
			return i;
	}
	if (t->count == LW_CONTEXTS_MAX) {
		i = LW_CONTEXTS_MAX - 1;
		t->items[i].other = true;
		return i;
	}
	t->items[t->count] = (struct lw_context_totals){
		.api = api, .device = device, .stream = stream,
	};
	return t->count++;
}

int lw_model_on_context(void *ctx, uint64_t api, int64_t device,
			uint64_t stream)
{
	struct lw_model *m = ctx;

	m->contexts.current = lw_model_context_index(m, api, device, stream);
	return lw_torch_context(ctx, api, device, stream);
}

static int new_site(struct lw_model *m, uint64_t stack_id, unsigned kind,
		    uint32_t *out)
{
	struct lw_stack *st = &m->stacks.items[stack_id];
	struct lw_site *sites, *s;
	uint32_t *dirty;

	if (m->sites.count >= LW_NO_SITE - 1)
		return -EOVERFLOW;
	sites = lw_grow_array(m->sites.items, &m->sites.capacity,
			   (size_t)m->sites.count + 1, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	m->sites.items = sites;
	dirty = lw_grow_array(m->points.dirty, &m->points.dirty_capacity,
			   (size_t)m->sites.count + 1, sizeof(*dirty));
	if (!dirty)
		return -ENOMEM;
	m->points.dirty = dirty;
	s = &sites[m->sites.count];
	memset(s, 0, sizeof(*s));
	s->series = LW_NO_SERIES;
	s->phase_slot = UINT32_MAX;
	s->stack_id = stack_id;
	s->kind = (uint8_t)kind;
	s->next_site = st->first_site;
	st->first_site = m->sites.count;
	*out = m->sites.count++;
	return 0;
}

int lw_model_site_for(struct lw_model *m, uint64_t stack_id, unsigned kind,
		      uint32_t *out)
{
	uint32_t site = m->stacks.items[stack_id].first_site;

	while (site != LW_NO_SITE && m->sites.items[site].kind != kind)
		site = m->sites.items[site].next_site;
	if (site == LW_NO_SITE)
		return new_site(m, stack_id, kind, out);
	*out = site;
	return 0;
}

/*
 * A live allocation ends (freed, or its address reused): out of the live
 * totals, out of its open phase, and into the peak attribution.
 */
static int forget(struct lw_model *m, const struct lw_live *e)
{
	unaccount(m, e);
	if (m->sites.items[e->site].torch_block)
		lw_torch_block_freed(m, e->addr, e->size);
	lw_torch_account(m);
	if (e->phase) {
		struct lw_open_phase *op = lw_model_open_phase(m, e->phase);

		if (op)
			lw_shares_sub(&op->live, e->site, e->size);
	}
	if (lw_mem_kind_is_device(m->sites.items[e->site].kind))
		return lw_peak_note_free(m, e);
	return 0;
}

static int end_step(struct lw_model *m);

static int model_alloc(void *ctx, unsigned kind, uint64_t addr, uint64_t size,
		       uint64_t stack_id)
{
	struct lw_model *m = ctx;
	struct lw_live *e;
	struct lw_site *s;
	struct lw_totals *k;
	uint32_t site;
	bool found;
	int rc;

	if (stack_id >= m->stacks.count || kind < 1 || kind > LW_MEM_KIND_MAX)
		return -EINVAL; /* the reader rules these out */
	if (m->points.anchor && stack_id == m->points.anchor) {
		if (m->points.anchor_seen && (rc = end_step(m)) < 0)
			return rc;
		m->points.anchor_seen = true;
	}

	if ((rc = lw_model_site_for(m, stack_id, kind, &site)) < 0)
		return rc;

	e = lw_addr_table_put(&m->live, &live_kind, addr, &found);
	if (!e)
		return -ENOMEM;
	if (found) {
		/* The address was never freed in the trace (a missed free):
		 * the old allocation is gone now. */
		if ((rc = forget(m, e)) < 0)
			return rc;
		m->counts.reused_live_addresses++;
	}
	e->size = size;
	e->site = site;
	e->birth_step = m->counts.steps;
	e->context = m->contexts.current;
	if ((rc = lw_model_phase_born(m, e)) < 0)
		return rc;

	s = &m->sites.items[site];
	lw_model_account_births(m, site, e->context,
				m->torch.api == LW_API_TORCH_BLOCK, 1, size);
	if (s->torch_block)
		lw_torch_block_born(m, addr, size);
	if (s->totals.live_count)
		s->births_onto_live++;
	mark_dirty(m, s, site);
	s->totals.live_bytes += size;
	s->totals.live_count++;
	k = &m->kinds[kind];
	k->live_bytes += size;
	k->live_count++;
	if (lw_mem_kind_is_device(kind)) {
		struct lw_totals *c = &m->contexts.items[e->context].totals;

		c->live_bytes += size;
		c->live_count++;
		m->counts.live_device_bytes += size;
		if (m->counts.live_device_bytes > m->peak.bytes) {
			m->peak.bytes = m->counts.live_device_bytes;
			m->peak.step = m->counts.steps;
		}
		if (m->counts.live_device_bytes > m->points.peak)
			m->points.peak = m->counts.live_device_bytes;
		if (m->counts.live_device_bytes > m->peak.cur_bytes) {
			m->peak.cur_bytes = m->counts.live_device_bytes;
			m->peak.cur_event = m->counts.events;
		}
	}
	lw_torch_account(m);
	m->counts.events++;
	return 0;
}

static int model_free(void *ctx, uint64_t addr)
{
	struct lw_model *m = ctx;
	struct lw_live *e = lw_addr_table_find(&m->live, &live_kind, addr);
	int rc;

	m->counts.frees++;
	m->counts.events++;
	if (!e) {
		/* cudaFree(NULL) is a legal no-op, not an unknown free. */
		if (addr != 0)
			m->counts.unknown_frees++;
		return 0;
	}
	/* How long it lived, and why it went. */
	lw_model_account_frees(m, e->site, 1, m->counts.steps - e->birth_step,
			       m->in_gc, m->in_gc ? e->size : 0);
	rc = forget(m, e);
	lw_addr_table_remove(&m->live, &live_kind, e);
	return rc;
}

static int model_header(void *ctx, const struct lw_trace_header *header)
{
	struct lw_model *m = ctx;

	m->meta.header = *header;
	return 0;
}

/*
 * The current step ends: its peak is known, so the frees of older memory
 * after it say what lingered there; the oldest step still open to
 * lingering is settled; a step point is taken.
 */
static int end_step(struct lw_model *m)
{
	int rc;

	if ((rc = lw_peak_end_step(m)) < 0)
		return rc;
	m->counts.steps++;
	if (m->counts.steps % m->points.stride != 0)
		return 0;
	return lw_points_add(m);
}

static int model_step(void *ctx)
{
	struct lw_model *m = ctx;

	m->counts.events++;
	if (m->points.void_steps) {
		m->points.void_steps--;
		return 0;
	}
	/* The loop's last iteration, ended when the program's code
	 * finished: after its functions returned and let go of their
	 * memory, so it counts, but its memory is the program end's. */
	if (m->points.step_at_program_end) {
		m->points.step_at_program_end = false;
		m->counts.steps++;
		return 0;
	}
	return end_step(m);
}

int lw_model_finish(struct lw_model *m)
{
	int rc;

	if ((rc = lw_peak_finish(m)) < 0)
		return rc;
	for (size_t i = 0; i < m->phases.count; i++)
		lw_shares_sort(&m->phases.items[i].sites);
	return 0;
}

/*
 * Strings and code objects by id. Ids are normally dense from 1, so the
 * record with id is first looked for at index id - 1; the table holds the
 * index of the last record with each id, so that any ids a trace holds
 * (sparse, repeated) are found in constant time, not by a scan.
 */
static const struct lw_addr_table_kind id_kind = {
	.slot_size = sizeof(struct lw_id_slot),
	.used_offset = offsetof(struct lw_id_slot, used),
	.alloc = malloc,
	.release = free,
	.max_load = 128,
};

static int index_id(struct lw_addr_table *t, uint64_t id, size_t index)
{
	struct lw_id_slot *slot;
	bool found;

	if (index > UINT32_MAX)
		return -ENOMEM;
	slot = lw_addr_table_put(t, &id_kind, id, &found);
	if (!slot)
		return -ENOMEM;
	slot->index = (uint32_t)index;
	return 0;
}

static const struct lw_id_slot *find_id(const struct lw_addr_table *t,
					uint64_t id)
{
	return lw_addr_table_find(t, &id_kind, id);
}

struct lw_string *lw_model_find_string(const struct lw_model *m, uint64_t id)
{
	const struct lw_id_slot *slot;

	if (id - 1 < m->meta.string_count && m->meta.strings[id - 1].id == id)
		return &m->meta.strings[id - 1];
	slot = find_id(&m->meta.string_ids, id);
	return slot ? &m->meta.strings[slot->index] : NULL;
}

const struct lw_pycode *lw_model_find_pycode(const struct lw_model *m,
					     uint64_t id)
{
	const struct lw_id_slot *slot;

	if (id - 1 < m->stacks.pycode_count && m->stacks.pycodes[id - 1].id == id)
		return &m->stacks.pycodes[id - 1];
	slot = find_id(&m->stacks.pycode_ids, id);
	return slot ? &m->stacks.pycodes[slot->index] : NULL;
}

static int model_stack(void *ctx, uint64_t id, const uint64_t *frames,
		       uint32_t count)
{
	struct lw_model *m = ctx;
	struct lw_stack *stacks;
	uint64_t *all;

	if (id != m->stacks.count)
		return -EINVAL; /* the reader rules this out */
	if (id >= SIZE_MAX / sizeof(*stacks))
		return -ENOMEM;
	stacks = lw_grow_array(m->stacks.items, &m->stacks.capacity, (size_t)id + 1,
			    sizeof(*stacks));
	if (!stacks)
		return -ENOMEM;
	m->stacks.items = stacks;
	if (count) {
		all = lw_grow_array(m->stacks.frames, &m->stacks.frame_capacity,
				 m->stacks.frame_count + count, sizeof(*all));
		if (!all)
			return -ENOMEM;
		m->stacks.frames = all;
		memcpy(all + m->stacks.frame_count, frames, count * sizeof(*all));
	}
	stacks[id].first_frame = m->stacks.frame_count;
	stacks[id].frame_count = count;
	stacks[id].first_site = LW_NO_SITE;
	stacks[id].short_lived = LW_NO_SITE;
	stacks[id].first_pyframe = 0;
	stacks[id].first_eval = 0;
	stacks[id].pyframe_count = 0;
	stacks[id].eval_count = 0;
	m->stacks.frame_count += count;
	m->stacks.count++;
	return 0;
}

static int model_module(void *ctx, const struct lw_trace_module *module)
{
	struct lw_model *m = ctx;
	struct lw_trace_module *all;

	all = lw_grow_array(m->meta.modules, &m->meta.module_capacity, m->meta.module_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->meta.modules = all;
	all[m->meta.module_count++] = *module;
	return 0;
}

static int model_string(void *ctx, uint64_t id, struct lw_bytes text)
{
	struct lw_model *m = ctx;
	struct lw_string *all;

	all = lw_grow_array(m->meta.strings, &m->meta.string_capacity, m->meta.string_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->meta.strings = all;
	if (index_id(&m->meta.string_ids, id, m->meta.string_count) < 0)
		return -ENOMEM;
	all[m->meta.string_count].id = id;
	all[m->meta.string_count].text = text;
	all[m->meta.string_count].phase_begins = 0;
	m->meta.string_count++;
	return 0;
}

int lw_model_known_info(const uint8_t *key, size_t len)
{
	/* Every key the report's parts pass to lw_model_info(). */
	static const char *const known[LW_KNOWN_INFO_KEYS] = {
		"exe", "cmdline", "cwd", "leakwatch", "cudart", "python",
		"python_eval", "step_source", "torch_alloc_conf",
		"torch_alloc_conf_source", "rank", "cudart_runtimes",
		"step_loop",
	};

	for (int i = 0; i < LW_KNOWN_INFO_KEYS && known[i]; i++) {
		if (strlen(known[i]) == len && memcmp(known[i], key, len) == 0)
			return i;
	}
	return -1;
}

static int model_info(void *ctx, struct lw_bytes key, struct lw_bytes value)
{
	struct lw_model *m = ctx;
	int known = lw_model_known_info(key.data, key.len);
	struct lw_info *all;

	if (key.len == strlen("step_at_program_end") &&
	    memcmp(key.data, "step_at_program_end", key.len) == 0)
		m->points.step_at_program_end = true;

	all = lw_grow_array(m->meta.infos, &m->meta.info_capacity, m->meta.info_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->meta.infos = all;
	all[m->meta.info_count].key = key;
	all[m->meta.info_count].value = value;
	m->meta.info_count++;
	if (known >= 0)
		m->meta.known_infos[known] = m->meta.info_count;
	return 0;
}

static int model_warning(void *ctx, struct lw_bytes text)
{
	struct lw_model *m = ctx;
	struct lw_bytes *all;

	all = lw_grow_array(m->meta.warnings, &m->meta.warning_capacity,
			 m->meta.warning_count + 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->meta.warnings = all;
	all[m->meta.warning_count++] = text;
	return 0;
}

static int model_end(void *ctx, uint64_t events, uint64_t dropped)
{
	struct lw_model *m = ctx;

	m->meta.have_end = true;
	m->meta.end_events = events;
	m->meta.end_dropped = dropped;
	return 0;
}

static int model_alloc_failed(void *ctx, uint64_t api, uint64_t kind,
			      uint64_t size, uint64_t error)
{
	struct lw_model *m = ctx;
	size_t i;

	(void)kind;
	(void)size;
	m->meta.failed_allocations++;
	for (i = 0; i < m->meta.failed_kind_count; i++) {
		if (m->meta.failed[i].api == api && m->meta.failed[i].error == error) {
			m->meta.failed[i].count++;
			return 0;
		}
	}
	if (i < LW_FAILED_KINDS_MAX) {
		m->meta.failed[i] = (struct lw_failed_allocation){ api, error, 1 };
		m->meta.failed_kind_count++;
	}
	return 0;
}

static int model_holder(void *ctx, uint64_t address, uint64_t path,
			uint64_t root, uint64_t objects, uint64_t graph,
			uint64_t flags)
{
	struct lw_model *m = ctx;
	struct lw_holder *grown;
	const struct lw_live *e;

	if (flags & LW_HOLDER_CUT)
		m->holders.cut = true;
	if (m->holders.searches == 0 || m->holders.events != m->counts.events)
		m->holders.searches++;
	m->holders.events = m->counts.events;
	if (address == 0)
		return 0;
	e = lw_addr_table_find(&m->live, &live_kind, address);
	/* Written while the allocation was live; anything else is a trace
	 * that was cut and joined, and says nothing. */
	if (!e)
		return 0;
	grown = lw_grow_array(m->holders.items, &m->holders.capacity,
			      m->holders.count + 1, sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	m->holders.items = grown;
	m->holders.items[m->holders.count++] = (struct lw_holder){
		e->site, path, root, objects, graph, flags,
		m->holders.searches,
	};
	return 0;
}

static int model_pypath(void *ctx, uint64_t kind, uint64_t path,
			uint64_t name)
{
	struct lw_model *m = ctx;
	struct lw_trace_meta *meta = &m->meta;
	struct lw_pypath *grown;

	if (kind == 0 || kind > LW_PYPATH_KIND_MAX || path == 0 ||
	    meta->pypath_count == LW_PYPATHS_MAX)
		return 0;	/* a newer writer's kind, or too many */
	for (size_t i = 0; i < meta->pypath_count; i++) {
		const struct lw_pypath *p = &meta->pypaths[i];

		if (p->kind == kind && p->path == path && p->name == name)
			return 0;
	}
	grown = lw_grow_array(meta->pypaths, &meta->pypath_capacity,
			      meta->pypath_count + 1, sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	meta->pypaths = grown;
	meta->pypaths[meta->pypath_count++] =
		(struct lw_pypath){ kind, path, name };
	return 0;
}

const char *lw_alloc_error_name(uint64_t api, uint64_t error)
{
	/* The codes an allocation returns in practice; the runtime's and
	 * the driver's enums differ (cuda_runtime_api.h, cuda.h). */
	static const struct {
		uint64_t code;
		const char *runtime, *driver;
	} names[] = {
		{ 1, "cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE" },
		{ 2, "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY" },
		{ 3, "cudaErrorInitializationError",
		  "CUDA_ERROR_NOT_INITIALIZED" },
		{ 4, "cudaErrorCudartUnloading", "CUDA_ERROR_DEINITIALIZED" },
		{ 34, "cudaErrorStubLibrary", "CUDA_ERROR_STUB_LIBRARY" },
		{ 35, "cudaErrorInsufficientDriver", NULL },
		{ 46, "cudaErrorDevicesUnavailable", NULL },
		{ 100, "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE" },
		{ 101, "cudaErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE" },
		{ 201, NULL, "CUDA_ERROR_INVALID_CONTEXT" },
		{ 801, "cudaErrorNotSupported", "CUDA_ERROR_NOT_SUPPORTED" },
		{ 999, "cudaErrorUnknown", "CUDA_ERROR_UNKNOWN" },
	};
	bool driver = api >= LW_API_CU_MEM_ALLOC;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].code == error)
			return driver ? names[i].driver : names[i].runtime;
	return NULL;
}

static int model_dropped(void *ctx, uint64_t count)
{
	struct lw_model *m = ctx;

	m->meta.dropped += count;
	return 0;
}

static int model_pycode(void *ctx, uint64_t id, uint64_t file_string,
			uint64_t name_string, uint64_t first_line)
{
	struct lw_model *m = ctx;
	struct lw_pycode *all;

	all = lw_grow_array(m->stacks.pycodes, &m->stacks.pycode_capacity, m->stacks.pycode_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->stacks.pycodes = all;
	if (index_id(&m->stacks.pycode_ids, id, m->stacks.pycode_count) < 0)
		return -ENOMEM;
	all[m->stacks.pycode_count].id = id;
	all[m->stacks.pycode_count].file_string = file_string;
	all[m->stacks.pycode_count].name_string = name_string;
	all[m->stacks.pycode_count].first_line = first_line;
	m->stacks.pycode_count++;
	return 0;
}

static int model_pystack(void *ctx, uint64_t stack_id,
			 const struct lw_trace_pyframe *frames, uint32_t count,
			 const uint32_t *evals, uint32_t eval_count)
{
	struct lw_model *m = ctx;
	struct lw_trace_pyframe *all_frames;
	uint32_t *all_evals;
	struct lw_stack *st;

	if (stack_id == 0 || stack_id >= m->stacks.count)
		return -EINVAL; /* the reader rules this out */
	if (count) {
		all_frames = lw_grow_array(m->stacks.pyframes, &m->stacks.pyframe_capacity,
					m->stacks.pyframe_count + count,
					sizeof(*all_frames));
		if (!all_frames)
			return -ENOMEM;
		m->stacks.pyframes = all_frames;
		memcpy(all_frames + m->stacks.pyframe_count, frames,
		       count * sizeof(*all_frames));
	}
	if (eval_count) {
		all_evals = lw_grow_array(m->stacks.evals, &m->stacks.eval_capacity,
				       m->stacks.eval_count + eval_count,
				       sizeof(*all_evals));
		if (!all_evals)
			return -ENOMEM;
		m->stacks.evals = all_evals;
		memcpy(all_evals + m->stacks.eval_count, evals,
		       eval_count * sizeof(*all_evals));
	}
	st = &m->stacks.items[stack_id];
	st->first_pyframe = m->stacks.pyframe_count;
	st->pyframe_count = count;
	st->first_eval = m->stacks.eval_count;
	st->eval_count = eval_count;
	m->stacks.pyframe_count += count;
	m->stacks.eval_count += eval_count;
	return 0;
}

static int model_mark(void *ctx, uint64_t kind)
{
	struct lw_model *m = ctx;
	struct lw_live_count *sites = NULL;

	if (kind == LW_MARK_GC_START && !m->have_program_end) {
		m->in_gc = true;
		m->counts.gc_passes++;
		return 0;
	}
	if (kind == LW_MARK_GC_STOP) {
		m->in_gc = false;
		return 0;
	}
	if (kind != LW_MARK_PROGRAM_END || m->have_program_end)
		return 0;
	m->in_gc = false;
	if (m->sites.count) {
		sites = calloc(m->sites.count, sizeof(*sites));
		if (!sites)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->sites.count; i++) {
		sites[i].live_bytes = m->sites.items[i].totals.live_bytes;
		sites[i].live_count = m->sites.items[i].totals.live_count;
	}
	for (unsigned k = 1; k <= LW_MEM_KIND_MAX; k++) {
		m->program_end_kinds[k].live_bytes = m->kinds[k].live_bytes;
		m->program_end_kinds[k].live_count = m->kinds[k].live_count;
	}
	for (size_t i = 0; i < m->contexts.count; i++) {
		struct lw_context_totals *c = &m->contexts.items[i];

		c->program_end.live_bytes = c->totals.live_bytes;
		c->program_end.live_count = c->totals.live_count;
	}
	m->program_end_sites = sites;
	m->program_end_site_count = m->sites.count;
	m->program_end_steps = m->counts.steps;
	m->torch.program_end_allocated = m->torch.allocated_bytes;
	m->torch.program_end_reserved = m->torch.reserved_bytes;
	m->have_program_end = true;
	return 0;
}

const struct lw_trace_ops lw_model_ops = {
	.header = model_header,
	.alloc = model_alloc,
	.free = model_free,
	.step = model_step,
	.phase_begin = lw_model_on_phase_begin,
	.phase_end = lw_model_on_phase_end,
	.stack = model_stack,
	.module = model_module,
	.string = model_string,
	.info = model_info,
	.warning = model_warning,
	.end = model_end,
	.dropped = model_dropped,
	.alloc_failed = model_alloc_failed,
	.pycode = model_pycode,
	.pystack = model_pystack,
	.mark = model_mark,
	.context = lw_model_on_context,
	.segment = lw_torch_segment,
	.segment_free = lw_torch_segment_free,
	.oom = lw_torch_oom,
	.holder = model_holder,
	.short_lived_change = lw_model_on_short_lived_change,
	.short_lived = lw_model_on_short_lived,
	.pypath = model_pypath,
};

int lw_model_init(struct lw_model *m)
{
	memset(m, 0, sizeof(*m));
	m->stacks.items = calloc(16, sizeof(*m->stacks.items));
	if (!m->stacks.items)
		return -ENOMEM;
	m->stacks.capacity = 16;
	m->stacks.items[0].first_site = LW_NO_SITE;
	m->stacks.items[0].short_lived = LW_NO_SITE;
	m->stacks.count = 1;
	m->points.stride = 1;
	/* Context 0: the allocations before any CONTEXT record. */
	m->contexts.items[0].device = -1;
	m->contexts.count = 1;
	return 0;
}

void lw_model_fini(struct lw_model *m)
{
	lw_addr_table_clear(&m->live, &live_kind);
	free(m->sites.items);
	free(m->stacks.items);
	free(m->stacks.frames);
	free(m->meta.strings);
	lw_addr_table_clear(&m->meta.string_ids, &id_kind);
	lw_addr_table_clear(&m->stacks.pycode_ids, &id_kind);
	free(m->meta.infos);
	free(m->meta.warnings);
	free(m->meta.modules);
	free(m->stacks.pycodes);
	free(m->holders.items);
	free(m->short_lived.items);
	free(m->meta.pypaths);
	free(m->stacks.pyframes);
	free(m->stacks.evals);
	free(m->program_end_sites);
	lw_torch_fini(m);
	free(m->points.items);
	for (uint32_t j = 0; j < m->points.series_count; j++) {
		free(m->points.series[j].bytes);
		free(m->points.series[j].counts);
	}
	free(m->points.series);
	free(m->points.dirty);
	free(m->sites.suppressed);
	for (size_t i = 0; i < m->phases.count; i++)
		lw_shares_fini(&m->phases.items[i].sites);
	free(m->phases.items);
	for (size_t i = 0; i < LW_PHASE_DEPTH_MAX; i++)
		lw_shares_fini(&m->phases.open[i].live);
	free(m->peak.late_frees);
	for (size_t i = 0; i < LW_LINGER_STEPS; i++)
		free(m->peak.touched[i]);
	lw_shares_fini(&m->peak.worst.sites);
	lw_shares_fini(&m->peak.most.sites);
	memset(m, 0, sizeof(*m));
}

const struct lw_string *lw_model_string(const struct lw_model *m, uint64_t id)
{
	return lw_model_find_string(m, id);
}
