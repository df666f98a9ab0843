/* SPDX-License-Identifier: MIT */
/*
 * Questions a report asks of a model: totals at the report point, sites in
 * order, stacks with their Python frames merged in, names.
 */
#include "model.h"
#include "model-parts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct lw_live_count site_live(const struct lw_model *m, uint32_t site)
{
	struct lw_live_count c = { 0, 0 };

	if (!m->have_program_end) {
		c.live_bytes = m->sites.items[site].totals.live_bytes;
		c.live_count = m->sites.items[site].totals.live_count;
	} else if (site < m->program_end_site_count) {
		c = m->program_end_sites[site];
	}
	return c;
}

struct lw_live_count lw_model_site_live_at_end(const struct lw_model *m,
					       uint32_t site)
{
	struct lw_live_count c = {
		m->sites.items[site].totals.live_bytes,
		m->sites.items[site].totals.live_count,
	};

	return c;
}

bool lw_model_site_live_at_program_end(const struct lw_model *m,
				       uint32_t site,
				       struct lw_live_count *out)
{
	out->live_bytes = out->live_count = 0;
	if (!m->have_program_end)
		return false;
	*out = site_live(m, site);
	return true;
}

struct lw_totals lw_model_site_totals(const struct lw_model *m, uint32_t site)
{
	struct lw_totals t = m->sites.items[site].totals;
	struct lw_live_count c = site_live(m, site);

	t.live_bytes = c.live_bytes;
	t.live_count = c.live_count;
	return t;
}

struct lw_totals lw_model_kind_totals(const struct lw_model *m, unsigned kind)
{
	struct lw_totals t = m->kinds[kind];

	if (m->have_program_end) {
		t.live_bytes = m->program_end_kinds[kind].live_bytes;
		t.live_count = m->program_end_kinds[kind].live_count;
	}
	return t;
}

uint64_t lw_model_device_live_bytes(const struct lw_model *m)
{
	return lw_model_kind_totals(m, LW_MEM_DEVICE).live_bytes +
	       lw_model_kind_totals(m, LW_MEM_MANAGED).live_bytes;
}

uint64_t lw_model_device_live_count(const struct lw_model *m)
{
	return lw_model_kind_totals(m, LW_MEM_DEVICE).live_count +
	       lw_model_kind_totals(m, LW_MEM_MANAGED).live_count;
}

uint64_t lw_model_device_live_bytes_at_end(const struct lw_model *m)
{
	return m->kinds[LW_MEM_DEVICE].live_bytes +
	       m->kinds[LW_MEM_MANAGED].live_bytes;
}

uint64_t lw_model_device_live_count_at_end(const struct lw_model *m)
{
	return m->kinds[LW_MEM_DEVICE].live_count +
	       m->kinds[LW_MEM_MANAGED].live_count;
}

uint64_t lw_model_dropped(const struct lw_model *m)
{
	/* END carries the total; DROPPED records the increments. */
	return m->meta.end_dropped > m->meta.dropped ? m->meta.end_dropped : m->meta.dropped;
}

const struct lw_bytes *lw_model_info_bytes(const struct lw_model *m,
					   struct lw_bytes key)
{
	for (size_t i = m->meta.info_count; i-- > 0;) {
		const struct lw_bytes *k = &m->meta.infos[i].key;

		if (k->len == key.len && memcmp(k->data, key.data, key.len) == 0)
			return &m->meta.infos[i].value;
	}
	return NULL;
}

const struct lw_bytes *lw_model_info(const struct lw_model *m, const char *key)
{
	struct lw_bytes k = { (const uint8_t *)key, strlen(key) };
	int known = lw_model_known_info(k.data, k.len);

	/* The keys the report asks for, in constant time: some are asked
	 * for once per site, and a trace may hold any number of INFO
	 * records. */
	if (known >= 0) {
		size_t i = m->meta.known_infos[known];

		return i ? &m->meta.infos[i - 1].value : NULL;
	}
	return lw_model_info_bytes(m, k);
}

