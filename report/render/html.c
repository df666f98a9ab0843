/* SPDX-License-Identifier: MIT */
/*
 * `--format html`: one self-contained page (inline CSS, script and SVG; no
 * network, no fonts) per run of the command, a section per trace, the
 * answer first:
 *   - the verdict in one line, and the findings, each with its line,
 *     evidence and fix;
 *   - live device memory at each step point, the phases as bands and the
 *     peak marked;
 *   - the growth of the locations that grow fastest (else the largest),
 *     one line per location, its sites summed;
 *   - the phases;
 *   - an icicle graph of the device memory kept from step to step (held
 *     at the last step end: lw_site_retained()), by stack, outermost frame
 *     on top (a Python program's from its script: pystack.h);
 *   - the run: process, trace, steps, peak.
 *
 * What the page shows comes made from the analysis (result.h): the
 * findings, the growth chart's lines (at most LW_RESULT_CHART_MAX), the
 * retained stacks; the page is aggregated here before it is written: the step
 * series is bounded (LW_STEP_POINTS_MAX), the icicle keeps at most
 * HTML_MAX_NODES nodes and folds nodes under 0.1% of the total into
 * "(other)", so a trace of any length gives a page of bounded size.
 *
 * Strings from the trace reach the page two ways only: HTML text through
 * put_html() (& < > " ' escaped), and JSON inside <script
 * type="application/json"> through lw_put_script_json_string() ("<", ">",
 * "&", U+2028 and U+2029 as \uXXXX, so "</script>" cannot close it). The
 * script reads that JSON and builds the charts with textContent and
 * setAttribute, never by parsing markup.
 */
#include "formats.h"
#include "result.h"
#include "timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Icicle nodes written per trace, and sites folded into it. */
#define HTML_MAX_NODES 4000
#define HTML_MAX_SITES 20000
#define HTML_MAX_DEPTH 128
/* Native frames shown for each site of a finding's breakdown (Python
 * frames are all shown). */
#define HTML_BREAKDOWN_FRAMES 12

/* For HTML text and attribute values: the five special characters as
 * entities; controls, and bytes that are not UTF-8, as U+FFFD. */
static bool escape_html(FILE *out, uint32_t cp, const uint8_t *s, size_t n,
			const void *ctx)
{
	if (n == 0)
		fputs("\xef\xbf\xbd", out);
	else if (cp == '&')
		fputs("&amp;", out);
	else if (cp == '<')
		fputs("&lt;", out);
	else if (cp == '>')
		fputs("&gt;", out);
	else if (cp == '"')
		fputs("&quot;", out);
	else if (cp == '\'')
		fputs("&#39;", out);
	else if (lw_is_control(cp))
		fputs("&#xfffd;", out);
	else
		return false;
	return true;
}

static void put_html(FILE *out, const void *data, size_t len)
{
	lw_put_escaped(out, data, len, escape_html, NULL);
}

static void put_html_str(FILE *out, const char *s)
{
	put_html(out, s, strlen(s));
}

/* The icicle: a tree of frames, outermost at the root. */
struct flame_node {
	const char *label;	/* the result's, or a literal */
	size_t label_len;
	uint64_t value;
	uint32_t first_child;	/* 0: none (node 0 is the root) */
	uint32_t next_sibling;
};

struct flame {
	struct flame_node *nodes;
	uint32_t count, capacity;
	uint32_t written;
};

static int flame_child(struct flame *fl, uint32_t parent, const char *label,
		       size_t len, uint32_t *out)
{
	uint32_t *link = &fl->nodes[parent].first_child;
	struct flame_node *n;

	while (*link) {
		n = &fl->nodes[*link];
		if (n->label_len == len && memcmp(n->label, label, len) == 0) {
			*out = *link;
			return 0;
		}
		link = &n->next_sibling;
	}
	if (fl->count == fl->capacity) {
		uint32_t next = fl->capacity ? fl->capacity * 2 : 256;
		struct flame_node *p = realloc(fl->nodes, next * sizeof(*p));

		if (!p)
			return -ENOMEM;
		fl->nodes = p;
		fl->capacity = next;
		/* fl->nodes moved: find the link again. */
		link = &fl->nodes[parent].first_child;
		while (*link)
			link = &fl->nodes[*link].next_sibling;
	}
	n = &fl->nodes[fl->count];
	memset(n, 0, sizeof(*n));
	n->label = label;
	n->label_len = len;
	*link = fl->count;
	*out = fl->count++;
	return 0;
}

