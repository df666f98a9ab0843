/* SPDX-License-Identifier: MIT */
/*
 * The analysis state, fed record by record by lw_trace_read().
 *
 * The ALLOC and FREE paths are the hot ones: a site is found through a dense
 * array indexed by stack id (one short chain for the rare stack used with
 * several kinds of memory) and the live allocation through an open-addressing
 * table with linear probing and backward-shift deletion, so that frees leave
 * no tombstones and lookups stay short however long the trace runs.
 *
 * At each STEP record (every step_stride-th, once the series is full) a step
 * point records device memory and, for each site whose live totals changed
 * since the previous point, its totals. A site gets a series of its own
 * only once its totals differ between two points (a leak, a sawtooth, state
 * born at step 1); weights made before the loop and temporaries freed
 * within each step never do, so memory stays bounded by the sites that
 * change times LW_STEP_POINTS_MAX (model.h).
 */
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LIVE_MIN_CAPACITY 1024
#define LIVE_MIN_BITS 10
/* 2^64 / golden ratio: spreads 256-byte aligned addresses over the table. */
#define HASH_MULTIPLIER 0x9e3779b97f4a7c15ull

/* Makes room for need elements; returns the (maybe moved) array or NULL. */
static void *grow_array(void *array, size_t *capacity, size_t need,
			size_t elem_size)
{
	size_t n = *capacity ? *capacity : 16;
	void *p;

	if (need <= *capacity)
		return array;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return NULL;
		n *= 2;
	}
	if (n > SIZE_MAX / elem_size)
		return NULL;
	p = realloc(array, n * elem_size);
	if (p)
		*capacity = n;
	return p;
}

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

static size_t live_home(const struct lw_model *m, uint64_t addr)
{
	return (size_t)((addr * HASH_MULTIPLIER) >> m->live_shift);
}

static int live_resize(struct lw_model *m, size_t capacity, unsigned bits)
{
	struct lw_live *old = m->live, *table;
	size_t old_capacity = m->live_capacity;

	if (capacity > SIZE_MAX / sizeof(*table))
		return -ENOMEM;
	table = alloc_table(capacity * sizeof(*table));
	if (!table)
		return -ENOMEM;
	/* All ones: site == LW_NO_SITE marks every slot empty. */
	memset(table, 0xff, capacity * sizeof(*table));
	m->live = table;
	m->live_capacity = capacity;
	m->live_shift = 64 - bits;
	for (size_t i = 0; i < old_capacity; i++) {
		size_t mask = capacity - 1, j;

		if (old[i].site == LW_NO_SITE)
			continue;
		for (j = live_home(m, old[i].addr); table[j].site != LW_NO_SITE;
		     j = (j + 1) & mask)
			;
		table[j] = old[i];
	}
	free(old);
	return 0;
}

/* The slot holding addr, or the empty slot where it would go. */
static size_t live_slot(const struct lw_model *m, uint64_t addr)
{
	size_t mask = m->live_capacity - 1, i = live_home(m, addr);

	while (m->live[i].site != LW_NO_SITE && m->live[i].addr != addr)
		i = (i + 1) & mask;
	return i;
}

/* Empties slot i, moving later entries of its probe run back into it. */
static void live_remove(struct lw_model *m, size_t i)
{
	size_t mask = m->live_capacity - 1, j = i;

	for (;;) {
		struct lw_live *e;

		j = (j + 1) & mask;
		e = &m->live[j];
		if (e->site == LW_NO_SITE)
			break;
		/* e may fill the hole if the hole lies between its home
		 * slot and j (cyclically): it would have been probed. */
		if (((j - live_home(m, e->addr)) & mask) >= ((j - i) & mask)) {
			m->live[i] = *e;
			i = j;
		}
	}
	m->live[i].site = LW_NO_SITE;
	m->live_used--;
}

static bool is_device_kind(unsigned kind)
{
	return kind == LW_MEM_DEVICE || kind == LW_MEM_MANAGED;
}

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
	m->dirty_sites[m->dirty_count++] = site;
}

/* Takes a live allocation out of the live totals of its site and kind. */
static void unaccount(struct lw_model *m, const struct lw_live *e)
{
	struct lw_site *s = &m->sites[e->site];
	struct lw_totals *k = &m->kinds[s->kind];

	mark_dirty(m, s, e->site);
	s->totals.live_bytes -= e->size;
	s->totals.live_count--;
	k->live_bytes -= e->size;
	k->live_count--;
	if (is_device_kind(s->kind))
		m->live_device_bytes -= e->size;
}

