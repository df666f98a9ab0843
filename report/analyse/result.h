/* SPDX-License-Identifier: MIT */
/*
 * The result of one report's analysis, complete: what the formats print,
 * computed once by lw_analyse() (its last step), in one order, before any
 * renderer runs. Locations are resolved, frames symbolized, named and
 * labelled, evidence written, the site lists each format walks chosen and
 * the memory account summed here; a renderer only formats them. What a
 * renderer reads besides model.h's accessors and render/'s own helpers is
 * this header (tests/report/test-layering.py checks it on the built
 * objects).
 *
 * Parts are made only for the formats that print them (the renderer's
 * needs, given as report->needs): a large trace written as text does not
 * pay for the stacks a flame graph draws.
 */
#ifndef LW_RESULT_H
#define LW_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diagnose.h"
#include "findings.h"
#include "holders.h"
#include "locations.h"

/* The parts of a result, as a renderer needs them (report->needs). */
enum {
	LW_RESULT_FINDINGS = 1u << 0,	/* the findings, each located */
	LW_RESULT_RETAINED = 1u << 1,	/* retained sites and their stacks */
	LW_RESULT_SERIES = 1u << 2,	/* the findings' series by step */
	LW_RESULT_POOL = 1u << 3,	/* PyTorch pool's memory account */
	/* each finding's sites at its line, with their stacks */
	LW_RESULT_BREAKDOWN = 1u << 4,
	LW_RESULT_CHART = 1u << 5,	/* the growth chart's lines */
	/* the report's sites, their stacks and locations, the locations'
	 * sums, the sites of the model's lists of shares */
	LW_RESULT_SITES = 1u << 6,
	/* every diagnosis finding's facts, its lines located */
	LW_RESULT_DIAGNOSED = 1u << 7,
	/* the growing sites by location, every one located */
	LW_RESULT_GROWTH = 1u << 8,
	/* the text report's lists: what outlived its phase, lingered at
	 * the peaks, was live at an out-of-memory error or is live, by
	 * location, located; the live list's stacks folded */
	LW_RESULT_LISTS = 1u << 9,
};

/* The findings whose location series are summed (LW_RESULT_SERIES):
 * the first ones, as many as a time-drawing format draws. */
#define LW_RESULT_SERIES_MAX 8

/* A named frame with its label (lw_frame_label_string()), in the
 * result's text. */
struct lw_result_frame {
	struct lw_named_frame named;
	size_t label;		/* offset in the result's text */
	size_t label_len;
};

/* A site that kept device memory from step to step (lw_site_retained()),
 * with its named stack, innermost first. */
struct lw_result_site {
	uint32_t site;
	uint64_t bytes;
	size_t first_frame;	/* index into the result's frames */
	size_t frame_count;
};

/* One site of a finding's breakdown (LW_RESULT_BREAKDOWN): a site at the
 * finding's line, of its kind, that holds or adds memory, with its stack. */
struct lw_result_breakdown {
	uint32_t site;
	double rate;		/* bytes per step */
	uint64_t bytes;		/* live */
	size_t first_frame;	/* its named stack in the result's frames */
	size_t frame_count;
};

/* A finding as the formats print it: the collected finding (findings.h),
 * its location's label and its other lines' frames, its holders, for the
 * first LW_RESULT_SERIES_MAX the live bytes at each step point of its
 * location's sites, and its breakdown (when it has two sites or more;
 * fastest first). */
struct lw_result_finding {
	const struct lw_report_finding *finding;
	const char *location_label;	/* NULL: no location */
	size_t location_label_len;
	size_t location_label_at;	/* its offset in the result's text */
	size_t also_first;	/* finding->also's frames, labelled, in the */
	size_t also_count;	/* result's frames */
	struct lw_held_by held;	/* lw_held_by() */
	const uint64_t *series;		/* point_count values; NULL: none */
	uint32_t series_sites;		/* sites summed into series */
	struct lw_result_breakdown *breakdown;
	size_t breakdown_count;
};

/* The most lines the growth chart draws (LW_RESULT_CHART). */
#define LW_RESULT_CHART_MAX 8

/*
 * A line of the growth chart: one location of one kind, its sites summed,
 * those of the findings first, then the live sites that are not stable.
 */
struct lw_result_chart_line {
	uint32_t lead;		/* the site it was chosen by */
	const char *label;	/* its location's label, or "(no stack
				 * captured)" */
	size_t label_len;
	size_t label_at;
	enum lw_verdict verdict;	/* growing when any site there grows */
	double rate;		/* bytes per step of every site there */
	uint32_t sites;		/* sites with a series summed */
	uint64_t *points;	/* point_count values */
};