static int flame_add_site(struct flame *fl, const struct lw_result *res,
			  const struct lw_result_site *site)
{
	uint32_t node = 0;
	int rc = 0;

	fl->nodes[0].value += site->bytes;
	if (site->frame_count == 0) {
		static const char none[] = "(no stack captured)";

		rc = flame_child(fl, 0, none, sizeof(none) - 1, &node);
		if (rc == 0)
			fl->nodes[node].value += site->bytes;
	}
	for (size_t j = site->frame_count, depth = 0;
	     j-- > 0 && depth < HTML_MAX_DEPTH; depth++) {
		const struct lw_result_frame *f =
			lw_result_site_frame(res, site, j);

		if ((rc = flame_child(fl, node, lw_result_label(res, f),
				      f->label_len, &node)) < 0)
			break;
		fl->nodes[node].value += site->bytes;
	}
	return rc;
}

static int flame_build(struct flame *fl, const struct lw_result *res)
{
	uint64_t rest = 0;
	int rc = 0;

	memset(fl, 0, sizeof(*fl));
	fl->nodes = calloc(256, sizeof(*fl->nodes));
	if (!fl->nodes)
		return -ENOMEM;
	fl->capacity = 256;
	fl->count = 1;
	for (size_t i = 0; rc == 0 && i < lw_result_retained_count(res); i++) {
		const struct lw_result_site *site = lw_result_retained(res, i);

		if (i >= HTML_MAX_SITES)
			rest += site->bytes;
		else
			rc = flame_add_site(fl, res, site);
	}
	if (rc == 0 && rest) {
		static const char smaller[] = "(smaller sites)";
		uint32_t node;

		rc = flame_child(fl, 0, smaller, sizeof(smaller) - 1, &node);
		if (rc == 0) {
			fl->nodes[node].value += rest;
			fl->nodes[0].value += rest;
		}
	}
	return rc;
}

static void flame_fini(struct flame *fl)
{
	free(fl->nodes);
}

/* {"n": LABEL, "v": BYTES, "c": [...]}; small children become "(other)". */
static void flame_write(FILE *out, struct flame *fl, uint32_t index,
			uint64_t threshold, unsigned depth)
{
	const struct flame_node *n = &fl->nodes[index];
	uint64_t other = 0;
	bool first = true;

	fl->written++;
	fputs("{\"n\":", out);
	if (index == 0)
		fputs("\"all device memory\"", out);
	else
		lw_put_script_json_string(out, n->label, n->label_len);
	fprintf(out, ",\"v\":%" PRIu64 ",\"c\":[", n->value);
	for (uint32_t c = n->first_child; c; c = fl->nodes[c].next_sibling) {
		const struct flame_node *child = &fl->nodes[c];

		if (child->value < threshold || depth >= HTML_MAX_DEPTH ||
		    fl->written >= HTML_MAX_NODES) {
			other += child->value;
			continue;
		}
		if (!first)
			putc(',', out);
		first = false;
		flame_write(out, fl, c, threshold, depth + 1);
	}
	if (other)
		fprintf(out, "%s{\"n\":\"(other)\",\"v\":%" PRIu64 ",\"c\":[]}",
			first ? "" : ",", other);
	fputs("]}", out);
}

static void put_steps(FILE *out, const struct lw_model *m)
{
	const struct lw_peak *peak = lw_model_peak(m);
	fputs("\"steps\":[", out);
	for (size_t i = 0; i < lw_model_point_count(m); i++) {
		const struct lw_step_point *p = lw_model_point(m, i);

		fprintf(out, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
			i ? "," : "", p->step, p->live_bytes, p->peak_bytes);
	}
	fprintf(out, "],\"stride\":%" PRIu64 ",\"peak\":{\"bytes\":%" PRIu64 ",\"step\":%" PRIu64 "},\"total_steps\":%" PRIu64,
		lw_model_step_stride(m), peak->bytes, peak->step,
		lw_model_counts(m)->steps);
}

static void put_phases(FILE *out, const struct lw_model *m,
		       const struct lw_timeline *t)
{
	fputs(",\"phases\":[", out);
	for (size_t i = 0; i < t->phase_count; i++) {
		const struct lw_phase_span *s = &t->phases[i];
		const struct lw_string *name = lw_model_string(m, s->name_string);

		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		if (name)
			lw_put_script_json_string(out, name->text.data,
						  name->text.len);
		else
			fputs("\"(unnamed)\"", out);
		fprintf(out, ",\"begin\":%" PRIu64 ",\"end\":%" PRIu64 ",\"depth\":%" PRIu32 "}",
			s->begin_step, s->end_step, s->depth);
	}
	putc(']', out);
}

