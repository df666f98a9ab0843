/* SPDX-License-Identifier: MIT */
/*
 * The short report printed to stderr at exit, in the spirit of
 * LeakSanitizer's: device memory still live, its largest sites, and where
 * the trace is. Names come from dladdr(), so only exported symbols are
 * named; `leakwatch report` gives the full symbolized stacks.
 */
#ifndef LW_SUMMARY_H
#define LW_SUMMARY_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define LW_SUMMARY_SITES 5
#define LW_SUMMARY_FRAMES 3

struct lw_summary_site {
	uint64_t bytes, count;
	char python[160]; /* "function (file.py:line)", or "" */
	unsigned depth;
	uintptr_t frames[LW_SUMMARY_FRAMES];
};

/* A site whose memory grew from step to step (kept.h). */
struct lw_summary_growth {
	double rate;		/* bytes per step */
	uint64_t max_bytes;	/* the most it held at a step end */
	int released;		/* none of it live now */
	char python[160];
	unsigned depth;
	uintptr_t frames[LW_SUMMARY_FRAMES];
};

struct lw_summary {
	char trace_path[PATH_MAX];
	const char *when; /* "at exit", ...: a literal */
	uint64_t live_bytes, live_count, unknown_frees, sites_total;
	unsigned nsites;
	struct lw_summary_site sites[LW_SUMMARY_SITES];
	/* Allocation calls that returned an error, and the first one's. */
	uint64_t failed_allocations;
	const char *failed_api;	/* a literal */
	int failed_error;
	/* Events the trace lacks: after a write to it failed. */
	uint64_t lost_events;
	/* The sites that grew, fastest first: what leaked, judged on the
	 * steps, even when a function's return let go of it. */
	unsigned ngrowing;
	uint64_t growing_total;
	struct lw_summary_growth growing[LW_SUMMARY_SITES];
	/* Because the program closed or replaced the trace's descriptor. */
	int descriptor_lost;
};

void lw_summary_init(struct lw_summary *s, const char *trace_path,
		     const char *when, uint64_t live_bytes, uint64_t live_count,
		     uint64_t unknown_frees);

/* Offers one site; the summary keeps the largest few. python names the
 * site's innermost Python frame, or is NULL. */
void lw_summary_add_site(struct lw_summary *s, const uintptr_t *frames,
			 unsigned depth, const char *python, uint64_t bytes,
			 uint64_t count);

/* Offers a site that grew from step to step; the summary keeps the
 * fastest few. */
void lw_summary_add_growing(struct lw_summary *s, const uintptr_t *frames,
			    unsigned depth, const char *python, double rate,
			    uint64_t max_bytes, int released);

/* Writes the summary to stderr. */
void lw_summary_print(const struct lw_summary *s);

/*
 * Subscribes to the recorder's events (events.h): the summary is taken
 * when the recorder says (the device memory live then, its sites and the
 * stacks that grew, record/stacks.h and kept.h), and said at exit with the
 * failures and losses the trace saw.
 */
void lw_summary_start(void);

#endif