static int new_site(struct lw_model *m, uint64_t stack_id, unsigned kind,
		    uint32_t *out)
{
	struct lw_stack *st = &m->stacks[stack_id];
	struct lw_site *sites, *s;
	uint32_t *dirty;

	if (m->site_count >= LW_NO_SITE - 1)
		return -EOVERFLOW;
	sites = grow_array(m->sites, &m->site_capacity,
			   (size_t)m->site_count + 1, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	m->sites = sites;
	dirty = grow_array(m->dirty_sites, &m->dirty_capacity,
			   (size_t)m->site_count + 1, sizeof(*dirty));
	if (!dirty)
		return -ENOMEM;
	m->dirty_sites = dirty;
	s = &sites[m->site_count];
	memset(s, 0, sizeof(*s));
	s->series = LW_NO_SERIES;
	s->stack_id = stack_id;
	s->kind = (uint8_t)kind;
	s->next_site = st->first_site;
	st->first_site = m->site_count;
	*out = m->site_count++;
	return 0;
}

static int model_alloc(void *ctx, unsigned kind, uint64_t addr, uint64_t size,
		       uint64_t stack_id)
{
	struct lw_model *m = ctx;
	struct lw_live *e;
	struct lw_site *s;
	struct lw_totals *k;
	uint32_t site;
	size_t i;
	int rc;

	if (stack_id >= m->stack_count || kind < 1 || kind > LW_MEM_KIND_MAX)
		return -EINVAL; /* the reader rules these out */

	site = m->stacks[stack_id].first_site;
	while (site != LW_NO_SITE && m->sites[site].kind != kind)
		site = m->sites[site].next_site;
	if (site == LW_NO_SITE && (rc = new_site(m, stack_id, kind, &site)) < 0)
		return rc;

	i = live_slot(m, addr);
	e = &m->live[i];
	if (e->site != LW_NO_SITE) {
		/* The address was never freed in the trace (a missed free):
		 * the old allocation is gone now. */
		unaccount(m, e);
		m->reused_live_addresses++;
	} else {
		if ((m->live_used + 1) * 2 > m->live_capacity) {
			unsigned bits = 64 - m->live_shift + 1;

			if ((rc = live_resize(m, m->live_capacity * 2,
					      bits)) < 0)
				return rc;
			e = &m->live[live_slot(m, addr)];
		}
		m->live_used++;
	}
	e->addr = addr;
	e->size = size;
	e->site = site;

	s = &m->sites[site];
	mark_dirty(m, s, site);
	s->totals.live_bytes += size;
	s->totals.live_count++;
	s->totals.allocations++;
	s->totals.bytes_allocated += size;
	k = &m->kinds[kind];
	k->live_bytes += size;
	k->live_count++;
	k->allocations++;
	k->bytes_allocated += size;
	if (is_device_kind(kind)) {
		m->live_device_bytes += size;
		if (m->live_device_bytes > m->peak_bytes) {
			m->peak_bytes = m->live_device_bytes;
			m->peak_step = m->steps;
		}
		if (m->live_device_bytes > m->step_peak)
			m->step_peak = m->live_device_bytes;
	}
	m->allocations++;
	m->events++;
	return 0;
}

static int model_free(void *ctx, uint64_t addr)
{
	struct lw_model *m = ctx;
	size_t i = live_slot(m, addr);

	m->frees++;
	m->events++;
	if (m->live[i].site == LW_NO_SITE) {
		/* cudaFree(NULL) is a legal no-op, not an unknown free. */
		if (addr != 0)
			m->unknown_frees++;
		return 0;
	}
	unaccount(m, &m->live[i]);
	live_remove(m, i);
	return 0;
}

static int model_header(void *ctx, const struct lw_trace_header *header)
{
	struct lw_model *m = ctx;

	m->header = *header;
	return 0;
}

/* Halves the step series: merges pairs of points, doubles the stride. */
static void merge_step_points(struct lw_model *m)
{
	size_t half = m->step_point_count / 2;

	for (size_t i = 0; i < half; i++) {
		struct lw_step_point *a = &m->step_points[2 * i];
		struct lw_step_point b = m->step_points[2 * i + 1];

		if (a->peak_bytes > b.peak_bytes)
			b.peak_bytes = a->peak_bytes;
		m->step_points[i] = b;
	}
	for (uint32_t j = 0; j < m->series_count; j++) {
		struct lw_site_series *se = &m->series[j];

		for (size_t i = 0; i < half; i++) {
			se->bytes[i] = se->bytes[2 * i + 1];
			se->counts[i] = se->counts[2 * i + 1];
		}
	}
	m->step_point_count = half;
	m->step_stride *= 2;
}

static uint32_t saturate_count(uint64_t count)
{
	return count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
}

/* Makes room for need points in a site's series (need <= the maximum). */
static int series_reserve(struct lw_site_series *se, size_t need)
{
	size_t n = se->capacity ? se->capacity : 16;
	uint64_t *bytes;
	uint32_t *counts;

	if (need <= se->capacity)
		return 0;
	while (n < need)
		n *= 2;
	bytes = realloc(se->bytes, n * sizeof(*bytes));
	if (!bytes)
		return -ENOMEM;
	se->bytes = bytes;
	counts = realloc(se->counts, n * sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	se->counts = counts;
	se->capacity = n;
	return 0;
}

/*
 * Gives a site whose live totals just changed a series of its own, with
 * its constant totals at the points before i.
 */
static int start_site_series(struct lw_model *m, struct lw_site *s, size_t i)
{
	struct lw_site_series *all, *se;
	int rc;

	if (m->series_count >= LW_SITE_SERIES_MAX) {
		s->series = LW_SERIES_UNTRACKED;
		return 0;
	}
	all = grow_array(m->series, &m->series_capacity,
			 (size_t)m->series_count + 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->series = all;
	se = &all[m->series_count];
	memset(se, 0, sizeof(*se));
	if ((rc = series_reserve(se, i + 1)) < 0) {
		free(se->bytes);
		free(se->counts);
		return rc;
	}
	for (size_t j = 0; j < i; j++) {
		se->bytes[j] = s->step_bytes;
		se->counts[j] = saturate_count(s->step_count);
	}
	s->series = m->series_count++;
	return 0;
}

/* Records step point i: the run's and every changing site's live totals. */
static int add_step_point(struct lw_model *m)
{
	struct lw_step_point *p;
	size_t i;
	int rc;

	if (m->step_point_count == LW_STEP_POINTS_MAX)
		merge_step_points(m);
	if (m->steps % m->step_stride != 0)
		return 0; /* the merge moved the next point further on */
	p = grow_array(m->step_points, &m->step_point_capacity,
		       m->step_point_count + 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	m->step_points = p;
	i = m->step_point_count;
	p = &m->step_points[i];
	p->step = m->steps;
	p->live_bytes = m->live_device_bytes;
	p->live_count = m->kinds[LW_MEM_DEVICE].live_count +
			m->kinds[LW_MEM_MANAGED].live_count;
	p->peak_bytes = m->step_peak;

	for (size_t d = 0; d < m->dirty_count; d++) {
		struct lw_site *s = &m->sites[m->dirty_sites[d]];

		if (s->series == LW_NO_SERIES &&
		    (s->totals.live_bytes != s->step_bytes ||
		     s->totals.live_count != s->step_count) &&
		    (rc = start_site_series(m, s, i)) < 0)
			return rc;
		s->dirty = false;
		s->step_bytes = s->totals.live_bytes;
		s->step_count = s->totals.live_count;
	}
	m->dirty_count = 0;
	for (uint32_t site = 0; site < m->site_count && m->series_count; site++) {
		const struct lw_site *s = &m->sites[site];
		struct lw_site_series *se;

		if (s->series >= LW_SERIES_UNTRACKED)
			continue;
		se = &m->series[s->series];
		if ((rc = series_reserve(se, i + 1)) < 0)
			return rc;
		se->bytes[i] = s->totals.live_bytes;
		se->counts[i] = saturate_count(s->totals.live_count);
	}
	m->step_point_count++;
	m->step_peak = m->live_device_bytes;
	return 0;
}

static int model_step(void *ctx)
{
	struct lw_model *m = ctx;

	m->steps++;
	m->events++;
	if (m->steps % m->step_stride != 0)
		return 0;
	return add_step_point(m);
}

bool lw_model_site_at_point(const struct lw_model *m, uint32_t site, size_t i,
			    struct lw_live_count *out)
{
	const struct lw_site *s = &m->sites[site];

	out->live_bytes = s->step_bytes;
	out->live_count = s->step_count;
	if (s->series == LW_SERIES_UNTRACKED)
		return false;
	if (s->series != LW_NO_SERIES) {
		out->live_bytes = m->series[s->series].bytes[i];
		out->live_count = m->series[s->series].counts[i];
	}
	return true;
}

static struct lw_string *find_string(const struct lw_model *m, uint64_t id)
{
	/* Ids are normally dense from 1: try the direct index first. */
	if (id - 1 < m->string_count && m->strings[id - 1].id == id)
		return &m->strings[id - 1];
	for (size_t i = m->string_count; i-- > 0;) {
		if (m->strings[i].id == id)
			return &m->strings[i];
	}
	return NULL;
}

static int model_phase_begin(void *ctx, uint64_t string_id)
{
	struct lw_model *m = ctx;
	struct lw_string *s = find_string(m, string_id);

	if (s)
		s->phase_begins++;
	else
		m->unnamed_phase_begins++;
	m->phase_begins++;
	m->phase_depth++;
	m->events++;
	return 0;
}

static int model_phase_end(void *ctx)
{
	struct lw_model *m = ctx;

	if (m->phase_depth)
		m->phase_depth--;
	else
		m->unbalanced_phase_ends++;
	m->events++;
	return 0;
}

static int model_stack(void *ctx, uint64_t id, const uint64_t *frames,
		       uint32_t count)
{
	struct lw_model *m = ctx;
	struct lw_stack *stacks;
	uint64_t *all;

	if (id != m->stack_count)
		return -EINVAL; /* the reader rules this out */
	if (id >= SIZE_MAX / sizeof(*stacks))
		return -ENOMEM;
	stacks = grow_array(m->stacks, &m->stack_capacity, (size_t)id + 1,
			    sizeof(*stacks));
	if (!stacks)
		return -ENOMEM;
	m->stacks = stacks;
	if (count) {
		all = grow_array(m->frames, &m->frame_capacity,
				 m->frame_count + count, sizeof(*all));
		if (!all)
			return -ENOMEM;
		m->frames = all;
		memcpy(all + m->frame_count, frames, count * sizeof(*all));
	}
	stacks[id].first_frame = m->frame_count;
	stacks[id].frame_count = count;
	stacks[id].first_site = LW_NO_SITE;
	stacks[id].first_pyframe = 0;
	stacks[id].first_eval = 0;
	stacks[id].pyframe_count = 0;
	stacks[id].eval_count = 0;
	m->frame_count += count;
	m->stack_count++;
	return 0;
}

static int model_module(void *ctx, const struct lw_trace_module *module)
{
	struct lw_model *m = ctx;
	struct lw_trace_module *all;

	all = grow_array(m->modules, &m->module_capacity, m->module_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->modules = all;
	all[m->module_count++] = *module;
	return 0;
}

static int model_string(void *ctx, uint64_t id, struct lw_bytes text)
{
	struct lw_model *m = ctx;
	struct lw_string *all;

	all = grow_array(m->strings, &m->string_capacity, m->string_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->strings = all;
	all[m->string_count].id = id;
	all[m->string_count].text = text;
	all[m->string_count].phase_begins = 0;
	m->string_count++;
	return 0;
}

static int model_info(void *ctx, struct lw_bytes key, struct lw_bytes value)
{
	struct lw_model *m = ctx;
	struct lw_info *all;

	all = grow_array(m->infos, &m->info_capacity, m->info_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->infos = all;
	all[m->info_count].key = key;
	all[m->info_count].value = value;
	m->info_count++;
	return 0;
}

static int model_warning(void *ctx, struct lw_bytes text)
{
	struct lw_model *m = ctx;
	struct lw_bytes *all;

	all = grow_array(m->warnings, &m->warning_capacity,
			 m->warning_count + 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->warnings = all;
	all[m->warning_count++] = text;
	return 0;
}

static int model_end(void *ctx, uint64_t events, uint64_t dropped)
{
	struct lw_model *m = ctx;

	m->have_end = true;
	m->end_events = events;
	m->end_dropped = dropped;
	return 0;
}

static int model_dropped(void *ctx, uint64_t count)
{
	struct lw_model *m = ctx;

	m->dropped += count;
	return 0;
}

static int model_pycode(void *ctx, uint64_t id, uint64_t file_string,
			uint64_t name_string, uint64_t first_line)
{
	struct lw_model *m = ctx;
	struct lw_pycode *all;

	all = grow_array(m->pycodes, &m->pycode_capacity, m->pycode_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->pycodes = all;
	all[m->pycode_count].id = id;
	all[m->pycode_count].file_string = file_string;
	all[m->pycode_count].name_string = name_string;
	all[m->pycode_count].first_line = first_line;
	m->pycode_count++;
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

	if (stack_id == 0 || stack_id >= m->stack_count)
		return -EINVAL; /* the reader rules this out */
	if (count) {
		all_frames = grow_array(m->pyframes, &m->pyframe_capacity,
					m->pyframe_count + count,
					sizeof(*all_frames));
		if (!all_frames)
			return -ENOMEM;
		m->pyframes = all_frames;
		memcpy(all_frames + m->pyframe_count, frames,
		       count * sizeof(*all_frames));
	}
	if (eval_count) {
		all_evals = grow_array(m->evals, &m->eval_capacity,
				       m->eval_count + eval_count,
				       sizeof(*all_evals));
		if (!all_evals)
			return -ENOMEM;
		m->evals = all_evals;
		memcpy(all_evals + m->eval_count, evals,
		       eval_count * sizeof(*all_evals));
	}
	st = &m->stacks[stack_id];
	st->first_pyframe = m->pyframe_count;
	st->pyframe_count = count;
	st->first_eval = m->eval_count;
	st->eval_count = eval_count;
	m->pyframe_count += count;
	m->eval_count += eval_count;
	return 0;
}

static int model_mark(void *ctx, uint64_t kind)
{
	struct lw_model *m = ctx;
	struct lw_live_count *sites = NULL;

	if (kind != LW_MARK_PROGRAM_END || m->have_program_end)
		return 0;
	if (m->site_count) {
		sites = calloc(m->site_count, sizeof(*sites));
		if (!sites)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->site_count; i++) {
		sites[i].live_bytes = m->sites[i].totals.live_bytes;
		sites[i].live_count = m->sites[i].totals.live_count;
	}
	for (unsigned k = 1; k <= LW_MEM_KIND_MAX; k++) {
		m->program_end_kinds[k].live_bytes = m->kinds[k].live_bytes;
		m->program_end_kinds[k].live_count = m->kinds[k].live_count;
	}
	m->program_end_sites = sites;
	m->program_end_site_count = m->site_count;
	m->program_end_steps = m->steps;
	m->have_program_end = true;
	return 0;
}

const struct lw_trace_ops lw_model_ops = {
	.header = model_header,
	.alloc = model_alloc,
	.free = model_free,
	.step = model_step,
	.phase_begin = model_phase_begin,
	.phase_end = model_phase_end,
	.stack = model_stack,
	.module = model_module,
	.string = model_string,
	.info = model_info,
	.warning = model_warning,
	.end = model_end,
	.dropped = model_dropped,
	.pycode = model_pycode,
	.pystack = model_pystack,
	.mark = model_mark,
};

int lw_model_init(struct lw_model *m)
{
	memset(m, 0, sizeof(*m));
	m->stacks = calloc(16, sizeof(*m->stacks));
	if (!m->stacks)
		return -ENOMEM;
	m->stack_capacity = 16;
	m->stacks[0].first_site = LW_NO_SITE;
	m->stack_count = 1;
	m->step_stride = 1;
	return live_resize(m, LIVE_MIN_CAPACITY, LIVE_MIN_BITS);
}

void lw_model_fini(struct lw_model *m)
{
	free(m->live);
	free(m->sites);
	free(m->stacks);
	free(m->frames);
	free(m->strings);
	free(m->infos);
	free(m->warnings);
	free(m->modules);
	free(m->pycodes);
	free(m->pyframes);
	free(m->evals);
	free(m->program_end_sites);
	free(m->step_points);
	for (uint32_t j = 0; j < m->series_count; j++) {
		free(m->series[j].bytes);
		free(m->series[j].counts);
	}
	free(m->series);
	free(m->dirty_sites);
	memset(m, 0, sizeof(*m));
}

const struct lw_string *lw_model_string(const struct lw_model *m, uint64_t id)
{
	return find_string(m, id);
}
