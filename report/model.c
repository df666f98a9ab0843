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
#include "lw-hash.h"
#include "torch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

static const struct lw_addr_table_kind live_kind = {
	.slot_size = sizeof(struct lw_live),
	.empty = LW_NO_ADDR,
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
	if (lw_mem_kind_is_device(s->kind))
		m->counts.live_device_bytes -= e->size;
}

static int new_site(struct lw_model *m, uint64_t stack_id, unsigned kind,
		    uint32_t *out)
{
	struct lw_stack *st = &m->stacks.items[stack_id];
	struct lw_site *sites, *s;
	uint32_t *dirty;

	if (m->sites.count >= LW_NO_SITE - 1)
		return -EOVERFLOW;
	sites = grow_array(m->sites.items, &m->sites.capacity,
			   (size_t)m->sites.count + 1, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	m->sites.items = sites;
	dirty = grow_array(m->points.dirty, &m->points.dirty_capacity,
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

/* Adds to the share of site in sh; *slot caches where it is. */
static int shares_add(struct lw_shares *sh, uint32_t site, uint64_t bytes,
		      uint64_t count, uint32_t *slot)
{
	struct lw_site_share *items;
	size_t i;

	if (slot && *slot < sh->count && sh->items[*slot].site == site) {
		i = *slot;
	} else {
		for (i = 0; i < sh->count && sh->items[i].site != site; i++)
			;
		if (i == sh->count) {
			items = grow_array(sh->items, &sh->capacity,
					   sh->count + 1, sizeof(*items));
			if (!items)
				return -ENOMEM;
			sh->items = items;
			items[i].site = site;
			items[i].bytes = 0;
			items[i].count = 0;
			sh->count++;
		}
		if (slot)
			*slot = (uint32_t)i;
	}
	sh->items[i].bytes += bytes;
	sh->items[i].count += count;
	return 0;
}

static void shares_sub(struct lw_shares *sh, uint32_t site, uint64_t bytes)
{
	for (size_t i = 0; i < sh->count; i++) {
		if (sh->items[i].site == site) {
			sh->items[i].bytes -= bytes;
			sh->items[i].count--;
			return;
		}
	}
}

static int compare_shares(const void *a, const void *b)
{
	const struct lw_site_share *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return (x->site > y->site) - (x->site < y->site);
}

void lw_shares_sort(struct lw_shares *sh)
{
	if (sh->count > 1)
		qsort(sh->items, sh->count, sizeof(*sh->items), compare_shares);
}

static void shares_fini(struct lw_shares *sh)
{
	free(sh->items);
	memset(sh, 0, sizeof(*sh));
}

/* The open phase instance with this id, or NULL (ended, or too deep). */
static struct lw_open_phase *open_phase(struct lw_model *m, uint32_t instance)
{
	size_t depth = m->phases.depth < LW_PHASE_DEPTH_MAX ? m->phases.depth
							   : LW_PHASE_DEPTH_MAX;

	for (size_t i = depth; i-- > 0;) {
		if (m->phases.open[i].instance == instance)
			return &m->phases.open[i];
	}
	return NULL;
}

/* Counts a new live allocation for the innermost open phase. */
static int phase_born(struct lw_model *m, struct lw_live *e)
{
	struct lw_open_phase *op;
	struct lw_site *s = &m->sites.items[e->site];

	e->phase = 0;
	if (m->phases.depth == 0 || m->phases.depth > LW_PHASE_DEPTH_MAX)
		return 0;
	op = &m->phases.open[m->phases.depth - 1];
	e->phase = op->instance;
	if (s->phase_instance != op->instance) {
		s->phase_instance = op->instance;
		s->phase_slot = UINT32_MAX;
	}
	return shares_add(&op->live, e->site, e->size, 1, &s->phase_slot);
}

/* Adds size bytes of site to what lingered at the peak of the step in slot. */
static int linger_add(struct lw_model *m, unsigned slot, uint32_t site,
		      uint64_t size)
{
	struct lw_site *s = &m->sites.items[site];
	uint32_t *touched;

	if (s->lingering[slot] == 0) {
		touched = grow_array(m->peak.touched[slot],
				     &m->peak.touched_capacity[slot],
				     m->peak.touched_count[slot] + 1,
				     sizeof(*touched));
		if (!touched)
			return -ENOMEM;
		m->peak.touched[slot] = touched;
		touched[m->peak.touched_count[slot]++] = site;
	}
	s->lingering[slot] += size;
	m->peak.open_bytes[slot] += size;
	return 0;
}

/*
 * Memory born in step b and freed now, in step m->counts.steps, lingered at the
 * peaks of the steps in between and maybe at this step's: counted when this
 * step ends (end_step()). A free after the last step is teardown, not
 * lingering: the trace ends before that step does, and it is never counted.
 */
static int linger_free(struct lw_model *m, const struct lw_live *e)
{
	uint64_t now = m->counts.steps, b = e->birth_step;
	struct lw_late_free *late;

	if (b >= now || now - b > LW_LINGER_STEPS)
		return 0;
	late = grow_array(m->peak.late_frees, &m->peak.late_free_capacity,
			  m->peak.late_free_count + 1, sizeof(*late));
	if (!late)
		return -ENOMEM;
	m->peak.late_frees = late;
	late[m->peak.late_free_count].event = m->counts.events;
	late[m->peak.late_free_count].birth_step = b;
	late[m->peak.late_free_count].size = e->size;
	late[m->peak.late_free_count].site = e->site;
	m->peak.late_free_count++;
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
		m->torch.allocated_bytes -= e->size;
	if (e->phase) {
		struct lw_open_phase *op = open_phase(m, e->phase);

		if (op)
			shares_sub(&op->live, e->site, e->size);
	}
	if (lw_mem_kind_is_device(m->sites.items[e->site].kind))
		return linger_free(m, e);
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

	if (stack_id >= m->stacks.count || kind < 1 || kind > LW_MEM_KIND_MAX ||
	    addr == LW_NO_ADDR)
		return -EINVAL; /* the reader rules these out */
	if (m->points.anchor && stack_id == m->points.anchor) {
		if (m->points.anchor_seen && (rc = end_step(m)) < 0)
			return rc;
		m->points.anchor_seen = true;
	}

	site = m->stacks.items[stack_id].first_site;
	while (site != LW_NO_SITE && m->sites.items[site].kind != kind)
		site = m->sites.items[site].next_site;
	if (site == LW_NO_SITE && (rc = new_site(m, stack_id, kind, &site)) < 0)
		return rc;

	e = lw_addr_table_put(&m->live, addr, &found);
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
	if ((rc = phase_born(m, e)) < 0)
		return rc;

	s = &m->sites.items[site];
	/* A site is PyTorch's blocks or not from its first allocation on,
	 * so that its frees take back what its births added. */
	if (s->totals.allocations == 0)
		s->torch_block = m->torch.api == LW_API_TORCH_BLOCK;
	if (s->torch_block)
		lw_torch_block_born(&m->torch, size);
	if (s->totals.allocations == 0)
		s->first_birth_step = m->counts.steps;
	s->last_birth_step = m->counts.steps;
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
	if (lw_mem_kind_is_device(kind)) {
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
	m->counts.allocations++;
	m->counts.events++;
	return 0;
}

/* A free before the report point: how long it lived, and why it went. */
static void note_lifetime(struct lw_model *m, const struct lw_live *e)
{
	struct lw_site *s = &m->sites.items[e->site];
	uint64_t lifetime = m->counts.steps - e->birth_step;

	if (s->tail_step != m->counts.steps) {
		s->tail_step = m->counts.steps;
		s->tail_frees = s->tail_long_frees = 0;
	}
	s->frees++;
	s->tail_frees++;
	s->lifetime_total += lifetime;
	if (lifetime > s->lifetime_max)
		s->lifetime_max = lifetime;
	if (lifetime > LW_LINGER_STEPS) {
		s->long_frees++;
		s->tail_long_frees++;
	}
	if (m->in_gc) {
		s->gc_frees++;
		s->gc_freed_bytes += e->size;
		m->counts.gc_frees++;
	}
}

static int model_free(void *ctx, uint64_t addr)
{
	struct lw_model *m = ctx;
	struct lw_live *e = lw_addr_table_find(&m->live, addr);
	int rc;

	m->counts.frees++;
	m->counts.events++;
	if (!e) {
		/* cudaFree(NULL) is a legal no-op, not an unknown free. */
		if (addr != 0)
			m->counts.unknown_frees++;
		return 0;
	}
	if (!m->have_program_end)
		note_lifetime(m, e);
	rc = forget(m, e);
	lw_addr_table_remove(&m->live, e);
	return rc;
}

static int model_header(void *ctx, const struct lw_trace_header *header)
{
	struct lw_model *m = ctx;

	m->meta.header = *header;
	return 0;
}

/* Halves the step series: merges pairs of points, doubles the stride. */
static void merge_step_points(struct lw_model *m)
{
	size_t half = m->points.count / 2;

	for (size_t i = 0; i < half; i++) {
		struct lw_step_point *a = &m->points.items[2 * i];
		struct lw_step_point b = m->points.items[2 * i + 1];

		if (a->peak_bytes > b.peak_bytes)
			b.peak_bytes = a->peak_bytes;
		if (a->lingering_bytes > b.lingering_bytes)
			b.lingering_bytes = a->lingering_bytes;
		if (a->peak_reserved_bytes > b.peak_reserved_bytes)
			b.peak_reserved_bytes = a->peak_reserved_bytes;
		m->points.items[i] = b;
	}
	for (uint32_t j = 0; j < m->points.series_count; j++) {
		struct lw_site_series *se = &m->points.series[j];

		for (size_t i = 0; i < half; i++) {
			se->bytes[i] = se->bytes[2 * i + 1];
			se->counts[i] = se->counts[2 * i + 1];
		}
	}
	m->points.count = half;
	m->points.stride *= 2;
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

	if (m->points.series_count >= LW_SITE_SERIES_MAX) {
		s->series = LW_SERIES_UNTRACKED;
		return 0;
	}
	all = grow_array(m->points.series, &m->points.series_capacity,
			 (size_t)m->points.series_count + 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->points.series = all;
	se = &all[m->points.series_count];
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
	s->series = m->points.series_count++;
	return 0;
}

/* Records step point i: the run's and every changing site's live totals. */
static int add_step_point(struct lw_model *m)
{
	struct lw_step_point *p;
	size_t i;
	int rc;

	if (m->points.count == LW_STEP_POINTS_MAX)
		merge_step_points(m);
	if (m->counts.steps % m->points.stride != 0)
		return 0; /* the merge moved the next point further on */
	p = grow_array(m->points.items, &m->points.capacity,
		       m->points.count + 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	m->points.items = p;
	i = m->points.count;
	p = &m->points.items[i];
	p->step = m->counts.steps;
	p->live_bytes = m->counts.live_device_bytes;
	p->live_count = m->kinds[LW_MEM_DEVICE].live_count +
			m->kinds[LW_MEM_MANAGED].live_count;
	p->peak_bytes = m->points.peak;
	p->lingering_bytes = 0; /* settle_lingering() sets it later */
	p->phase_instance = 0;
	p->phase = UINT32_MAX;
	if (m->phases.depth && m->phases.depth <= LW_PHASE_DEPTH_MAX) {
		p->phase_instance = m->phases.open[m->phases.depth - 1].instance;
		p->phase = m->phases.open[m->phases.depth - 1].phase;
	}
	p->allocated_bytes = m->torch.allocated_bytes;
	p->reserved_bytes = m->torch.reserved_bytes;
	p->peak_reserved_bytes = m->torch.step_peak_reserved;
	m->torch.step_peak_reserved = m->torch.reserved_bytes;

	for (size_t d = 0; d < m->points.dirty_count; d++) {
		struct lw_site *s = &m->sites.items[m->points.dirty[d]];

		if (s->series == LW_NO_SERIES &&
		    (s->totals.live_bytes != s->step_bytes ||
		     s->totals.live_count != s->step_count) &&
		    (rc = start_site_series(m, s, i)) < 0)
			return rc;
		s->dirty = false;
		s->step_bytes = s->totals.live_bytes;
		s->step_count = s->totals.live_count;
	}
	m->points.dirty_count = 0;
	for (uint32_t site = 0; site < m->sites.count && m->points.series_count; site++) {
		const struct lw_site *s = &m->sites.items[site];
		struct lw_site_series *se;

		if (s->series >= LW_SERIES_UNTRACKED)
			continue;
		se = &m->points.series[s->series];
		if ((rc = series_reserve(se, i + 1)) < 0)
			return rc;
		se->bytes[i] = s->totals.live_bytes;
		se->counts[i] = saturate_count(s->totals.live_count);
	}
	m->points.count++;
	m->points.peak = m->counts.live_device_bytes;
	return 0;
}

/* Keeps the peak attribution of a step: the one at the highest peak. */
/* Keeps a step's peak attribution; sites are distinct (linger_add()). */
static int keep_lingering(struct lw_lingering *to, uint64_t step,
			  uint64_t peak, uint64_t bytes, const uint32_t *sites,
			  size_t count, const struct lw_model *m, unsigned slot)
{
	struct lw_site_share *items = NULL;

	if (count) {
		items = malloc(count * sizeof(*items));
		if (!items)
			return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		items[i].site = sites[i];
		items[i].bytes = m->sites.items[sites[i]].lingering[slot];
		items[i].count = 0;
	}
	free(to->sites.items);
	to->sites.items = items;
	to->sites.count = to->sites.capacity = count;
	to->step = step;
	to->peak_bytes = peak;
	to->bytes = bytes;
	return 0;
}

/*
 * Settles step p's peak attribution: nothing can linger at its peak any
 * more (what was born before p and is still live will have lived longer
 * than LW_LINGER_STEPS when it is freed).
 */
static int settle_lingering(struct lw_model *m, uint64_t p)
{
	unsigned slot = (unsigned)(p % LW_LINGER_STEPS);
	uint32_t *touched = m->peak.touched[slot];
	size_t n = m->peak.touched_count[slot];
	uint64_t peak = m->peak.open_peak[slot], bytes = m->peak.open_bytes[slot];
	int rc;

	if (!m->peak.have_worst || peak > m->peak.worst.peak_bytes) {
		rc = keep_lingering(&m->peak.worst, p, peak, bytes,
				    touched, n, m, slot);
		if (rc < 0)
			return rc;
		m->peak.have_worst = true;
	}
	if (bytes > m->peak.most.bytes &&
	    (rc = keep_lingering(&m->peak.most, p, peak, bytes, touched,
				 n, m, slot)) < 0)
		return rc;
	if (bytes) {
		/* The point that covers step p: the one taken at its end,
		 * or the later one it was merged into. */
		uint64_t i = (p + m->points.stride) / m->points.stride - 1;

		m->peak.lingering_steps++;
		if (i < m->points.count &&
		    bytes > m->points.items[i].lingering_bytes)
			m->points.items[i].lingering_bytes = bytes;
	}
	for (size_t i = 0; i < n; i++) {
		struct lw_site *s = &m->sites.items[touched[i]];
		uint64_t v = s->lingering[slot];

		s->lingering_steps++;
		s->lingering_total += v;
		if (v > s->lingering_max)
			s->lingering_max = v;
		s->lingering[slot] = 0;
	}
	m->peak.touched_count[slot] = 0;
	m->peak.open_bytes[slot] = 0;
	m->peak.open_peak[slot] = 0;
	return 0;
}

/*
 * The current step ends: its peak is known, so the frees of older memory
 * after it say what lingered there; the oldest step still open to
 * lingering is settled; a step point is taken.
 */
static int end_step(struct lw_model *m)
{
	unsigned slot = (unsigned)(m->counts.steps % LW_LINGER_STEPS);
	uint64_t now = m->counts.steps;
	int rc;

	m->peak.open_peak[slot] = m->peak.cur_bytes;
	for (size_t i = 0; i < m->peak.late_free_count; i++) {
		const struct lw_late_free *f = &m->peak.late_frees[i];

		/* Live at the peaks of the steps between birth and now. */
		for (uint64_t p = f->birth_step + 1; p < now; p++) {
			rc = linger_add(m, (unsigned)(p % LW_LINGER_STEPS),
					f->site, f->size);
			if (rc < 0)
				return rc;
		}
		if (f->event <= m->peak.cur_event)
			continue; /* freed before this step's peak */
		if ((rc = linger_add(m, slot, f->site, f->size)) < 0)
			return rc;
	}
	m->peak.late_free_count = 0;
	if (now + 1 >= LW_LINGER_STEPS &&
	    (rc = settle_lingering(m, now + 1 - LW_LINGER_STEPS)) < 0)
		return rc;
	m->peak.cur_bytes = m->counts.live_device_bytes;
	m->peak.cur_event = m->counts.events;

	m->counts.steps++;
	if (m->counts.steps % m->points.stride != 0)
		return 0;
	return add_step_point(m);
}

static int model_step(void *ctx)
{
	struct lw_model *m = ctx;

	m->counts.events++;
	return end_step(m);
}

int lw_model_finish(struct lw_model *m)
{
	uint64_t from = m->counts.steps >= LW_LINGER_STEPS - 1
				? m->counts.steps - (LW_LINGER_STEPS - 1) : 0;
	int rc;

	/* The steps that ended (the last one, cut short by the end of the
	 * trace, did not) and are not settled yet. */
	for (uint64_t p = from; p < m->counts.steps; p++) {
		if ((rc = settle_lingering(m, p)) < 0)
			return rc;
	}
	for (size_t i = 0; i < m->phases.count; i++)
		lw_shares_sort(&m->phases.items[i].sites);
	return 0;
}

bool lw_model_site_at_point(const struct lw_model *m, uint32_t site, size_t i,
			    struct lw_live_count *out)
{
	const struct lw_site *s = &m->sites.items[site];

	out->live_bytes = s->step_bytes;
	out->live_count = s->step_count;
	if (s->series == LW_SERIES_UNTRACKED)
		return false;
	if (s->series != LW_NO_SERIES) {
		out->live_bytes = m->points.series[s->series].bytes[i];
		out->live_count = m->points.series[s->series].counts[i];
	}
	return true;
}

static struct lw_string *find_string(const struct lw_model *m, uint64_t id)
{
	/* Ids are normally dense from 1: try the direct index first. */
	if (id - 1 < m->meta.string_count && m->meta.strings[id - 1].id == id)
		return &m->meta.strings[id - 1];
	for (size_t i = m->meta.string_count; i-- > 0;) {
		if (m->meta.strings[i].id == id)
			return &m->meta.strings[i];
	}
	return NULL;
}

/* The named phase for a STRING id, added at its first use. */
static int named_phase(struct lw_model *m, uint64_t string_id, uint32_t *out)
{
	struct lw_phase *all;

	for (size_t i = 0; i < m->phases.count; i++) {
		if (m->phases.items[i].string_id == string_id) {
			*out = (uint32_t)i;
			return 0;
		}
	}
	if (m->phases.count >= UINT32_MAX - 1)
		return -EOVERFLOW;
	all = grow_array(m->phases.items, &m->phases.capacity, m->phases.count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->phases.items = all;
	memset(&all[m->phases.count], 0, sizeof(*all));
	all[m->phases.count].string_id = string_id;
	*out = (uint32_t)m->phases.count++;
	return 0;
}

static int model_phase_begin(void *ctx, uint64_t string_id)
{
	struct lw_model *m = ctx;
	struct lw_string *s = find_string(m, string_id);
	struct lw_open_phase *op;
	uint32_t phase = UINT32_MAX;
	int rc;

	if (s) {
		s->phase_begins++;
		if ((rc = named_phase(m, string_id, &phase)) < 0)
			return rc;
	} else {
		m->phases.unnamed_begins++;
	}
	m->phases.begins++;
	m->phases.depth++;
	m->counts.events++;
	if (m->phases.depth > LW_PHASE_DEPTH_MAX)
		return 0; /* too deep: its memory counts for the phase outside */
	op = &m->phases.open[m->phases.depth - 1];
	op->phase = phase;
	/* Instance ids start at 1 (0 marks memory born outside phases) and
	 * wrap after 2^32 - 1 phases: an ended one is then looked up in
	 * vain among the open ones, as before. */
	if (++m->phases.instances == 0)
		m->phases.instances = 1;
	op->instance = m->phases.instances;
	op->live.count = 0;
	return 0;
}

/* An open phase ends: what was born in it and is still live survived it. */
static int end_phase(struct lw_model *m, struct lw_open_phase *op)
{
	struct lw_phase *ph;
	int rc;

	op->instance = 0;
	if (op->phase == UINT32_MAX)
		return 0;
	ph = &m->phases.items[op->phase];
	ph->instances++;
	for (size_t i = 0; i < op->live.count; i++) {
		const struct lw_site_share *sh = &op->live.items[i];

		if (sh->count == 0)
			continue;
		ph->surviving_bytes += sh->bytes;
		ph->surviving_count += sh->count;
		if ((rc = shares_add(&ph->sites, sh->site, sh->bytes, sh->count,
				     NULL)) < 0)
			return rc;
	}
	return 0;
}

static int model_phase_end(void *ctx)
{
	struct lw_model *m = ctx;

	m->counts.events++;
	if (m->phases.depth == 0) {
		m->phases.unbalanced_ends++;
		return 0;
	}
	m->phases.depth--;
	if (m->phases.depth >= LW_PHASE_DEPTH_MAX)
		return 0;
	return end_phase(m, &m->phases.open[m->phases.depth]);
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
	stacks = grow_array(m->stacks.items, &m->stacks.capacity, (size_t)id + 1,
			    sizeof(*stacks));
	if (!stacks)
		return -ENOMEM;
	m->stacks.items = stacks;
	if (count) {
		all = grow_array(m->stacks.frames, &m->stacks.frame_capacity,
				 m->stacks.frame_count + count, sizeof(*all));
		if (!all)
			return -ENOMEM;
		m->stacks.frames = all;
		memcpy(all + m->stacks.frame_count, frames, count * sizeof(*all));
	}
	stacks[id].first_frame = m->stacks.frame_count;
	stacks[id].frame_count = count;
	stacks[id].first_site = LW_NO_SITE;
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

	all = grow_array(m->meta.modules, &m->meta.module_capacity, m->meta.module_count + 1,
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

	all = grow_array(m->meta.strings, &m->meta.string_capacity, m->meta.string_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->meta.strings = all;
	all[m->meta.string_count].id = id;
	all[m->meta.string_count].text = text;
	all[m->meta.string_count].phase_begins = 0;
	m->meta.string_count++;
	return 0;
}

static int model_info(void *ctx, struct lw_bytes key, struct lw_bytes value)
{
	struct lw_model *m = ctx;
	struct lw_info *all;

	all = grow_array(m->meta.infos, &m->meta.info_capacity, m->meta.info_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->meta.infos = all;
	all[m->meta.info_count].key = key;
	all[m->meta.info_count].value = value;
	m->meta.info_count++;
	return 0;
}

static int model_warning(void *ctx, struct lw_bytes text)
{
	struct lw_model *m = ctx;
	struct lw_bytes *all;

	all = grow_array(m->meta.warnings, &m->meta.warning_capacity,
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
	e = lw_addr_table_find(&m->live, address);
	/* Written while the allocation was live; anything else is a trace
	 * that was cut and joined, and says nothing. */
	if (!e)
		return 0;
	/* Room for 4, then doubled each time it is full. */
	if (m->holders.count == 0 ||
	    (m->holders.count >= 4 &&
	     (m->holders.count & (m->holders.count - 1)) == 0)) {
		grown = realloc(m->holders.items, (m->holders.count ? 2 * m->holders.count
							     : 4) *
					    sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		m->holders.items = grown;
	}
	m->holders.items[m->holders.count++] = (struct lw_holder){
		e->site, path, root, objects, graph, flags,
		m->holders.searches,
	};
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

	all = grow_array(m->stacks.pycodes, &m->stacks.pycode_capacity, m->stacks.pycode_count + 1,
			 sizeof(*all));
	if (!all)
		return -ENOMEM;
	m->stacks.pycodes = all;
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
		all_frames = grow_array(m->stacks.pyframes, &m->stacks.pyframe_capacity,
					m->stacks.pyframe_count + count,
					sizeof(*all_frames));
		if (!all_frames)
			return -ENOMEM;
		m->stacks.pyframes = all_frames;
		memcpy(all_frames + m->stacks.pyframe_count, frames,
		       count * sizeof(*all_frames));
	}
	if (eval_count) {
		all_evals = grow_array(m->stacks.evals, &m->stacks.eval_capacity,
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
	m->program_end_sites = sites;
	m->program_end_site_count = m->sites.count;
	m->program_end_steps = m->counts.steps;
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
	.alloc_failed = model_alloc_failed,
	.pycode = model_pycode,
	.pystack = model_pystack,
	.mark = model_mark,
	.context = lw_torch_context,
	.segment = lw_torch_segment,
	.segment_free = lw_torch_segment_free,
	.oom = lw_torch_oom,
	.holder = model_holder,
};

int lw_model_init(struct lw_model *m)
{
	memset(m, 0, sizeof(*m));
	m->stacks.items = calloc(16, sizeof(*m->stacks.items));
	if (!m->stacks.items)
		return -ENOMEM;
	m->stacks.capacity = 16;
	m->stacks.items[0].first_site = LW_NO_SITE;
	m->stacks.count = 1;
	m->points.stride = 1;
	lw_addr_table_init(&m->live, &live_kind);
	return 0;
}

void lw_model_fini(struct lw_model *m)
{
	lw_addr_table_clear(&m->live);
	free(m->sites.items);
	free(m->stacks.items);
	free(m->stacks.frames);
	free(m->meta.strings);
	free(m->meta.infos);
	free(m->meta.warnings);
	free(m->meta.modules);
	free(m->stacks.pycodes);
	free(m->holders.items);
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
		shares_fini(&m->phases.items[i].sites);
	free(m->phases.items);
	for (size_t i = 0; i < LW_PHASE_DEPTH_MAX; i++)
		shares_fini(&m->phases.open[i].live);
	free(m->peak.late_frees);
	for (size_t i = 0; i < LW_LINGER_STEPS; i++)
		free(m->peak.touched[i]);
	shares_fini(&m->peak.worst.sites);
	shares_fini(&m->peak.most.sites);
	memset(m, 0, sizeof(*m));
}

const struct lw_phase *lw_model_phase(const struct lw_model *m,
				      uint64_t string_id)
{
	for (size_t i = 0; i < m->phases.count; i++) {
		if (m->phases.items[i].string_id == string_id)
			return &m->phases.items[i];
	}
	return NULL;
}

static int compare_lingering(const void *a, const void *b, void *model)
{
	const struct lw_model *m = model;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t mx = m->sites.items[x].lingering_max;
	uint64_t my = m->sites.items[y].lingering_max;

	if (mx != my)
		return mx < my ? 1 : -1;
	return (x > y) - (x < y);
}

int lw_model_lingering_sites(const struct lw_model *m, uint32_t **out,
			     size_t *count)
{
	uint32_t *sites;
	size_t n = 0;

	*out = NULL;
	*count = 0;
	for (uint32_t i = 0; i < m->sites.count; i++)
		n += m->sites.items[i].lingering_steps > 0 &&
		     !lw_model_site_suppressed(m, i);
	if (!n)
		return 0;
	sites = malloc(n * sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	n = 0;
	for (uint32_t i = 0; i < m->sites.count; i++)
		if (m->sites.items[i].lingering_steps &&
		    !lw_model_site_suppressed(m, i))
			sites[n++] = i;
	qsort_r(sites, n, sizeof(*sites), compare_lingering, (void *)m);
	*out = sites;
	*count = n;
	return 0;
}

const struct lw_string *lw_model_string(const struct lw_model *m, uint64_t id)
{
	return find_string(m, id);
}