/* The growth chart's lines (the result's), one per location. */
static void put_site_lines(FILE *out, const struct lw_report *r,
			   const struct lw_result *res)
{
	const struct lw_model *m = r->model;

	fputs(",\"sites\":[", out);
	for (size_t k = 0; k < lw_result_chart_count(res); k++) {
		const struct lw_result_chart_line *line = lw_result_chart(res, k);

		fputs(k ? ",{\"label\":" : "{\"label\":", out);
		lw_put_script_json_string(out, line->label, line->label_len);
		fprintf(out, ",\"verdict\":\"%s\",\"rate\":%.6g,\"sites\":%" PRIu32 ",\"points\":[",
			lw_verdict_name(line->verdict), line->rate,
			line->sites ? line->sites : 1);
		for (size_t i = 0; i < lw_model_point_count(m); i++)
			fprintf(out, "%s%" PRIu64, i ? "," : "", line->points[i]);
		fputs("]}", out);
	}
	putc(']', out);
}

static void put_command(FILE *out, const struct lw_model *m)
{
	const struct lw_bytes *cmdline = lw_model_info(m, "cmdline");
	size_t len;

	if (!cmdline || cmdline->len == 0) {
		fputs("(command not recorded)", out);
		return;
	}
	len = cmdline->len;
	if (cmdline->data[len - 1] == 0)
		len--;
	for (size_t i = 0, start = 0; i <= len; i++) {
		if (i < len && cmdline->data[i])
			continue;
		if (start)
			putc(' ', out);
		put_html(out, cmdline->data + start, i - start);
		start = i + 1;
	}
}

/* The phases, outermost first as they began, with their steps. */
static void put_phase_list(FILE *out, const struct lw_model *m,
			   const struct lw_timeline *t)
{
	if (t->phase_count == 0)
		return;
	fputs("<h3>Phases</h3>\n<ul class=\"lw-phases\">\n", out);
	for (size_t i = 0; i < t->phase_count; i++) {
		const struct lw_phase_span *s = &t->phases[i];
		const struct lw_string *name = lw_model_string(m, s->name_string);

		fprintf(out, "<li style=\"margin-left:%" PRIu32 "em\">", s->depth);
		if (name)
			put_html(out, name->text.data, name->text.len);
		fprintf(out, ": steps %" PRIu64 " to %" PRIu64 "%s</li>\n",
			s->begin_step, s->end_step,
			s->open ? " (never ended)" : "");
	}
	fputs("</ul>\n", out);
}

static void put_summary(FILE *out, const struct lw_report *r,
			const struct lw_findings *findings)
{
	const struct lw_model *m = r->model;
	const struct lw_peak *peak = lw_model_peak(m);
	const struct lw_event_counts *counts = lw_model_counts(m);
	const struct lw_bytes *rank = lw_model_info(m, "rank");
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF];

	fputs("<h3>The run</h3>\n<dl class=\"lw-summary\">\n<dt>process</dt><dd>", out);
	fprintf(out, "%" PRIu32 ": <code>", lw_model_header(m)->pid);
	put_command(out, m);
	fputs("</code></dd>\n", out);
	if (rank) {
		fputs("<dt>rank</dt><dd>", out);
		put_html(out, rank->data, rank->len);
		fputs("</dd>\n", out);
	}
	if (r->result->truncated) {
		char why[384];

		lw_trace_describe_end(r->result, why, sizeof(why));
		fputs("<dt>trace</dt><dd>", out);
		put_html_str(out, why);
		fprintf(out, "; %" PRIu64 " events read</dd>\n", counts->events);
	} else {
		fprintf(out, "<dt>trace</dt><dd>complete, %" PRIu64 " events</dd>\n",
			counts->events);
	}
	char source[768];

	lw_render_step_source(m, false, source, sizeof(source));
	fprintf(out, "<dt>steps</dt><dd>%" PRIu64 " (", counts->steps);
	put_html_str(out, source);
	fputs(")</dd>\n", out);
	fprintf(out, "<dt>peak device memory</dt><dd>%s",
		lw_format_size(a, peak->bytes));
	if (peak->bytes && counts->steps)
		fprintf(out, peak->step < counts->steps ? " during step %" PRIu64
						     : " after the last step",
			peak->step);
	fprintf(out, "</dd>\n<dt>live device memory %s</dt><dd>%s in %" PRIu64 " allocations</dd>\n",
		lw_model_has_program_end(m) ? "when the program's code finished"
				    : "at the end",
		lw_format_size(b, lw_model_device_live_bytes(m)),
		lw_model_device_live_count(m));
	if (findings->growth.run.verdict == LW_VERDICT_NOT_ENOUGH_STEPS)
		fprintf(out, "<dt>growth</dt><dd>not enough steps to judge (%" PRIu64 " of %" PRIu64 ")</dd>\n",
			counts->steps, r->min_steps);
	else
		fprintf(out, "<dt>growth</dt><dd class=\"lw-verdict-%s\">%s, %s per step</dd>\n",
			lw_verdict_name(findings->growth.run.verdict),
			lw_verdict_name(findings->growth.run.verdict),
			lw_format_rate(a, findings->growth.run.per_step));
	fputs("</dl>\n", out);
}