/* A verdict of the pool's (a diagnosis finding of LW_CATEGORY_CACHE_GROWTH,
 * no leak), as the pool's section says it. */
struct lw_result_pool_verdict {
	uint32_t site;		/* its lead site */
	const char *category, *confidence, *reason, *fix;
	char *evidence;		/* lw_evidence_string(), owned */
};

/*
 * PyTorch's pool in figures, for the text and HTML reports alike: its
 * verdicts and the memory account at the run's peaks and at the end (by
 * step, the model's step points).
 */
struct lw_result_pool {
	bool seen;		/* the pool's segments are in the trace */
	bool fragmented, expandable;
	struct lw_result_pool_verdict *verdicts;	/* in diagnosis order */
	size_t verdict_count;
	const char *category;	/* lw_category_name() of the verdict */
	const char *pattern_text;	/* the verdict without a lead site */
	const char *fix;
	uint64_t peak_allocated, peak_reserved, free_at_peak, peak_outside,
		peak_in_use;
	uint64_t end_allocated, end_reserved, end_outside;
};

/*
 * A live stack as the text report prints it (LW_RESULT_LISTS): the frames
 * folded (lw_fold_stack()), the first report->options->frames native ones
 * (0: all) symbolized and whether each is the interpreter's own, a
 * framework run's label (lw_put_fold_label()) in the result's text.
 */
struct lw_result_folded {
	struct lw_frame *frames;
	size_t count;
	const struct lw_symbol **symbols;
	bool *interpreter;
	size_t *label_at, *label_len;
};

/*
 * A site's stack as the site lists print it (LW_RESULT_SITES): its frames
 * and location (report.h), each native frame's symbol and each frame's
 * fold mark named (lw_fold_marks(): the run it folds into by default).
 */
struct lw_result_stack {
	struct lw_site_stack st;
	const struct lw_symbol **symbols;	/* st.count; NULL: Python */
	size_t *mark_at;	/* st.count offsets of the marks' names in the
				 * result's text; SIZE_MAX: folds into none */
	size_t *mark_len;
	bool full;		/* symbols made for every frame (a report
				 * site), not only its location's */
	bool leaked;		/* lw_site_leaked() */
	uint64_t retained;	/* lw_site_retained() */
	struct lw_result_folded *folded;	/* NULL: not folded */
};

/* A list of sites summed by location (lw_locations_sum()), in a list's
 * order: the sites, each one's location, and the sums. */
struct lw_result_sums {
	uint32_t *sites;
	uint32_t *where;
	size_t site_count;
	struct lw_location_sum *sums;
	size_t count;
};

/* A location of the report's sites (lw_locations_sum()), largest first:
 * the most urgent verdict and first category of its sites, which are
 * report sites (sites[] indexes into the report's sites). */
struct lw_result_location_sum {
	struct lw_location_sum sum;
	enum lw_verdict verdict;
	enum lw_category category;
	uint32_t *sites;
	size_t site_count;
};

/* What the site lists print of a diagnosis finding (every one, in the
 * diagnosis's order). */
struct lw_result_diagnosed {
	char *evidence;		/* lw_evidence_string(), owned */
	const char *released_when;	/* lw_released_when() of a leak let
					 * go; NULL: none */
	size_t released_when_len;
	struct lw_held_by held;	/* a leak's holders */
	uint32_t *lines;	/* lw_finding_lines() */
	size_t line_count;
};

struct lw_result {
	unsigned parts;		/* LW_RESULT_*: what was made */
	/* The judgement it comes from (analysis.h), borrowed: every site's
	 * growth and the diagnosis, as data. */
	const struct lw_growth_report *growth_report;
	const struct lw_diagnosis *diagnosis;
	struct lw_findings findings;
	struct lw_result_finding *finding_views;	/* findings.count */
	uint64_t *series;	/* LW_RESULT_SERIES_MAX × point_count */
	struct lw_result_site *retained;	/* largest first */
	size_t retained_count;
	struct lw_result_frame *frames;
	size_t frame_count, frame_capacity;
	char *text;		/* the labels, one after another */
	size_t text_size;
	FILE *text_stream;	/* writes text while the result is made */
	struct lw_result_pool pool;
	struct lw_result_chart_line chart[LW_RESULT_CHART_MAX];
	size_t chart_count;
	/* LW_RESULT_SITES */
	uint32_t *report_sites;	/* lw_report_sites() */
	size_t report_site_count;
	struct lw_result_stack *stacks;
	size_t stack_count, stack_capacity;
	uint32_t *stack_of;	/* site -> stacks index; UINT32_MAX: none */
	struct lw_result_location_sum *location_sums;
	size_t location_sum_count;
	struct lw_result_diagnosed *diagnosed;	/* the diagnosis's findings' */
	size_t diagnosed_count;
	/* LW_RESULT_GROWTH: the growing sites (lw_growing_sites()), their
	 * locations fastest first */
	struct lw_result_sums growth;
	/* LW_RESULT_LISTS: what outlived each phase (by the model's phase
	 * index; shares of a count, unsuppressed), largest first; the
	 * lingering sites by the most each added to a peak (count: the most
	 * peaks one of them lingered at); the live sites, largest first */
	struct lw_result_sums *phases;
	size_t phase_count;
	struct lw_result_sums lingering, live;
	/* Names, for every format */
	const char *category_names[LW_CATEGORY_COUNT];
	const char *confidence_names[LW_CONFIDENCE_HIGH + 1];
	/* The symbolizer's notes, once every frame shown was symbolized. */
	const char *const *notes;
	size_t note_count;
};

