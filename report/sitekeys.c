/* SPDX-License-Identifier: MIT */
#include "sitekeys.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "locations.h"

static void put_raw(FILE *out, const void *data, size_t len)
{
	fwrite(data, 1, len, out);
}

/* Device or managed memory: what a diff and the merged view compare. */
static bool is_device_site(const struct lw_model *m, uint32_t site)
{
	return lw_mem_kind_is_device(m->sites.items[site].kind);
}

static char *make_key(const struct lw_model *m, uint32_t site,
		      const struct lw_named_frame *frames, size_t n,
		      bool lines)
{
	char *text = NULL;
	size_t len = 0;
	FILE *s = open_memstream(&text, &len);

	if (!s)
		return NULL;
	fputs(lw_kind_name(m->sites.items[site].kind), s);
	for (size_t i = 0; i < n; i++) {
		const struct lw_named_frame *f = &frames[i];

		putc('\n', s);
		if (!f->function && !f->file) {
			lw_put_frame_label(s, f, put_raw);
			continue;
		}
		if (f->function)
			fwrite(f->function, 1, f->function_len, s);
		putc('|', s);
		if (f->file)
			fwrite(f->file, 1, f->file_len, s);
		if (lines && f->line > 0)
			fprintf(s, "|%" PRId64, f->line);
	}
	if (fclose(s) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* One key: a location of one kind, its sites' numbers summed. */
static int add_key(const struct lw_report *r, struct lw_site_keys *keys,
		   const struct lw_location_sum *sum, const uint32_t *sites,
		   const uint32_t *where, size_t count)
{
	const struct lw_model *m = r->model;
	const struct lw_location_entry *e = &r->locations->items[sum->location];
	struct lw_site_key *k = &keys->items[keys->count++];
	size_t n = e->label ? 1 : 0;

	memset(k, 0, sizeof(*k));
	k->site = sum->lead;
	k->live_bytes = sum->bytes;
	k->live_count = sum->count;
	k->growth = keys->findings.growth.sites[sum->lead];
	k->growth.bytes_per_step = sum->rate;
	k->growth.count_per_step = sum->count_rate;
	for (size_t i = 0; i < count; i++) {
		const struct lw_site_growth *g =
			&keys->findings.growth.sites[sites[i]];

		if (!lw_location_sum_holds(m, sum, where[i], sites[i]))
			continue;
		if (g->verdict == LW_VERDICT_GROWING)
			k->growth.verdict = LW_VERDICT_GROWING;
		k->held_bytes += g->held_bytes;
		k->leaked |= lw_site_leaked(r, sites[i]);
	}
	k->exact = make_key(m, sum->lead, &e->frame, n, true);
	k->loose = make_key(m, sum->lead, &e->frame, n, false);
	k->label = e->label ? strndup(e->label, e->label_len)
			    : strdup("(no stack captured)");
	return k->exact && k->loose && k->label ? 0 : -ENOMEM;
}

int lw_site_keys_build(const struct lw_report *r, struct lw_site_keys *keys)
{
	const struct lw_model *m = r->model;
	struct lw_location_sum *sums = NULL;
	uint32_t *sites = NULL, *chosen = NULL, *where = NULL;
	uint64_t *bytes = NULL, *counts = NULL;
	double *rate = NULL, *count_rate = NULL;
	size_t count = 0, n = 0, nsums = 0;
	int rc;

	memset(keys, 0, sizeof(*keys));
	rc = lw_findings_collect(r, &keys->findings);
	if (rc == 0)
		rc = lw_report_sites(r, &sites, &count);
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	chosen = calloc(count + 1, sizeof(*chosen));
	where = calloc(count + 1, sizeof(*where));
	bytes = calloc(count + 1, sizeof(*bytes));
	counts = calloc(count + 1, sizeof(*counts));
	rate = calloc(count + 1, sizeof(*rate));
	count_rate = calloc(count + 1, sizeof(*count_rate));
	if (!chosen || !where || !bytes || !counts || !rate || !count_rate)
		goto out;
	/* The report's sites: live at the report point, or leaked (held
	 * at step ends, even when let go before the report point). */
	for (size_t i = 0; i < count; i++) {
		const struct lw_site_growth *g =
			&keys->findings.growth.sites[sites[i]];
		struct lw_totals t = lw_model_site_totals(m, sites[i]);

		if (!is_device_site(m, sites[i]) ||
		    (t.live_bytes == 0 && g->verdict != LW_VERDICT_GROWING &&
		     !lw_site_leaked(r, sites[i])))
			continue;
		chosen[n] = sites[i];
		bytes[n] = t.live_bytes;
		counts[n] = t.live_count;
		rate[n] = g->bytes_per_step;
		count_rate[n++] = g->count_per_step;
	}
	rc = lw_locations_sum(r->locations, chosen, rate, count_rate, bytes,
			      counts, n, &sums, &nsums);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = lw_location_of(r->locations, chosen[i], &where[i]);
	if (rc < 0)
		goto out;
	if (nsums > 1)
		qsort(sums, nsums, sizeof(*sums), lw_location_sum_by_bytes);
	keys->items = calloc(nsums ? nsums : 1, sizeof(*keys->items));
	if (!keys->items) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; rc == 0 && i < nsums; i++)
		rc = add_key(r, keys, &sums[i], chosen, where, n);
out:
	free(sums);
	free(sites);
	free(chosen);
	free(where);
	free(bytes);
	free(counts);
	free(rate);
	free(count_rate);
	return rc;
}

void lw_site_keys_fini(struct lw_site_keys *keys)
{
	for (size_t i = 0; i < keys->count; i++) {
		free(keys->items[i].exact);
		free(keys->items[i].loose);
		free(keys->items[i].label);
	}
	free(keys->items);
	lw_findings_fini(&keys->findings);
	memset(keys, 0, sizeof(*keys));
}

struct lw_site_key *lw_site_keys_match(struct lw_site_keys *keys,
				       const struct lw_site_key *key)
{
	for (size_t i = 0; i < keys->count; i++)
		if (!keys->items[i].matched &&
		    strcmp(keys->items[i].exact, key->exact) == 0)
			return &keys->items[i];
	for (size_t i = 0; i < keys->count; i++)
		if (!keys->items[i].matched &&
		    strcmp(keys->items[i].loose, key->loose) == 0)
			return &keys->items[i];
	return NULL;
}