/* The answer, first: the trace, the verdict in one line, the findings. */
static void put_verdict(FILE *out, const struct lw_report *r,
			const struct lw_findings *findings)
{
	const struct lw_growth *run = &findings->growth.run;
	char rate[LW_SIZE_BUF];

	fputs("<h2>", out);
	put_html_str(out, r->path);
	fputs("</h2>\n<p class=\"lw-verdict\">", out);
	if (findings->count)
		fprintf(out, "<strong>%zu leak%s found.</strong> ",
			findings->count, findings->count == 1 ? "" : "s");
	else
		fputs("<strong>No leak found.</strong> ", out);
	if (run->verdict == LW_VERDICT_NOT_ENOUGH_STEPS)
		fprintf(out, "Too few steps to judge growth (%" PRIu64 " of %" PRIu64 ").",
			lw_model_counts(r->model)->steps, r->min_steps);
	else
		fprintf(out, "Device memory is <span class=\"lw-verdict-%s\">%s</span>, %s per step.",
			lw_verdict_name(run->verdict),
			lw_verdict_name(run->verdict),
			lw_format_rate(rate, run->per_step));
	fputs("</p>\n", out);
}

/* "Held by" under a finding: the holders, and the fix against the first. */
static void put_held_by(FILE *out, const struct lw_held_by *held)
{
	if (held->count == 0)
		return;
	fputs("<div class=\"lw-held\">Held by: ", out);
	for (size_t i = 0; i < held->count; i++) {
		const struct lw_held *e = &held->items[i];
		const struct lw_holder *h = e->holder;

		fputs(i ? "; <code>" : "<code>", out);
		put_html(out, e->path, e->path_len);
		fputs("</code> (", out);
		put_html(out, e->root_short, e->root_short_len);
		fprintf(out, "; %" PRIu64 " object%s", h->objects,
			h->objects == 1 ? "" : "s");
		if (h->graph)
			fprintf(out, ", %" PRIu64 " graph nodes", h->graph);
		putc(')', out);
	}
	if (held->cut)
		fputs(" (the search ran out of time: there may be more)", out);
	fputs("</div><div class=\"lw-fix\">Fix the holder: ", out);
	put_html_str(out, held->items[0].fix);
	fputs("</div>", out);
}

/* "N more frames" for the native frames left out, if any. */
static void put_breakdown_skipped(FILE *out, size_t *skipped)
{
	if (*skipped)
		fprintf(out, "<li class=\"lw-none\">%zu more frame%s</li>",
			*skipped, *skipped == 1 ? "" : "s");
	*skipped = 0;
}

/* A breakdown site's stack, innermost first, folded as the icicle's:
 * every Python frame, at most HTML_BREAKDOWN_FRAMES native ones. */
static void put_breakdown_stack(FILE *out, const struct lw_result *res,
				const struct lw_result_breakdown *site)
{
	size_t native = 0, skipped = 0;

	fputs("<ol class=\"lw-stack\">", out);
	for (size_t j = 0; j < site->frame_count; j++) {
		const struct lw_result_frame *f =
			lw_result_breakdown_frame(res, site, j);

		if (!f->named.python && native++ >= HTML_BREAKDOWN_FRAMES) {
			skipped++;
			continue;
		}
		put_breakdown_skipped(out, &skipped);
		fputs("<li><code>", out);
		put_html(out, lw_result_label(res, f), f->label_len);
		fputs("</code></li>", out);
	}
	put_breakdown_skipped(out, &skipped);
	fputs("</ol>", out);
}

/*
 * A finding whose line allocates through several stacks: its sites, each
 * with its share and stack, in a <details> that the reader expands.
 */