const char *lw_model_step_source(const struct lw_model *m)
{
	static const char *const known[] = { "api", "optimizer", "loop",
					     "line" };
	const struct lw_bytes *v = lw_model_info(m, "step_source");

	if (m->counts.steps == 0)
		return "none";
	if (m->points.inferred)
		return "inferred";
	for (size_t i = 0; v && i < sizeof(known) / sizeof(known[0]); i++) {
		if (v->len == strlen(known[i]) &&
		    memcmp(v->data, known[i], v->len) == 0)
			return known[i];
	}
	/* STEP records from a writer that did not say why: the API's. */
	return "api";
}

/* Copies [p, end) into out, cut to size, NUL-terminated. */
static void copy_part(const uint8_t *p, const uint8_t *end, char *out,
		      size_t size)
{
	size_t n = (size_t)(end - p);

	if (!size)
		return;
	if (n >= size)
		n = size - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

bool lw_model_step_loop(const struct lw_model *m, char *file,
			size_t file_size, long *line, char *function,
			size_t function_size)
{
	const char *source = lw_model_step_source(m);
	const struct lw_bytes *v = lw_model_info(m, "step_loop");
	const uint8_t *tab1, *tab2, *end;
	long n = 0;

	if (!v || (strcmp(source, "loop") != 0 && strcmp(source, "line") != 0))
		return false;
	end = v->data + v->len;
	tab1 = memchr(v->data, '\t', v->len);
	if (!tab1)
		return false;
	tab2 = memchr(tab1 + 1, '\t', (size_t)(end - tab1 - 1));
	if (!tab2 || tab2 == tab1 + 1)
		return false;
	for (const uint8_t *p = tab1 + 1; p < tab2; p++) {
		if (*p < '0' || *p > '9' || n > 100000000)
			return false;
		n = n * 10 + (*p - '0');
	}
	copy_part(v->data, tab1, file, file_size);
	copy_part(tab2 + 1, end, function, function_size);
	*line = n;
	return true;
}

const uint64_t *lw_model_frames(const struct lw_model *m, uint64_t stack_id,
				uint32_t *count)
{
	const struct lw_stack *st;

	if (stack_id == 0 || stack_id >= m->stacks.count) {
		*count = 0;
		return NULL;
	}
	st = &m->stacks.items[stack_id];
	*count = st->frame_count;
	return st->frame_count ? m->stacks.frames + st->first_frame : NULL;
}

bool lw_model_site_native_thread(const struct lw_model *m, uint32_t site)
{
	const struct lw_stack *st = &m->stacks.items[m->sites.items[site].stack_id];

	/* Stack 0 has no frames: nothing is known of it. */
	return st->frame_count > 0 && st->pyframe_count == 0 &&
	       lw_model_info(m, "python") != NULL;
}

void lw_model_pyframe_names(const struct lw_model *m,
			    const struct lw_trace_pyframe *frame,
			    struct lw_bytes *function, struct lw_bytes *file)
{
	const struct lw_pycode *code = lw_model_find_pycode(m, frame->code_id);
	const struct lw_string *s;

	function->data = file->data = NULL;
	function->len = file->len = 0;
	if (!code)
		return;
	if ((s = lw_model_string(m, code->name_string)))
		*function = s->text;
	if ((s = lw_model_string(m, code->file_string)))
		*file = s->text;
}

int lw_model_stack(const struct lw_model *m, uint64_t stack_id,
		   struct lw_frame **out, size_t *count)
{
	const struct lw_stack *st;
	const struct lw_trace_pyframe *py;
	const uint32_t *evals;
	struct lw_frame *frames;
	uint32_t entries = 0;
	size_t n = 0, p = 0, e = 0;
	bool merge;

	*out = NULL;
	*count = 0;
	if (stack_id == 0 || stack_id >= m->stacks.count)
		return 0;
	st = &m->stacks.items[stack_id];
	if (st->frame_count + st->pyframe_count == 0)
		return 0;
	frames = calloc(st->frame_count + st->pyframe_count, sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	py = st->pyframe_count ? m->stacks.pyframes + st->first_pyframe : NULL;
	evals = st->eval_count ? m->stacks.evals + st->first_eval : NULL;
	for (uint32_t i = 0; i < st->pyframe_count; i++)
		entries += py[i].entry;
	/* One activation per evaluation frame, the outermost Python frame
	 * closing the last one; otherwise they cannot be lined up. */
	merge = st->eval_count && entries == st->eval_count &&
		py[st->pyframe_count - 1].entry &&
		evals[st->eval_count - 1] < st->frame_count;
	if (!merge) {
		for (uint32_t i = 0; i < st->pyframe_count; i++) {
			frames[n].python = true;
			frames[n++].py = &py[i];
		}
	}
	for (uint32_t i = 0; i < st->frame_count; i++) {
		if (merge && e < st->eval_count && evals[e] == i) {
			/* This activation's frames, up to its entry frame. */
			do {
				frames[n].python = true;
				frames[n++].py = &py[p];
			} while (!py[p++].entry);
			e++;
			continue;
		}
		frames[n++].address = m->stacks.frames[st->first_frame + i];
	}
	*out = frames;
	*count = n;
	return 0;
}

struct site_key {
	struct lw_live_count at_report, at_end;
	uint64_t stack_id;
	uint32_t index;
	uint8_t kind;
};

/* Larger first. */
static int compare_down(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int compare_sites(const void *pa, const void *pb)
{
	const struct site_key *a = pa, *b = pb;
	const struct lw_live_count *ra = &a->at_report, *rb = &b->at_report;
	const struct lw_live_count *ea = &a->at_end, *eb = &b->at_end;
	int c;

	if ((c = compare_down(ra->live_bytes, rb->live_bytes)) ||
	    (c = compare_down(ea->live_bytes, eb->live_bytes)) ||
	    (c = compare_down(ra->live_count, rb->live_count)) ||
	    (c = compare_down(ea->live_count, eb->live_count)))
		return c;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	return (int)a->kind - (int)b->kind;
}

int lw_model_live_sites(const struct lw_model *m, uint32_t **out,
			size_t *count)
{
	struct site_key *keys;
	uint32_t *indices;
	size_t n = 0;

	*out = NULL;
	*count = 0;
	for (uint32_t i = 0; i < m->sites.count; i++)
		n += (site_live(m, i).live_count > 0 ||
		      m->sites.items[i].totals.live_count > 0) &&
		     !lw_model_site_suppressed(m, i);
	if (n == 0)
		return 0;
	keys = calloc(n, sizeof(*keys));
	indices = calloc(n, sizeof(*indices));
	if (!keys || !indices) {
		free(keys);
		free(indices);
		return -ENOMEM;
	}
	n = 0;
	for (uint32_t i = 0; i < m->sites.count; i++) {
		struct lw_live_count c = site_live(m, i);
		struct lw_live_count end = lw_model_site_live_at_end(m, i);

		if ((c.live_count == 0 && end.live_count == 0) ||
		    lw_model_site_suppressed(m, i))
			continue;
		keys[n].at_report = c;
		keys[n].at_end = end;
		keys[n].stack_id = m->sites.items[i].stack_id;
		keys[n].kind = m->sites.items[i].kind;
		keys[n].index = i;
		n++;
	}
	qsort(keys, n, sizeof(*keys), compare_sites);
	for (size_t i = 0; i < n; i++)
		indices[i] = keys[i].index;
	free(keys);
	*out = indices;
	*count = n;
	return 0;
}

int lw_select_sites(uint32_t site_count,
		    bool (*keep)(const void *ctx, uint32_t site),
		    int (*order)(const void *a, const void *b, void *ctx),
		    const void *ctx, uint32_t **out, size_t *count)
{
	uint32_t *sites;
	size_t n = 0;

	*out = NULL;
	*count = 0;
	for (uint32_t i = 0; i < site_count; i++)
		n += keep(ctx, i);
	if (!n)
		return 0;
	sites = malloc(n * sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	n = 0;
	for (uint32_t i = 0; i < site_count; i++)
		if (keep(ctx, i))
			sites[n++] = i;
	qsort_r(sites, n, sizeof(*sites), order, (void *)ctx);
	*out = sites;
	*count = n;
	return 0;
}

const char *lw_kind_name(unsigned kind)
{
	switch (kind) {
	case LW_MEM_DEVICE:
		return "device";
	case LW_MEM_MANAGED:
		return "managed";
	case LW_MEM_PINNED_HOST:
		return "pinned_host";
	case LW_MEM_HOST_REGISTERED:
		return "host_registered";
	default:
		return "unknown";
	}
}
