/* SPDX-License-Identifier: MIT */
/*
 * Locations: the sites of a report grouped by their headline frame (the
 * line of the user's code that lw_find_location() leads a site with), so
 * that a line that allocates through several framework paths is one entry
 * in every view. Found on demand, each site once.
 */
#ifndef LW_LOCATIONS_H
#define LW_LOCATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "findings.h"

#define LW_NO_LOCATION UINT32_MAX

struct lw_location_entry {
	char *label;		/* lw_frame_label_string(); NULL: no stack */
	size_t label_len;
	struct lw_named_frame frame;	/* valid when label is not NULL */
};

struct lw_locations {
	const struct lw_report *report;
	uint32_t *of_site;	/* site -> entry; LW_NO_LOCATION: not yet */
	struct lw_location_entry *items;
	size_t count, capacity;
	/* label hash -> entry + 1 (0: empty), open addressing */
	uint32_t *table;
	size_t table_size;
};

/* Returns 0 or -ENOMEM; call lw_locations_fini() either way. */
int lw_locations_init(struct lw_locations *locations,
		      const struct lw_report *report);
void lw_locations_fini(struct lw_locations *locations);

/* The location of a site (an index into items), found the first time it
 * is asked for. Returns 0 or -ENOMEM. */
int lw_location_of(struct lw_locations *locations, uint32_t site,
		   uint32_t *out);

/* One location's share of a list of sites, of one memory kind: what a view
 * shows as one entry. */
struct lw_location_sum {
	uint32_t location;
	uint32_t lead;		/* its first site in the list */
	uint32_t sites;		/* how many of the list's sites it holds */
	double rate, count_rate;	/* summed per-step figures */
	uint64_t bytes, count;		/* summed totals */
};

/* Whether site, at location, is one of the sites summed in sum. */
static inline bool lw_location_sum_holds(const struct lw_model *model,
					 const struct lw_location_sum *sum,
					 uint32_t location, uint32_t site)
{
	return location == sum->location &&
	       model->sites.items[site].kind == model->sites.items[sum->lead].kind;
}

/*
 * Sums the values of a list of sites (site, rate, count_rate, bytes,
 * count: arrays of n, any of the value arrays NULL for none) by location
 * and memory kind, in the order of each entry's first site. *out is malloc'ed. Returns
 * 0 or -ENOMEM.
 */
int lw_locations_sum(struct lw_locations *locations, const uint32_t *sites,
		     const double *rate, const double *count_rate,
		     const uint64_t *bytes, const uint64_t *count, size_t n,
		     struct lw_location_sum **out, size_t *out_count);

/*
 * The live bytes at each step point (m->points.count of them) of the
 * sites at lead's location, of lead's kind, summed into points; how many
 * sites have a series, into *sites. Returns 0 or -ENOMEM.
 */
int lw_location_series(struct lw_locations *locations, uint32_t lead,
		       uint64_t *points, uint32_t *sites);

/* qsort comparators: faster growth first; more bytes first. Ties keep
 * the lead sites' order. */
int lw_location_sum_by_rate(const void *a, const void *b);
int lw_location_sum_by_bytes(const void *a, const void *b);

#endif