static void put_finding_sites(FILE *out, const struct lw_report *r,
			      const struct lw_result *res,
			      const struct lw_result_finding *v)
{
	const struct lw_model *m = r->model;

	if (v->breakdown_count < 2)
		return;
	fprintf(out, "<details class=\"lw-breakdown\"><summary>From %zu sites (stacks) at this line</summary><ol>",
		v->breakdown_count);
	for (size_t i = 0; i < v->breakdown_count; i++) {
		const struct lw_result_breakdown *b = &v->breakdown[i];
		struct lw_totals t = lw_model_site_totals(m, b->site);
		char size[LW_SIZE_BUF], rate[LW_SIZE_BUF];

		uint64_t id = lw_model_site(m, b->site)->stack_id;

		/* Named by the stack id, as the JSON's sites are. */
		fprintf(out, "<li data-lw-site=\"%" PRIu64 "\">stack %" PRIu64 ": %s live in %" PRIu64 " allocation%s, %s per step",
			id, id,
			lw_format_size(size, t.live_bytes), t.live_count,
			t.live_count == 1 ? "" : "s",
			lw_format_rate(rate, b->rate));
		put_breakdown_stack(out, res, b);
		fputs("</li>", out);
	}
	fputs("</ol></details>", out);
}

static void put_findings(FILE *out, const struct lw_report *r,
			 const struct lw_result *res)
{
	size_t count = lw_result_finding_count(res);

	fputs("<h3>Findings</h3>\n", out);
	if (count == 0) {
		fputs("<p class=\"lw-none\">No site grows from step to step.</p>\n",
		      out);
		return;
	}
	fputs("<ol class=\"lw-findings\">\n", out);
	for (size_t i = 0; i < count; i++) {
		const struct lw_result_finding *v = lw_result_finding(res, i);
		const struct lw_report_finding *f = v->finding;

		fputs("<li><span class=\"lw-title\">", out);
		put_html_str(out, f->title);
		fputs("</span>", out);
		for (size_t k = 0; k < v->also_count; k++) {
			const struct lw_result_frame *at =
				lw_result_also(res, v, k);

			fputs(k ? ", " : "<div class=\"lw-also\">Also at: ", out);
			put_html(out, lw_result_label(res, at), at->label_len);
			if (k + 1 == v->also_count)
				fputs("</div>", out);
		}
		fputs("<div class=\"lw-evidence\">Evidence: ", out);
		put_html_str(out, f->evidence);
		fputs("</div>", out);
		if (f->fix) {
			fputs("<div class=\"lw-fix\">Fix: ", out);
			put_html_str(out, f->fix);
			fputs("</div>", out);
		}
		put_held_by(out, &v->held);
		put_finding_sites(out, r, res, v);
		fputs("</li>\n", out);
	}
	fputs("</ol>\n", out);
}

/* Rows of the pool's account by step in the page (lw_account_row()). */
#define POOL_ROWS 50

/* PyTorch's pool: its verdict, apart from the leaks, and the memory
 * account at the peak, at the end and by step. */
