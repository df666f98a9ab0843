/* SPDX-License-Identifier: MIT */
/*
 * What the picture-like formats (html, perfetto, folded, github, diff) share:
 * a site's stack as named frames, and the findings of a report.
 */
#ifndef LW_FINDINGS_H
#define LW_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "growth.h"
#include "report.h"

/*
 * One frame by name. Native frames that hold inlined calls give one named
 * frame per inlined function. Strings point into the model (Python) or the
 * report's symbolizer (native): valid while both are.
 */
struct lw_named_frame {
	const char *function;	/* NULL: unknown */
	size_t function_len;
	const char *file;	/* NULL: unknown; relative to the process's
				 * directory when inside it */
	size_t file_len;
	int64_t line;		/* <= 0: unknown */
	bool python;
	const char *module;	/* native: the module's path, or NULL */
	uint64_t offset;	/* native: address - load bias (or address) */
	/* A run of the framework's frames folded into one (pystack.h):
	 * how many, and what they ran; 0 for any other frame. */
	uint32_t folded;
	struct lw_fold_name fold;
};

/*
 * The frames of a stack by name, innermost first, as lw_fold_stack()
 * folds them (unless the report is --native): each run of the
 * framework's frames one frame named by its operator, the interpreter's
 * runs and the start of the process or thread left out. On success *out
 * is malloc'ed (NULL when there are none). Returns 0 or -ENOMEM.
 */
int lw_named_stack(const struct lw_report *report, uint64_t stack_id,
		   struct lw_named_frame **out, size_t *count);

/*
 * A frame's label, "function (file:line)", "function", "module+0xN" for
 * a native frame with no symbol, or a folded run's name ("aten::mm"),
 * written through put (one of the escaping writers, e.g. lw_put_text or a
 * format's own) to out.
 */
void lw_put_frame_label(FILE *out, const struct lw_named_frame *frame,
			void (*put)(FILE *out, const void *data, size_t len));

/* The label as a malloc'ed string of the trace's bytes; NULL: no memory. */
char *lw_frame_label_string(const struct lw_named_frame *frame, size_t *len);

/*
 * The frame a site's report leads with (lw_find_location()) by name;
 * *found false when the site has no stack. Returns 0 or -ENOMEM.
 */
int lw_site_location(const struct lw_report *report, uint32_t site,
		     struct lw_named_frame *out, bool *found);

/* One finding: a leak the diagnosis found (diagnose.h), led by a site. */
struct lw_report_finding {
	uint32_t site;
	const char *category;	/* lw_category_name() */
	enum lw_verdict verdict;
	double bytes_per_step;
	double count_per_step;
	char *title;		/* one line, owned (UTF-8 from the trace) */
	const char *fix;	/* what to do about it, or NULL: unknown */
	char *evidence;		/* lw_evidence_string(), owned */
	bool have_location;
	struct lw_named_frame location;	/* the site's headline frame */
	/* Its other lines (lw_finding_lines()), the fastest first: owned. */
	struct lw_named_frame *also;
	size_t also_count;
};

struct lw_findings {
	struct lw_report_finding *items;	/* most important first */
	size_t count;
	/* The growth judgement the findings come from (the run's verdict
	 * and every site's): the report's analysis's, borrowed. */
	struct lw_growth_report growth;
};

/*
 * The findings of a report: the leaks its analysis's diagnosis found
 * (suppressed ones left out), most important first, each with the growth
 * of its lead site. Every format gathers its findings here; they borrow
 * from report->analysis, so they live no longer than it. Returns 0 or a
 * negative errno (-EINVAL: the report was not analysed); call
 * lw_findings_fini() either way.
 */
int lw_findings_collect(const struct lw_report *report,
			struct lw_findings *out);
void lw_findings_fini(struct lw_findings *findings);

struct lw_finding;

/*
 * The lines of a finding (diagnosis index finding): one site of each
 * location its sites are at, the lead's first, then by how fast each
 * line's sites grow (most first). *out is malloc'ed (NULL when none).
 * Returns 0 or a negative errno.
 */
int lw_finding_lines(const struct lw_report *report, size_t finding,
		     uint32_t **out, size_t *count);

/*
 * A finding's evidence in the numbers that matter for its kind, one line
 * without its newline, as text (a phase's name as the trace has it): what
 * it held at step ends and, when it was let go after the last step, the
 * function whose return let go of it. *out is malloc'ed. Returns 0 or a
 * negative errno.
 */
int lw_evidence_string(const struct lw_report *report,
		       const struct lw_finding *finding, char **out);

#endif
