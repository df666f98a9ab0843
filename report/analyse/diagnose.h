/* SPDX-License-Identifier: MIT */
/*
 * Diagnosis: what kind of leak each site shows, the evidence in numbers,
 * and the fix, as an engineer would say after reading the stacks (see
 * diagnose.c for the rules of judgement; rules.h for the data they use).
 */
#ifndef LW_DIAGNOSE_H
#define LW_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "growth.h"
#include "report.h"
#include "rules.h"
#include "torch.h"

enum lw_confidence {
	LW_CONFIDENCE_LOW,
	LW_CONFIDENCE_MEDIUM,
	LW_CONFIDENCE_HIGH,
};

/* "low", "medium", "high". */
const char *lw_confidence_name(enum lw_confidence confidence);

/* The numbers behind a verdict, for a site or a finding's sites together. */
struct lw_evidence {
	double bytes_per_step;	/* growth (growth.h) */
	double count_per_step;
	uint64_t live_bytes;	/* at the report point */
	uint64_t live_count;
	/* What it held at step ends (struct lw_site_growth): the most, and
	 * the step it was reached at; let go after the last step. */
	uint64_t held_bytes;
	uint64_t held_count;
	uint64_t held_step;
	bool released;
	uint64_t frees;		/* before the report point */
	double mean_lifetime;	/* in steps, of those frees */
	uint64_t max_lifetime;
	uint64_t gc_frees;	/* inside a cycle-collector pass */
	uint64_t gc_passes;	/* of the whole run */
	uint64_t lingering_steps;	/* step peaks it added to */
	uint64_t lingering_bytes;	/* the most it added to one */
	uint64_t lingering_mean_bytes;	/* what it added to one, on average */
	uint64_t typical_peak_bytes;	/* the median step peak past warm-up */
	uint64_t peak_bytes;	/* the run's device peak */
	uint64_t phase_bytes;	/* born in a phase and outlived it */
	uint64_t phase_string;	/* the phase's STRING id; 0: none */
	uint64_t mean_size;	/* bytes per allocation */
	uint64_t allocations;	/* before the report point, freed or not */
	uint64_t bytes_allocated;
	uint32_t sites;		/* sites in the finding */
};

/*
 * Whether what the memory held at step ends was let go of after the last
 * step: most of it is gone at the report point. A loop's last batch freed
 * as the loop ends is not the rest let go of: a function that returned
 * let go of nothing when what it kept outlived it (returned to its
 * caller, kept on an object or in a module's cache).
 */
static inline bool lw_evidence_let_go(const struct lw_evidence *ev)
{
	return ev->released && ev->live_bytes * 2 <= ev->held_bytes;
}

/* One site's verdict; category LW_CATEGORY_NONE when nothing is said. */
struct lw_site_diagnosis {
	enum lw_category category;
	enum lw_confidence confidence;
	uint32_t tags;		/* enum lw_tag bits of its frames */
	bool suppressed;	/* a frame matched a suppression */
	size_t finding;		/* index in lw_diagnosis.findings */
	/* What the evidence shows (static), for a site that leads no
	 * finding (memory that is not a leak and needs no word). */
	const char *reason;
};

struct lw_finding {
	enum lw_category category;
	enum lw_confidence confidence;
	bool leak;		/* false for LW_CATEGORY_NOT_A_LEAK */
	bool suppressed;	/* the lead site matched a suppression */
	uint32_t site;		/* the lead site: its location comes first */
	struct lw_evidence evidence;
	const char *reason;	/* static: what the evidence shows */
	const char *fix;	/* from the rules, else a generic wording */
	double weight;		/* bytes at stake, for ordering */
};

/* Whether a finding's fix is worth showing: leaks, and PyTorch's cache
 * growth (not a leak, but the fix of a run that runs out of memory). */
static inline bool lw_finding_has_fix(const struct lw_finding *f)
{
	return f->leak || f->category == LW_CATEGORY_CACHE_GROWTH;
}

struct lw_diagnosis {
	struct lw_site_diagnosis *sites;	/* indexed by site */
	uint32_t site_count;
	/* Leaks first, then by confidence and bytes at stake; suppressed
	 * ones included (flagged). */
	struct lw_finding *findings;
	size_t finding_count;
	size_t suppressed_count;
	uint64_t suppressed_bytes;	/* live at the report point */
	/* PyTorch's pool, judged apart from leaks; its verdict is the
	 * finding of LW_CATEGORY_CACHE_GROWTH, when it holds. */
	struct lw_pool pool;
};

/*
 * Classifies the sites of report (with report->rules, which may be NULL)
 * from the growth judged of them (lw_model_growth()). Renderers read the
 * diagnosis of report->analysis instead (analysis.h).
 * Returns 0 or a negative errno (-ENOMEM, or the symbolizer's); call
 * lw_diagnosis_fini() either way.
 */
struct lw_growth_report;
int lw_diagnose(const struct lw_report *report,
		const struct lw_growth_report *growth,
		struct lw_diagnosis *out);

/*
 * Whether a frame of the site's stack matches a suppression of the
 * report's rules. Returns 0 or -ENOMEM (from the symbolizer).
 */
int lw_site_suppressed(const struct lw_report *report, uint32_t site,
		       bool *suppressed);
void lw_diagnosis_fini(struct lw_diagnosis *diagnosis);

#endif