static void put_pool(FILE *out, const struct lw_report *r)
{
	const struct lw_model *m = r->model;
	const struct lw_result_pool *pool = lw_result_pool(lw_result_of(r));
	size_t n = lw_model_point_count(m);
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF], c[LW_SIZE_BUF], e[LW_SIZE_BUF];

	if (!pool->seen)
		return;
	fputs("<h3>PyTorch's pool</h3>\n<div class=\"lw-pool\">", out);
	for (size_t i = 0; i < pool->verdict_count; i++) {
		const struct lw_result_pool_verdict *v = &pool->verdicts[i];

		fputs("<p class=\"lw-pool-verdict\"><strong>Not a leak: ", out);
		put_html_str(out, v->category);
		fputs("</strong> (", out);
		put_html_str(out, v->confidence);
		fputs(" confidence): ", out);
		put_html_str(out, v->reason);
		fputs("</p>\n<div class=\"lw-evidence\">Evidence: ", out);
		put_html_str(out, v->evidence);
		fputs("</div>\n<div class=\"lw-fix\">Fix: ", out);
		put_html_str(out, v->fix);
		fputs("</div>\n", out);
	}
	if (pool->fragmented && !pool->verdict_count) {
		fputs("<p class=\"lw-pool-verdict\"><strong>Not a leak: "
		      "pool-fragmentation</strong>: ", out);
		put_html_str(out, pool->pattern_text);
		fputs("</p>\n<div class=\"lw-fix\">Fix: ", out);
		put_html_str(out, pool->fix);
		fputs("</div>\n", out);
	}
	if (!pool->fragmented)
		fprintf(out, "<p class=\"lw-none\">No fragmentation: reserved "
			     "stays near what the tensors need%s.</p>\n",
			pool->expandable
				? " (expandable_segments:True is on)" : "");
	fputs("<table class=\"lw-account\"><tr><th></th><th>allocated</th>"
	      "<th>reserved</th><th>free at the peak of allocated</th>"
	      "<th>outside the pool</th></tr>\n", out);
	fprintf(out, "<tr><td>the run's peak</td><td>%s</td><td>%s</td>"
		     "<td>%s</td><td>%s</td></tr>\n",
		lw_format_size(a, pool->peak_allocated),
		lw_format_size(b, pool->peak_reserved),
		lw_format_size(c, pool->free_at_peak),
		lw_format_size(e, pool->peak_outside));
	fprintf(out, "<tr><td>the end</td><td>%s</td><td>%s</td><td></td>"
		     "<td>%s</td></tr>\n",
		lw_format_size(a, pool->end_allocated),
		lw_format_size(b, pool->end_reserved),
		lw_format_size(c, pool->end_outside));
	for (size_t k = 0; k < POOL_ROWS && k < n; k++) {
		const struct lw_step_point *p =
			lw_model_point(m, lw_account_row(k, n, POOL_ROWS));

		fprintf(out, "<tr><td>step %" PRIu64 "</td><td>%s</td>"
			     "<td>%s</td><td>%s</td><td>%s</td></tr>\n",
			p->step, lw_format_size(a, p->peak_allocated_bytes),
			lw_format_size(b, p->peak_reserved_bytes),
			lw_format_size(c, p->free_at_peak_bytes),
			lw_format_size(e, p->peak_outside_bytes));
	}
	fprintf(out, "</table>\n<p class=\"lw-note\">In use on the device "
		     "at the most: %s (reserved plus outside the pool); the "
		     "device's total is not recorded. Steps show the most "
		     "within each step.</p>\n</div>\n",
		lw_format_size(a, pool->peak_in_use));
}

static int html_report(struct lw_render_run *run, const struct lw_report *r,
		       size_t index)
{
	FILE *out = run->out;
	const struct lw_report_options *options = run->options;
	const struct lw_result *res = lw_result_of(r);
	struct lw_timeline t;
	struct flame fl = { 0 };
	int rc;

	(void)options;
	if (!res)
		return -EINVAL;
	rc = lw_timeline_read(r, &t);
	if (rc == 0)
		rc = flame_build(&fl, res);
	if (rc < 0)
		goto out;
	fprintf(out, "<section class=\"lw-report\" id=\"lw-report-%zu\">\n", index);
	put_verdict(out, r, &res->findings);
	put_findings(out, r, res);
	put_pool(out, r);
	fputs("<h3>Device memory per step</h3>\n<div class=\"lw-memory\"></div>\n"
	      "<h3>Growth by location</h3>\n<div class=\"lw-sites\"></div>\n",
	      out);
	put_phase_list(out, r->model, &t);
	fputs("<h3>Retained device memory by stack</h3>\n", out);
	if (lw_model_point_count(r->model))
		fprintf(out, "<p class=\"lw-note\">Held at the end of the last step (step %" PRIu64 "), kept from step to step.</p>\n",
			lw_model_point(r->model, lw_model_point_count(r->model) - 1)->step);
	fputs("<div class=\"lw-flame\"></div>\n", out);
	put_summary(out, r, &res->findings);
	fputs("<script type=\"application/json\" class=\"lw-data\">{", out);
	put_steps(out, r->model);
	put_phases(out, r->model, &t);
	put_site_lines(out, r, res);
	fputs(",\"flame\":", out);
	flame_write(out, &fl, 0, fl.nodes[0].value / 1000, 0);
	fputs("}</script>\n</section>\n", out);
out:
	flame_fini(&fl);
	lw_timeline_fini(&t);
	return rc;
}

