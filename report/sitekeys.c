/* SPDX-License-Identifier: MIT */
#include "sitekeys.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void put_raw(FILE *out, const void *data, size_t len)
{
	fwrite(data, 1, len, out);
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
	fputs(lw_kind_name(m->sites[site].kind), s);
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

static int add_key(const struct lw_report *r, struct lw_site_keys *keys,
		   uint32_t site)
{
	const struct lw_model *m = r->model;
	struct lw_site_key *k = &keys->items[keys->count];
	struct lw_named_frame *frames, loc;
	struct lw_totals t = lw_model_site_totals(m, site);
	size_t n, len;
	bool found;
	int rc;

	memset(k, 0, sizeof(*k));
	k->site = site;
	k->live_bytes = t.live_bytes;
	k->live_count = t.live_count;
	k->growth = keys->findings.growth.sites[site];
	rc = lw_named_stack(r, m->sites[site].stack_id, false, &frames, &n);
	if (rc < 0)
		return rc;
	k->exact = make_key(m, site, frames, n, true);
	k->loose = make_key(m, site, frames, n, false);
	free(frames);
	rc = lw_site_location(r, site, &loc, &found);
	if (rc == 0)
		k->label = found ? lw_frame_label_string(&loc, &len)
				 : strdup("(no stack captured)");
	keys->count++;
	if (rc == 0 && (!k->exact || !k->loose || !k->label))
		rc = -ENOMEM;
	return rc;
}

int lw_site_keys_build(const struct lw_report *r, struct lw_site_keys *keys)
{
	const struct lw_model *m = r->model;
	uint32_t *sites = NULL;
	size_t count = 0;
	int rc;

	memset(keys, 0, sizeof(*keys));
	rc = lw_findings_collect(r, &keys->findings);
	if (rc == 0)
		rc = lw_model_live_sites(m, &sites, &count);
	if (rc < 0)
		goto out;
	/* Growing sites hold memory at the report point (they keep some
	 * every step), so the live sites cover them. */
	keys->items = calloc(count ? count : 1, sizeof(*keys->items));
	if (!keys->items) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; rc == 0 && i < count; i++) {
		unsigned kind = m->sites[sites[i]].kind;

		if (kind != LW_MEM_DEVICE && kind != LW_MEM_MANAGED)
			continue;
		if (lw_model_site_totals(m, sites[i]).live_bytes == 0 &&
		    keys->findings.growth.sites[sites[i]].verdict !=
			    LW_VERDICT_GROWING)
			continue;
		rc = add_key(r, keys, sites[i]);
	}
out:
	free(sites);
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