/*
 * Makes the parts of report's result (LW_RESULT_*) that parts names, once
 * its growth and diagnosis are made (lw_analyse() ends with it). Returns
 * 0 or a negative errno; call lw_result_fini() either way.
 */
int lw_result_build(const struct lw_report *report, unsigned parts,
		    struct lw_result *out);
void lw_result_fini(struct lw_result *result);

/* The accessors the renderers read it through: indexing, no more. */

/* The result of an analysed report; NULL when it was not analysed. */
const struct lw_result *lw_result_of(const struct lw_report *report);

/* The findings (most important first) and one of them. */
size_t lw_result_finding_count(const struct lw_result *result);
const struct lw_result_finding *lw_result_finding(const struct lw_result *result,
						   size_t i);

/* The retained sites, largest first, and a frame of one of them (j from
 * 0, innermost first) with its label. */
size_t lw_result_retained_count(const struct lw_result *result);
const struct lw_result_site *lw_result_retained(const struct lw_result *result,
						size_t i);
const struct lw_result_frame *lw_result_site_frame(const struct lw_result *result,
						   const struct lw_result_site *site,
						   size_t j);
const char *lw_result_label(const struct lw_result *result,
			    const struct lw_result_frame *frame);

/* A frame of a breakdown site (j from 0, innermost first), and of a
 * finding's other lines (k from 0). */
const struct lw_result_frame *lw_result_breakdown_frame(const struct lw_result *result,
							const struct lw_result_breakdown *site,
							size_t j);
const struct lw_result_frame *lw_result_also(const struct lw_result *result,
					     const struct lw_result_finding *finding,
					     size_t k);

/* The growth chart's lines. */
size_t lw_result_chart_count(const struct lw_result *result);
const struct lw_result_chart_line *lw_result_chart(const struct lw_result *result,
						   size_t i);

/* The sites a report lists (lw_report_sites()), and a site's stack;
 * NULL when the result did not make it. */
size_t lw_result_report_site_count(const struct lw_result *result);
uint32_t lw_result_report_site(const struct lw_result *result, size_t i);
const struct lw_result_stack *lw_result_stack(const struct lw_result *result,
					      uint32_t site);
/* The name of a fold mark of a stack's frame i; NULL: folds into none. */
const char *lw_result_mark(const struct lw_result *result,
			   const struct lw_result_stack *stack, size_t i,
			   size_t *len);

/* A framework run's label of a stack's folded frame i. */
const char *lw_result_fold(const struct lw_result *result,
			   const struct lw_result_stack *stack, size_t i,
			   size_t *len);

/* The lists of sites by location (LW_RESULT_GROWTH, LW_RESULT_LISTS); a
 * phase's by the model's phase index. */
const struct lw_result_sums *lw_result_growth(const struct lw_result *result);
const struct lw_result_sums *lw_result_phase(const struct lw_result *result,
					     size_t phase);
const struct lw_result_sums *lw_result_lingering(const struct lw_result *result);
const struct lw_result_sums *lw_result_live(const struct lw_result *result);

/* The report sites' locations, largest first. */
size_t lw_result_location_sum_count(const struct lw_result *result);
const struct lw_result_location_sum *lw_result_location_sum(const struct lw_result *result,
							    size_t i);

/* Diagnosis finding i's facts. */
const struct lw_result_diagnosed *lw_result_diagnosed(const struct lw_result *result,
						      size_t i);

/* lw_category_name(), lw_confidence_name(). */
const char *lw_result_category(const struct lw_result *result,
			       enum lw_category category);
const char *lw_result_confidence(const struct lw_result *result,
				 enum lw_confidence confidence);

/* The symbolizer's notes. */
size_t lw_result_notes(const struct lw_result *result,
		       const char *const **notes);

/* The memory account of PyTorch's pool. */
const struct lw_result_pool *lw_result_pool(const struct lw_result *result);

#endif