static const char html_head[] =
"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
"<title>leakwatch report</title>\n<style>\n"
"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}\n"
"code{font-family:monospace}\n"
".lw-summary{display:grid;grid-template-columns:max-content auto;gap:2px 1em}\n"
".lw-summary dt{color:#666}.lw-summary dd{margin:0}\n"
".lw-verdict-growing{color:#b00;font-weight:bold}\n"
"section.lw-report{border-top:2px solid #ccc;margin-top:1.5em}\n"
"svg text{font:11px sans-serif;fill:#333}\n"
".lw-flame svg text{font:11px monospace;pointer-events:none}\n"
".lw-flame rect{stroke:#fff;cursor:pointer}\n"
".lw-findings li{margin:.4em 0}.lw-fix{color:#064}\n"
".lw-legend{font:12px monospace}.lw-legend span{display:inline-block;width:1em;height:.6em;margin-right:.4em}\n"
".lw-none{color:#666}\n"
".lw-account td,.lw-account th{padding:0 .8em;text-align:right}\n"
".lw-breakdown summary{cursor:pointer;color:#555}.lw-breakdown li{margin:.3em 0}\n"
".lw-stack{list-style:none;padding-left:1.5em;margin:.1em 0;font-size:12px}\n"
"</style></head><body>\n<h1>leakwatch report</h1>\n";

