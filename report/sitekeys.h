/* SPDX-License-Identifier: MIT */
/*
 * Locations by name, to match them across runs (`leakwatch diff`) and across
 * the ranks of one job (the merged view): stack ids and addresses differ
 * from process to process, names do not.
 */
#ifndef LW_SITEKEYS_H
#define LW_SITEKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "findings.h"

/* One location of one kind, its sites summed (locations.h). */
struct lw_site_key {
	uint32_t site;		/* the location's largest site */
	/* kind, then the location's frame "function|file|line" (a native
	 * frame with no symbol: "module+0xOFFSET"). */
	char *exact;
	/* The same without the line number: matches a location whose file
	 * was edited above it. */
	char *loose;
	char *label;		/* the location's label, for people */
	uint64_t live_bytes;	/* at the report point, summed */
	uint64_t live_count;
	/* The most its sites held at step ends, summed: what a leak let go
	 * of after the last step (a local of train()) still counts. */
	uint64_t held_bytes;
	struct lw_site_growth growth;	/* summed; growing if a site grows */
	/* A site of it leaked (analysis.h: it grows, or belongs to a leak
	 * finding, such as memory a phase left or a step's kept into the
	 * next). */
	bool leaked;
	bool matched;
};

struct lw_site_keys {
	struct lw_site_key *items;	/* live_bytes descending */
	size_t count;
	struct lw_findings findings;	/* the growth judgement */
};

/*
 * Keys of the device locations of a report (device and managed memory):
 * its sites that hold memory at the report point or leaked (analysis.h:
 * lw_report_sites()), one key per location and kind, largest first. Returns 0 or -ENOMEM; call
 * lw_site_keys_fini() either way.
 */
int lw_site_keys_build(const struct lw_report *report,
		       struct lw_site_keys *out);
void lw_site_keys_fini(struct lw_site_keys *keys);

/* The unmatched key of keys equal to key's exact, else loose; NULL. */
struct lw_site_key *lw_site_keys_match(struct lw_site_keys *keys,
				       const struct lw_site_key *key);

#endif
