/* SPDX-License-Identifier: MIT */
#include "locations.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lw-format.h"
#include "lw-hash.h"

/* Memory kinds, each summed apart: pinned host memory and device memory
 * made at one line are two entries. */
#define KINDS (LW_MEM_KIND_MAX + 1)

int lw_locations_init(struct lw_locations *l, const struct lw_report *r)
{
	uint32_t sites = lw_model_site_count(r->model);

	memset(l, 0, sizeof(*l));
	l->report = r;
	if (sites == 0)
		return 0;
	l->of_site = malloc(sites * sizeof(*l->of_site));
	if (!l->of_site)
		return -ENOMEM;
	memset(l->of_site, 0xff, sites * sizeof(*l->of_site));
	return 0;
}

void lw_locations_fini(struct lw_locations *l)
{
	for (size_t i = 0; i < l->count; i++)
		free(l->items[i].label);
	free(l->items);
	free(l->of_site);
	free(l->table);
	memset(l, 0, sizeof(*l));
}

static int table_grow(struct lw_locations *l)
{
	size_t size = l->table_size ? l->table_size * 2 : 64;
	uint32_t *table = calloc(size, sizeof(*table));

	if (!table)
		return -ENOMEM;
	for (size_t i = 0; i < l->count; i++) {
		const struct lw_location_entry *e = &l->items[i];
		size_t slot;

		if (!e->label)
			continue;
		slot = lw_fnv1a(LW_FNV1A_BASIS, e->label, e->label_len) & (size - 1);
		while (table[slot])
			slot = (slot + 1) & (size - 1);
		table[slot] = (uint32_t)i + 1;
	}
	free(l->table);
	l->table = table;
	l->table_size = size;
	return 0;
}

/* The entry for label (owned by the caller until added), made if new. */
static int find_or_add(struct lw_locations *l, char *label, size_t len,
		       const struct lw_named_frame *frame, uint32_t *out)
{
	size_t slot = 0;
	int rc;

	if (label) {
		if ((l->count + 1) * 2 > l->table_size &&
		    (rc = table_grow(l)) < 0)
			return rc;
		slot = lw_fnv1a(LW_FNV1A_BASIS, label, len) & (l->table_size - 1);
		for (; l->table[slot]; slot = (slot + 1) & (l->table_size - 1)) {
			const struct lw_location_entry *e =
				&l->items[l->table[slot] - 1];

			if (e->label_len == len &&
			    memcmp(e->label, label, len) == 0) {
				*out = l->table[slot] - 1;
				free(label);
				return 0;
			}
		}
	}
	if (l->count == l->capacity) {
		size_t next = l->capacity ? l->capacity * 2 : 16;
		struct lw_location_entry *items =
			realloc(l->items, next * sizeof(*items));

		if (!items) {
			free(label);
			return -ENOMEM;
		}
		l->items = items;
		l->capacity = next;
	}
	l->items[l->count] = (struct lw_location_entry){
		.label = label, .label_len = len,
	};
	if (label) {
		l->items[l->count].frame = *frame;
		l->table[slot] = (uint32_t)l->count + 1;
	}
	*out = (uint32_t)l->count++;
	return 0;
}

int lw_location_of(struct lw_locations *l, uint32_t site, uint32_t *out)
{
	struct lw_named_frame frame;
	char *label = NULL;
	size_t len = 0;
	bool found;
	int rc;

	if (l->of_site[site] != LW_NO_LOCATION) {
		*out = l->of_site[site];
		return 0;
	}
	if ((rc = lw_site_location(l->report, site, &frame, &found)) < 0)
		return rc;
	/* A site without a stack is a location of its own. */
	if (found && !(label = lw_frame_label_string(&frame, &len)))
		return -ENOMEM;
	if ((rc = find_or_add(l, label, len, &frame, out)) < 0)
		return rc;
	l->of_site[site] = *out;
	return 0;
}

int lw_locations_sum(struct lw_locations *l, const uint32_t *sites,
		     const double *rate, const double *count_rate,
		     const uint64_t *bytes, const uint64_t *count, size_t n,
		     struct lw_location_sum **out, size_t *out_count)
{
	struct lw_location_sum *sums = NULL;
	uint32_t *locs = NULL, *slot = NULL;
	size_t used = 0;
	int rc = -ENOMEM;

	*out = NULL;
	*out_count = 0;
	if (n == 0)
		return 0;
	if (!(locs = malloc(n * sizeof(*locs))))
		goto out;
	for (size_t i = 0; i < n; i++)
		if ((rc = lw_location_of(l, sites[i], &locs[i])) < 0)
			goto out;
	rc = -ENOMEM;
	sums = calloc(n, sizeof(*sums));
	slot = malloc(l->count * KINDS * sizeof(*slot));
	if (!sums || !slot)
		goto out;
	memset(slot, 0xff, l->count * KINDS * sizeof(*slot));
	for (size_t i = 0; i < n; i++) {
		unsigned kind = lw_model_site(l->report->model, sites[i])->kind;
		size_t key = (size_t)locs[i] * KINDS +
			     (kind < KINDS ? kind : 0);
		struct lw_location_sum *s;

		if (slot[key] == UINT32_MAX) {
			slot[key] = (uint32_t)used;
			sums[used].location = locs[i];
			sums[used++].lead = sites[i];
		}
		s = &sums[slot[key]];
		s->sites++;
		if (rate)
			s->rate += rate[i];
		if (count_rate)
			s->count_rate += count_rate[i];
		if (bytes)
			s->bytes += bytes[i];
		if (count)
			s->count += count[i];
	}
	*out = sums;
	*out_count = used;
	sums = NULL;
	rc = 0;
out:
	free(sums);
	free(slot);
	free(locs);
	return rc;
}

int lw_location_sum_by_rate(const void *a, const void *b)
{
	const struct lw_location_sum *x = a, *y = b;

	if (x->rate != y->rate)
		return x->rate > y->rate ? -1 : 1;
	return (x->location > y->location) - (x->location < y->location);
}

int lw_location_sum_by_bytes(const void *a, const void *b)
{
	const struct lw_location_sum *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return (x->location > y->location) - (x->location < y->location);
}

int lw_location_series(struct lw_locations *l, uint32_t lead, uint64_t *points,
		       uint32_t *sites)
{
	const struct lw_model *m = l->report->model;
	uint32_t where;
	int rc;

	*sites = 0;
	memset(points, 0, lw_model_point_count(m) * sizeof(*points));
	if ((rc = lw_location_of(l, lead, &where)) < 0)
		return rc;
	for (uint32_t s = 0; s < lw_model_site_count(m); s++) {
		uint32_t loc;

		if (lw_model_site(m, s)->kind != lw_model_site(m, lead)->kind ||
		    lw_model_site(m, s)->series == LW_NO_SERIES ||
		    lw_model_site(m, s)->series == LW_SERIES_UNTRACKED)
			continue;
		if ((rc = lw_location_of(l, s, &loc)) < 0)
			return rc;
		if (loc != where)
			continue;
		(*sites)++;
		for (size_t i = 0; i < lw_model_point_count(m); i++) {
			struct lw_live_count c;

			if (lw_model_site_at_point(m, s, i, &c))
				points[i] += c.live_bytes;
		}
	}
	return 0;
}