/* The charts, built from each section's JSON with DOM calls only. */
static const char *const html_script[] = {
	"<script>\n",
	"(function(){'use strict';\n",
	"var NS='http://www.w3.org/2000/svg';\n",
	"var COLORS=['#d62728','#1f77b4','#2ca02c','#ff7f0e','#9467bd','#8c564b','#e377c2','#17becf'];\n",
	"function el(n,a,p){var e=document.createElementNS(NS,n);for(var k in a)e.setAttribute(k,a[k]);if(p)p.appendChild(e);return e;}\n",
	"function txt(p,x,y,s,a){var t=el('text',Object.assign({x:x,y:y},a||{}),p);t.textContent=s;return t;}\n",
	"function size(b){var u=['B','KiB','MiB','GiB','TiB'],i=0;while(b>=1024&&i<u.length-1){b/=1024;i++;}return (i?b.toFixed(1):b)+' '+u[i];}\n",
	"function plot(box,steps,series,phases,peak,name){\n",
	" var W=1100,H=300,L=80,R=20,T=20,B=40;\n",
	" var svg=el('svg',{width:W,height:H,viewBox:'0 0 '+W+' '+H,'data-lw-chart':name},null);\n",
	" var x0=0,x1=1,ymax=1;\n",
	" if(steps.length){x1=Math.max(steps[steps.length-1],1);}\n",
	" series.forEach(function(s){s.values.forEach(function(v){if(v>ymax)ymax=v;});});\n",
	" if(peak&&peak.bytes>ymax)ymax=peak.bytes;\n",
	" function X(s){return L+(s-x0)/(x1-x0||1)*(W-L-R);}\n",
	" function Y(v){return H-B-v/ymax*(H-T-B);}\n",
	" (phases||[]).forEach(function(p,i){var r=el('rect',{x:X(p.begin),y:T+p.depth*4,width:Math.max(X(p.end)-X(p.begin),1),height:H-T-B-p.depth*4,fill:'#f2c14e','fill-opacity':0.18,'class':'lw-phase'},svg);var t=el('title',{},r);t.textContent=p.name+' (steps '+p.begin+'-'+p.end+')';if(X(p.end)-X(p.begin)>40)txt(svg,X(p.begin)+2,T+10+p.depth*12,p.name);});\n",
	" el('line',{x1:L,y1:H-B,x2:W-R,y2:H-B,stroke:'#999'},svg);el('line',{x1:L,y1:T,x2:L,y2:H-B,stroke:'#999'},svg);\n",
	" for(var i=0;i<=4;i++){var v=ymax*i/4;txt(svg,L-6,Y(v)+4,size(v),{'text-anchor':'end'});el('line',{x1:L,x2:W-R,y1:Y(v),y2:Y(v),stroke:'#eee'},svg);}\n",
	" txt(svg,L,H-B+16,'step '+x0);txt(svg,W-R,H-B+16,'step '+x1,{'text-anchor':'end'});\n",
	" series.forEach(function(s,k){if(!s.values.length)return;var pts=s.values.map(function(v,i){return X(steps[i]).toFixed(1)+','+Y(v).toFixed(1);}).join(' ');\n",
	"  el('polyline',{points:pts,fill:'none',stroke:s.color||COLORS[k%COLORS.length],'stroke-width':s.width||1.5,'stroke-dasharray':s.dash||'','class':'lw-line'},svg);});\n",
	" if(peak&&peak.bytes&&steps.length){var ps=Math.min(Math.max(peak.step,steps[0]),x1);var c=el('circle',{cx:X(ps),cy:Y(peak.bytes),r:4,fill:'#b00','class':'lw-peak'},svg);\n",
	"  var right=X(ps)>W/2;txt(svg,X(ps)+(right?-8:8),Math.max(Y(peak.bytes)-6,T+10),'peak '+size(peak.bytes)+' at step '+peak.step,{'text-anchor':right?'end':'start'});}\n",
	" box.appendChild(svg);\n",
	" var lg=document.createElement('div');lg.className='lw-legend';series.forEach(function(s,k){var d=document.createElement('div');var sw=document.createElement('span');sw.style.background=s.color||COLORS[k%COLORS.length];d.appendChild(sw);d.appendChild(document.createTextNode(s.label));lg.appendChild(d);});box.appendChild(lg);\n",
	"}\n",
	"function icicle(box,root){\n",
	" var W=1100,RH=18,depth=0;(function d(n,k){if(k>depth)depth=k;n.c.forEach(function(c){d(c,k+1);});})(root,0);\n",
	" var svg=el('svg',{width:W,height:(depth+1)*RH,'data-lw-chart':'flame'},null);\n",
	" function draw(n,x,w,k){if(w<0.5)return;var g=el('g',{'class':'lw-flame-node'},svg);\n",
	"  var h=(n.n.length*7)%360;var r=el('rect',{x:x,y:k*RH,width:w,height:RH-1,fill:k?'hsl('+h+',70%,75%)':'#ccc'},g);\n",
	"  var t=el('title',{},g);t.textContent=n.n+'\\n'+size(n.v)+' ('+(100*n.v/(root.v||1)).toFixed(1)+'%)';\n",
	"  if(w>40){var s=n.n;var max=Math.floor((w-6)/7);if(s.length>max)s=s.slice(0,Math.max(max-1,1))+'\\u2026';txt(g,x+3,k*RH+13,s);}\n",
	"  var cx=x;n.c.forEach(function(c){var cw=n.v?w*c.v/n.v:0;draw(c,cx,cw,k+1);cx+=cw;});}\n",
	" draw(root,0,W,0);box.appendChild(svg);\n",
	"}\n",
	"document.querySelectorAll('script.lw-data').forEach(function(s){\n",
	" var d=JSON.parse(s.textContent),sec=s.parentNode;\n",
	" var steps=d.steps.map(function(p){return p[0];});\n",
	" var mem=sec.querySelector('.lw-memory'),sites=sec.querySelector('.lw-sites'),fl=sec.querySelector('.lw-flame');\n",
	" if(steps.length){plot(mem,steps,[{label:'device memory at step end',values:d.steps.map(function(p){return p[1];}),color:'#1f77b4',width:2},{label:'peak within the step',values:d.steps.map(function(p){return p[2];}),color:'#aaa',dash:'4 3'}],d.phases,d.peak,'memory');}\n",
	" else{var p=document.createElement('p');p.className='lw-none';p.textContent='No step marks: mark steps (see README) to see memory per step.';mem.appendChild(p);}\n",
	" if(steps.length&&d.sites.length){plot(sites,steps,d.sites.map(function(x){return {label:x.label+' ('+x.verdict+(x.verdict==='growing'?', '+size(Math.abs(x.rate))+' per step':'')+(x.sites>1?', '+x.sites+' sites':'')+')',values:x.points};}),null,null,'sites');}\n",
	" else{var q=document.createElement('p');q.className='lw-none';q.textContent='No per-site series.';sites.appendChild(q);}\n",
	" if(d.flame.v){icicle(fl,d.flame);}else{var e=document.createElement('p');e.className='lw-none';e.textContent='No device memory retained.';fl.appendChild(e);}\n",
	"});\n",
	"document.body.setAttribute('data-lw-rendered','1');\n",
	"})();\n",
	"</script>\n",
};

static int html_begin(struct lw_render_run *run)
{
	fputs(html_head, run->out);
	return 0;
}

static int html_end(struct lw_render_run *run)
{
	FILE *out = run->out;

	for (size_t i = 0; i < sizeof(html_script) / sizeof(html_script[0]); i++)
		fputs(html_script[i], out);
	fputs("</body></html>\n", out);
	return 0;
}

const struct lw_renderer lw_html_renderer = {
	.name = "html",
	.needs = LW_RESULT_FINDINGS | LW_RESULT_RETAINED | LW_RESULT_POOL |
		 LW_RESULT_BREAKDOWN | LW_RESULT_CHART,
	.begin = html_begin,
	.report = html_report,
	.end = html_end,
};
