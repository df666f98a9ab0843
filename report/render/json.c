/* SPDX-License-Identifier: MIT */
/*
 * The JSON report: `leakwatch report --format json` (and `leakwatch run
 * --format json`). Its documentation is its JSON Schema,
 * docs/report.schema.json: every field, its type and meaning, in the order
 * written here. Fields are only added, at the end of an object, within a
 * schema version ("schema_version"); removing, renaming or giving a field
 * another meaning is a new version. The report tests validate every output
 * against the schema, so a field written here and not there fails them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "render.h"
#include "result.h"
#include "torch.h"

static void newline(FILE *out, unsigned indent)
{
	putc('\n', out);
	for (unsigned i = 0; i < indent; i++)
		putc(' ', out);
}

static void put_key(FILE *out, unsigned indent, const char *key)
{
	newline(out, indent);
	fprintf(out, "\"%s\": ", key);
}

static void put_str(FILE *out, const char *s);

/* "step_loop": where steps of source loop or line come from, or null. */
static void put_step_loop(FILE *out, const struct lw_model *m,
			  unsigned indent)
{
	char file[1024], function[512];
	long line;

	put_key(out, indent, "step_loop");
	if (!lw_model_step_loop(m, file, sizeof(file), &line, function,
				sizeof(function))) {
		fputs("null,", out);
		return;
	}
	fputs("{\"file\":", out);
	put_str(out, file);
	fprintf(out, ",\"line\":%ld,\"function\":", line);
	put_str(out, function);
	fputs("},", out);
}

static void put_str(FILE *out, const char *s)
{
	lw_put_json_string(out, s, strlen(s));
}

static void put_bytes_or_null(FILE *out, const struct lw_bytes *b)
{
	if (b)
		lw_put_json_string(out, b->data, b->len);
	else
		fputs("null", out);
}

static void put_torch(FILE *out, const struct lw_model *m)
{
	const struct lw_torch_memory *torch = lw_model_torch(m);
	struct lw_torch_view t;

	lw_torch_view(m, &t);
	if (!t.present) {
		fputs("null", out);
		return;
	}
	fputs("{\"conf\": ", out);
	put_bytes_or_null(out, t.conf);
	fputs(", \"source\": ", out);
	put_bytes_or_null(out, t.source);
	fprintf(out, ", \"tensors_visible\": %s, \"expandable_segments\": %s",
		t.tensors_visible ? "true" : "false",
		t.expandable_segments ? "true" : "false");
	fprintf(out, ", \"blocks\": %" PRIu64 ", \"segments\": %" PRIu64
		     ", \"allocated_bytes_at_end\": %" PRIu64
		     ", \"reserved_bytes_at_end\": %" PRIu64
		     ", \"peak_allocated_bytes\": %" PRIu64
		     ", \"peak_reserved_bytes\": %" PRIu64,
		torch->blocks, torch->segments, torch->allocated_bytes,
		torch->reserved_bytes, torch->peak_allocated_bytes,
		torch->peak_reserved_bytes);
	if (lw_model_has_program_end(m))
		fprintf(out, ", \"allocated_bytes_at_program_end\": %" PRIu64
			     ", \"reserved_bytes_at_program_end\": %" PRIu64 "}",
			torch->program_end_allocated,
			torch->program_end_reserved);
	else
		fputs(", \"allocated_bytes_at_program_end\": null"
		      ", \"reserved_bytes_at_program_end\": null}", out);
}

static void put_command(FILE *out, const struct lw_model *m)
{
	const struct lw_bytes *cmdline = lw_model_info(m, "cmdline");
	size_t start = 0, len = cmdline ? cmdline->len : 0;

	putc('[', out);
	if (len && cmdline->data[len - 1] == 0)
		len--;
	for (size_t i = 0; cmdline && cmdline->len && i <= len; i++) {
		if (i < len && cmdline->data[i] != 0)
			continue;
		if (start)
			fputs(", ", out);
		lw_put_json_string(out, cmdline->data + start, i - start);
		start = i + 1;
	}
	putc(']', out);
}

static void put_totals(FILE *out, const struct lw_totals *t)
{
	fprintf(out, "{\"live_bytes\": %" PRIu64 ", \"live_count\": %" PRIu64 ", \"allocations\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64 "}",
		t->live_bytes, t->live_count, t->allocations,
		t->bytes_allocated);
}

/* "folded": the name of the run the frame folds into by default (mark,
 * the result's name of its fold mark), or null. */
static void put_folded(FILE *out, const char *mark, size_t len)
{
	fputs(", \"folded\": ", out);
	if (!mark)
		fputs("null", out);
	else
		lw_put_json_string(out, mark, len);
}

/* A frame object; tail (keys of a location) goes before its '}'. */
static void put_frame_with(FILE *out, const struct lw_symbol *sym,
			   const struct lw_sym_frame *f, const char *mark,
			   size_t mark_len, const char *tail)
{
	fputs("{\"function\": ", out);
	if (f->function)
		put_str(out, f->function);
	else
		fputs("null", out);
	fputs(", \"file\": ", out);
	if (f->file)
		put_str(out, f->file);
	else
		fputs("null", out);
	if (f->line)
		fprintf(out, ", \"line\": %u", f->line);
	else
		fputs(", \"line\": null", out);
	fputs(", \"python\": false, \"module\": ", out);
	if (sym->module)
		put_str(out, sym->module);
	else
		fputs("null", out);
	fprintf(out, ", \"address\": \"0x%" PRIx64 "\", \"module_offset\": ",
		sym->address);
	if (sym->module)
		fprintf(out, "\"0x%" PRIx64 "\"", sym->offset);
	else
		fputs("null", out);
	put_folded(out, mark, mark_len);
	fprintf(out, "%s}", tail);
}

static void put_pyframe_with(FILE *out, const struct lw_model *m,
			     const struct lw_trace_pyframe *f, const char *tail)
{
	struct lw_bytes function, file;

	lw_model_pyframe_names(m, f, &function, &file);
	fputs("{\"function\": ", out);
	put_bytes_or_null(out, function.data ? &function : NULL);
	fputs(", \"file\": ", out);
	put_bytes_or_null(out, file.data ? &file : NULL);
	if (f->line > 0)
		fprintf(out, ", \"line\": %" PRId64, f->line);
	else
		fputs(", \"line\": null", out);
	fprintf(out, ", \"python\": true, \"module\": null, \"address\": null, \"module_offset\": null, \"folded\": null%s}",
		tail);
}

static void put_pyframe(FILE *out, const struct lw_model *m,
			const struct lw_trace_pyframe *f)
{
	put_pyframe_with(out, m, f, "");
}

/* A location: a frame object, with "in_backward" and "autograd_node"
 * after its keys; of the stack it points into. */
static void put_location(FILE *out, const struct lw_report *r,
			 const struct lw_result *res,
			 const struct lw_result_stack *rs)
{
	const struct lw_location *loc = &rs->st.location;
	const char *mark;
	size_t mark_len = 0;
	char tail[128];

	/* A node name is made of identifier characters (location.c). */
	if (loc->autograd_node[0])
		snprintf(tail, sizeof(tail),
			 ", \"in_backward\": %s, \"autograd_node\": \"%s\"",
			 loc->in_backward ? "true" : "false",
			 loc->autograd_node);
	else
		snprintf(tail, sizeof(tail),
			 ", \"in_backward\": %s, \"autograd_node\": null",
			 loc->in_backward ? "true" : "false");
	if (loc->frame->python) {
		put_pyframe_with(out, r->model, loc->frame->py, tail);
		return;
	}
	/* Its "folded" as in the stack's frames. */
	mark = lw_result_mark(res, rs, (size_t)(loc->frame - rs->st.frames),
			      &mark_len);
	put_frame_with(out, loc->symbol, &loc->symbol->frames[0], mark,
		       mark_len, tail);
}

static void put_count_or_null(FILE *out, bool known, uint64_t n)
{
	if (known)
		fprintf(out, "%" PRIu64 ",", n);
	else
		fputs("null,", out);
}

static void put_frames(FILE *out, const struct lw_report *r,
		       const struct lw_result *res,
		       const struct lw_result_stack *rs, unsigned indent)
{
	const struct lw_frame *frames = rs->st.frames;
	bool first = true;

	putc('[', out);
	for (size_t i = 0; i < rs->st.count; i++) {
		const struct lw_symbol *sym = rs->symbols[i];
		const char *mark;
		size_t mark_len = 0;

		if (frames[i].python) {
			if (!first)
				putc(',', out);
			newline(out, indent + 2);
			put_pyframe(out, r->model, frames[i].py);
			first = false;
			continue;
		}
		mark = lw_result_mark(res, rs, i, &mark_len);
		for (unsigned j = 0; j < sym->frame_count; j++) {
			if (!first)
				putc(',', out);
			newline(out, indent + 2);
			put_frame_with(out, sym, &sym->frames[j], mark, mark_len,
				       "");
			first = false;
		}
	}
	if (!first)
		newline(out, indent);
	putc(']', out);
}

/* Where the Python code came from, as the interpreter said (PYPATH). */
static void put_pypaths(FILE *out, const struct lw_model *m, unsigned indent)
{
	const struct lw_trace_meta *meta = lw_model_meta(m);

	putc('[', out);
	for (size_t i = 0; i < meta->pypath_count; i++) {
		const struct lw_pypath *p = &meta->pypaths[i];
		const struct lw_string *path = lw_model_string(m, p->path);
		const struct lw_string *name = lw_model_string(m, p->name);

		if (i)
			putc(',', out);
		newline(out, indent + 2);
		fprintf(out, "{\"kind\": \"%s\", \"path\": ",
			lw_pypath_kind_name(p->kind));
		put_bytes_or_null(out, path ? &path->text : NULL);
		fputs(", \"name\": ", out);
		put_bytes_or_null(out, name ? &name->text : NULL);
		putc('}', out);
	}
	if (meta->pypath_count)
		newline(out, indent);
	putc(']', out);
}

/* A rate: a JSON number, never "-0". */
static void put_rate(FILE *out, double rate)
{
	fprintf(out, "%.10g", rate == 0 ? 0.0 : rate);
}

static int put_site(FILE *out, const struct lw_report *r,
		    const struct lw_growth_report *g,
		    const struct lw_diagnosis *d, uint32_t site,
		    unsigned indent)
{
	const struct lw_site_diagnosis *sd = &d->sites[site];
	const struct lw_finding *finding = sd->finding < d->finding_count
						   ? &d->findings[sd->finding]
						   : NULL;
	const struct lw_site_growth *sg = &g->sites[site];
	const struct lw_model *m = r->model;
	const struct lw_site *s = lw_model_site(m, site);
	struct lw_totals t = lw_model_site_totals(m, site);
	struct lw_live_count end = lw_model_site_live_at_end(m, site);
	struct lw_live_count at_mark;
	bool have_mark = lw_model_site_live_at_program_end(m, site, &at_mark);
	const struct lw_result *res = lw_result_of(r);
	const struct lw_result_stack *rs = lw_result_stack(res, site);

	if (!rs || !rs->full)
		return -EINVAL;
	newline(out, indent);
	putc('{', out);
	put_key(out, indent + 2, "id");
	fprintf(out, "%" PRIu64 ",", s->stack_id);
	put_key(out, indent + 2, "kind");
	fprintf(out, "\"%s\",", lw_kind_name(s->kind));
	put_key(out, indent + 2, "live_bytes");
	fprintf(out, "%" PRIu64 ",", t.live_bytes);
	put_key(out, indent + 2, "live_count");
	fprintf(out, "%" PRIu64 ",", t.live_count);
	put_key(out, indent + 2, "allocations");
	fprintf(out, "%" PRIu64 ",", t.allocations);
	put_key(out, indent + 2, "bytes_allocated");
	fprintf(out, "%" PRIu64 ",", t.bytes_allocated);
	put_key(out, indent + 2, "frames");
	put_frames(out, r, res, rs, indent + 2);
	putc(',', out);
	put_key(out, indent + 2, "location");
	if (!rs->st.location.frame)
		fputs("null", out);
	else
		put_location(out, r, res, rs);
	putc(',', out);
	put_key(out, indent + 2, "native_thread");
	fputs(lw_model_site_native_thread(m, site) ? "true," : "false,", out);
	put_key(out, indent + 2, "live_bytes_at_program_end");
	put_count_or_null(out, have_mark, at_mark.live_bytes);
	put_key(out, indent + 2, "live_count_at_program_end");
	put_count_or_null(out, have_mark, at_mark.live_count);
	put_key(out, indent + 2, "live_bytes_at_end");
	fprintf(out, "%" PRIu64 ",", end.live_bytes);
	put_key(out, indent + 2, "live_count_at_end");
	fprintf(out, "%" PRIu64 ",", end.live_count);
	put_key(out, indent + 2, "growth_bytes_per_step");
	put_rate(out, sg->bytes_per_step);
	putc(',', out);
	put_key(out, indent + 2, "growth_count_per_step");
	put_rate(out, sg->count_per_step);
	putc(',', out);
	put_key(out, indent + 2, "verdict");
	fprintf(out, "\"%s\",", lw_verdict_name(sg->verdict));
	put_key(out, indent + 2, "category");
	if (sd->category == LW_CATEGORY_NONE)
		fputs("null,", out);
	else
		fprintf(out, "\"%s\",", lw_result_category(res, sd->category));
	put_key(out, indent + 2, "fix");
	if (finding && lw_finding_has_fix(finding))
		put_str(out, finding->fix);
	else
		fputs("null", out);
	putc(',', out);
	put_key(out, indent + 2, "held_bytes");
	fprintf(out, "%" PRIu64 ",", sg->held_bytes);
	put_key(out, indent + 2, "held_count");
	fprintf(out, "%" PRIu64 ",", sg->held_count);
	put_key(out, indent + 2, "held_at_step");
	fprintf(out, "%" PRIu64 ",", sg->held_step);
	put_key(out, indent + 2, "retained_bytes");
	fprintf(out, "%" PRIu64 ",", rs->retained);
	put_key(out, indent + 2, "leaked");
	fputs(rs->leaked ? "true," : "false,", out);
	put_key(out, indent + 2, "released");
	fputs(sg->released ? "true" : "false", out);
	newline(out, indent);
	putc('}', out);
	return 0;
}

/* The location of a site's stack (see "location"), or null. */
static int put_site_location(FILE *out, const struct lw_report *r,
			     uint32_t site)
{
	const struct lw_result *res = lw_result_of(r);
	const struct lw_result_stack *rs = lw_result_stack(res, site);

	if (!rs)
		return -EINVAL;
	if (!rs->st.location.frame)
		fputs("null", out);
	else
		put_location(out, r, res, rs);
	return 0;
}

/*
 * The sites grouped by location, largest live_bytes first: each location's
 * sums, the most urgent verdict and the first category among its sites,
 * and the ids of its sites (as in "sites"): the result's.
 */
static int put_locations(FILE *out, const struct lw_report *r,
			 const struct lw_result *res, unsigned indent)
{
	const struct lw_model *m = r->model;
	size_t nsums = lw_result_location_sum_count(res);
	int rc = 0;

	putc('[', out);
	for (size_t i = 0; i < nsums && rc == 0; i++) {
		const struct lw_result_location_sum *ls =
			lw_result_location_sum(res, i);
		const struct lw_location_sum *s = &ls->sum;

		if (i)
			putc(',', out);
		newline(out, indent + 2);
		fputs("{\"location\": ", out);
		if ((rc = put_site_location(out, r, s->lead)) < 0)
			break;
		fprintf(out, ", \"kind\": \"%s\", \"live_bytes\": %" PRIu64 ", \"live_count\": %" PRIu64 ", \"growth_bytes_per_step\": ",
			lw_kind_name(lw_model_site(m, s->lead)->kind), s->bytes,
			s->count);
		put_rate(out, s->rate);
		fprintf(out, ", \"verdict\": \"%s\", \"category\": ",
			lw_verdict_name(ls->verdict));
		if (ls->category == LW_CATEGORY_NONE)
			fputs("null", out);
		else
			fprintf(out, "\"%s\"",
				lw_result_category(res, ls->category));
		fputs(", \"sites\": [", out);
		for (size_t j = 0; j < ls->site_count; j++)
			fprintf(out, "%s%" PRIu64, j ? ", " : "",
				lw_model_site(m, lw_result_report_site(
						 res, ls->sites[j]))->stack_id);
		fputs("]}", out);
	}
	if (rc == 0) {
		if (nsums)
			newline(out, indent);
		putc(']', out);
	}
	return rc;
}

/* {"id", "kind", "bytes", "count", "location"}: a site's share. */
static int put_share(FILE *out, const struct lw_report *r,
		     const struct lw_site_share *sh, bool with_count,
		     unsigned indent)
{
	const struct lw_site *s = lw_model_site(r->model, sh->site);
	int rc;

	newline(out, indent);
	fprintf(out, "{\"id\": %" PRIu64 ", \"kind\": \"%s\", \"bytes\": %" PRIu64,
		s->stack_id, lw_kind_name(s->kind), sh->bytes);
	if (with_count)
		fprintf(out, ", \"count\": %" PRIu64, sh->count);
	fputs(", \"location\": ", out);
	if ((rc = put_site_location(out, r, sh->site)) < 0)
		return rc;
	putc('}', out);
	return 0;
}

/* At most this many sites in a list of shares; "more_sites" counts the rest. */
#define SHARES_MAX 20

static int put_shares(FILE *out, const struct lw_report *r,
		      const struct lw_shares *shares, bool with_count,
		      unsigned indent)
{
	struct lw_shares sorted = { 0 };
	size_t n = 0;
	int rc = 0;

	/* Suppressed sites are left out of every list. */
	for (size_t i = 0; i < shares->count; i++)
		n += (shares->items[i].count > 0 || shares->items[i].bytes > 0) &&
		     !lw_model_site_suppressed(r->model, shares->items[i].site);
	if (n) {
		sorted.items = malloc(n * sizeof(*sorted.items));
		if (!sorted.items)
			return -ENOMEM;
		for (size_t i = 0; i < shares->count; i++)
			if ((shares->items[i].count || shares->items[i].bytes) &&
			    !lw_model_site_suppressed(r->model,
						      shares->items[i].site))
				sorted.items[sorted.count++] = shares->items[i];
		lw_shares_sort(&sorted);
	}
	putc('[', out);
	for (size_t i = 0; i < sorted.count && i < SHARES_MAX && rc == 0; i++) {
		if (i)
			putc(',', out);
		rc = put_share(out, r, &sorted.items[i], with_count, indent + 2);
	}
	if (sorted.count)
		newline(out, indent);
	fprintf(out, "], \"more_sites\": %zu",
		sorted.count > SHARES_MAX ? sorted.count - SHARES_MAX : 0);
	free(sorted.items);
	return rc;
}

static int put_phases(FILE *out, const struct lw_report *r, unsigned indent)
{
	const struct lw_model *m = r->model;
	const struct lw_trace_meta *meta = lw_model_meta(m);
	bool first = true;
	int rc = 0;

	putc('[', out);
	for (size_t i = 0; i < meta->string_count && rc == 0; i++) {
		const struct lw_string *s = &meta->strings[i];
		const struct lw_phase *ph = lw_model_phase(m, s->id);
		static const struct lw_phase none;

		if (!s->phase_begins)
			continue;
		if (!ph)
			ph = &none;
		if (!first)
			putc(',', out);
		newline(out, indent + 2);
		fputs("{\"name\": ", out);
		lw_put_json_string(out, s->text.data, s->text.len);
		fprintf(out, ", \"begins\": %" PRIu64 ", \"ends\": %" PRIu64
			     ", \"surviving_bytes\": %" PRIu64
			     ", \"surviving_count\": %" PRIu64 ", \"sites\": ",
			s->phase_begins, ph->instances, ph->surviving_bytes,
			ph->surviving_count);
		rc = put_shares(out, r, &ph->sites, true, indent + 2);
		putc('}', out);
		first = false;
	}
	if (!first)
		newline(out, indent);
	putc(']', out);
	return rc;
}

static int put_lingering(FILE *out, const struct lw_report *r,
			 const struct lw_lingering *l, unsigned indent)
{
	fprintf(out, "{\"step\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
		     ", \"lingering_bytes\": %" PRIu64 ", \"sites\": ",
		l->step, l->peak_bytes, l->bytes);
	int rc = put_shares(out, r, &l->sites, false, indent);

	putc('}', out);
	return rc;
}

static int put_oom(FILE *out, const struct lw_report *r, unsigned indent)
{
	const struct lw_oom *o = lw_model_oom(r->model);
	int rc;

	if (!o->seen) {
		fputs("null", out);
		return 0;
	}
	fprintf(out, "{\"count\": %" PRIu64 ", \"size\": %" PRIu64
		     ", \"allocated\": %" PRIu64 ", \"reserved\": %" PRIu64
		     ", \"device\": %" PRId64 ", \"step\": %" PRIu64
		     ", \"live_bytes\": %" PRIu64 ", \"live_count\": %" PRIu64
		     ", \"tracked_allocated\": %" PRIu64
		     ", \"tracked_reserved\": %" PRIu64 ",",
		o->count, o->size, o->allocated, o->reserved, o->device,
		o->steps, o->live_device_bytes, o->live_device_count,
		o->tracked_allocated, o->tracked_reserved);
	put_key(out, indent + 2, "sites");
	if ((rc = put_shares(out, r, &o->live, true, indent + 2)) < 0)
		return rc;
	putc(',', out);
	put_key(out, indent + 2, "grew");
	fputs("{\"sites\": ", out);
	rc = put_shares(out, r, &o->grew, true, indent + 2);
	putc('}', out);
	newline(out, indent);
	putc('}', out);
	return rc;
}

static int put_peak_attribution(FILE *out, const struct lw_report *r,
				unsigned indent)
{
	const struct lw_model *m = r->model;
	const struct lw_peak *peak = lw_model_peak(m);
	uint32_t *sites;
	size_t count;
	int rc;

	if (!peak->have_worst) {
		fputs("null", out);
		return 0;
	}
	rc = lw_model_lingering_sites(m, &sites, &count);
	if (rc < 0)
		return rc;
	putc('{', out);
	put_key(out, indent + 2, "lingering_steps");
	fprintf(out, "%" PRIu64 ",", peak->lingering_steps);
	put_key(out, indent + 2, "at_highest_peak");
	if ((rc = put_lingering(out, r, &peak->worst, indent + 2)) < 0)
		goto out;
	putc(',', out);
	put_key(out, indent + 2, "most_lingering");
	if (peak->most.bytes == 0)
		fputs("null", out);
	else if ((rc = put_lingering(out, r, &peak->most,
				     indent + 2)) < 0)
		goto out;
	putc(',', out);
	put_key(out, indent + 2, "sites");
	putc('[', out);
	for (size_t i = 0; i < count && i < SHARES_MAX && rc == 0; i++) {
		const struct lw_site *s = lw_model_site(m, sites[i]);

		if (i)
			putc(',', out);
		newline(out, indent + 4);
		fprintf(out, "{\"id\": %" PRIu64 ", \"kind\": \"%s\", \"steps\": %" PRIu64
			     ", \"max_bytes\": %" PRIu64 ", \"mean_bytes\": %" PRIu64
			     ", \"location\": ",
			s->stack_id, lw_kind_name(s->kind), s->lingering_steps,
			s->lingering_max,
			s->lingering_total / s->lingering_steps);
		rc = put_site_location(out, r, sites[i]);
		putc('}', out);
	}
	if (count)
		newline(out, indent + 2);
	fprintf(out, "], \"more_sites\": %zu",
		count > SHARES_MAX ? count - SHARES_MAX : 0);
	newline(out, indent);
	putc('}', out);
out:
	free(sites);
	return rc;
}

static void put_evidence(FILE *out, const struct lw_finding *f,
			 const struct lw_result_diagnosed *dd)
{
	const struct lw_evidence *ev = &f->evidence;

	fputs("{\"bytes_per_step\": ", out);
	put_rate(out, ev->bytes_per_step);
	fputs(", \"count_per_step\": ", out);
	put_rate(out, ev->count_per_step);
	fprintf(out, ", \"live_bytes\": %" PRIu64 ", \"live_count\": %" PRIu64
		     ", \"mean_size\": %" PRIu64 ", \"frees\": %" PRIu64
		     ", \"mean_lifetime_steps\": ",
		ev->live_bytes, ev->live_count, ev->mean_size, ev->frees);
	put_rate(out, ev->mean_lifetime);
	fprintf(out, ", \"max_lifetime_steps\": %" PRIu64 ", \"gc_frees\": %" PRIu64
		     ", \"gc_passes\": %" PRIu64 ", \"lingering_steps\": %" PRIu64
		     ", \"lingering_bytes\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
		     ", \"phase_bytes\": %" PRIu64 ", \"sites\": %" PRIu32,
		ev->max_lifetime,
		ev->gc_frees, ev->gc_passes, ev->lingering_steps,
		ev->lingering_bytes, ev->peak_bytes, ev->phase_bytes,
		ev->sites);
	/* What it held at step ends, and whether (and where) it was let
	 * go after the last step. */
	fprintf(out, ", \"lingering_mean_bytes\": %" PRIu64
		     ", \"typical_peak_bytes\": %" PRIu64,
		ev->lingering_mean_bytes, ev->typical_peak_bytes);
	fprintf(out, ", \"held_bytes\": %" PRIu64 ", \"held_count\": %" PRIu64
		     ", \"held_at_step\": %" PRIu64 ", \"released\": %s"
		     ", \"released_when\": ",
		ev->held_bytes, ev->held_count, ev->held_step,
		ev->released ? "true" : "false");
	if (dd->released_when) {
		fputs("{\"function_returned\": ", out);
		lw_put_json_string(out, dd->released_when,
				   dd->released_when_len);
		putc('}', out);
	} else {
		fputs("null", out);
	}
	fprintf(out, ", \"allocated_bytes\": %" PRIu64 "}", ev->bytes_allocated);
}

/* Device memory by the API, device and stream it was allocated with. */
static void put_contexts(FILE *out, const struct lw_model *m,
			 unsigned indent)
{
	size_t n = lw_model_context_count(m), shown = 0;

	putc('[', out);
	for (size_t i = 0; i < n; i++) {
		const struct lw_context_totals *c = lw_model_context(m, i);
		struct lw_live_count live = lw_model_context_live(m, i);

		/* Contexts of host memory only. */
		if (c->totals.allocations == 0)
			continue;
		if (shown++)
			putc(',', out);
		newline(out, indent + 2);
		fputs("{\"api\": ", out);
		if (c->other)
			fputs("\"other\"", out);
		else
			put_str(out, c->api ? lw_api_name(c->api) : "unknown");
		if (c->device < 0 || c->other)
			fputs(", \"device\": null", out);
		else
			fprintf(out, ", \"device\": %" PRId64, c->device);
		if (c->other)
			fputs(", \"stream\": null", out);
		else
			fprintf(out, ", \"stream\": %" PRIu64, c->stream);
		fprintf(out, ", \"live_bytes\": %" PRIu64
			     ", \"live_count\": %" PRIu64
			     ", \"allocations\": %" PRIu64
			     ", \"bytes_allocated\": %" PRIu64 "}",
			live.live_bytes, live.live_count, c->totals.allocations,
			c->totals.bytes_allocated);
	}
	if (shown)
		newline(out, indent);
	putc(']', out);
}

/* A finding's "lines": the location of each line its sites are at, the
 * lead's first, then by growth. */
static int put_lines(FILE *out, const struct lw_report *r,
		     const struct lw_result_diagnosed *dd)
{
	int rc = 0;

	fputs(", \"lines\": [", out);
	for (size_t i = 0; i < dd->line_count && rc == 0; i++) {
		if (i)
			fputs(", ", out);
		rc = put_site_location(out, r, dd->lines[i]);
	}
	putc(']', out);
	return rc;
}

/* A finding's "held_by": the holders found for its sites. */
static void put_held_by(FILE *out, const struct lw_held_by *held)
{
	fputs(", \"held_by\": [", out);
	for (size_t i = 0; i < held->count; i++) {
		const struct lw_held *e = &held->items[i];
		const struct lw_holder *h = e->holder;

		fputs(i ? ", {\"path\": " : "{\"path\": ", out);
		lw_put_json_string(out, e->path, e->path_len);
		fputs(", \"root\": ", out);
		lw_put_json_string(out, e->root, e->root_len);
		fprintf(out, ", \"objects\": %" PRIu64 ", \"graph_nodes\": %" PRIu64
			     ", \"cut\": %s, \"fix\": ",
			h->objects, h->graph,
			h->flags & LW_HOLDER_CUT ? "true" : "false");
		put_str(out, e->fix);
		putc('}', out);
	}
	putc(']', out);
}

static int put_findings(FILE *out, const struct lw_report *r,
			const struct lw_diagnosis *d, unsigned indent)
{
	const struct lw_model *m = r->model;
	const struct lw_result *res = lw_result_of(r);
	int rc = 0;

	putc('[', out);
	for (size_t i = 0; i < d->finding_count && rc == 0; i++) {
		const struct lw_finding *f = &d->findings[i];
		const struct lw_result_diagnosed *dd = lw_result_diagnosed(res, i);
		const struct lw_site *s = lw_model_site(m, f->site);
		const struct lw_string *phase =
			f->evidence.phase_string
				? lw_model_string(m, f->evidence.phase_string)
				: NULL;

		if (i)
			putc(',', out);
		newline(out, indent + 2);
		fprintf(out, "{\"category\": \"%s\", \"leak\": %s, \"confidence\": \"%s\", \"suppressed\": %s, \"site\": %" PRIu64
			     ", \"kind\": \"%s\", \"location\": ",
			lw_result_category(res, f->category),
			f->leak ? "true" : "false",
			lw_result_confidence(res, f->confidence),
			f->suppressed ? "true" : "false", s->stack_id,
			lw_kind_name(s->kind));
		if ((rc = put_site_location(out, r, f->site)) < 0)
			break;
		fputs(", \"reason\": ", out);
		put_str(out, f->reason);
		fputs(", \"fix\": ", out);
		if (lw_finding_has_fix(f))
			put_str(out, f->fix);
		else
			fputs("null", out);
		fputs(", \"phase\": ", out);
		if (phase)
			lw_put_json_string(out, phase->text.data,
					   phase->text.len);
		else
			fputs("null", out);
		fputs(", \"evidence\": ", out);
		put_evidence(out, f, dd);
		put_held_by(out, &dd->held);
		if ((rc = put_lines(out, r, dd)) < 0)
			break;
		putc('}', out);
	}
	if (d->finding_count)
		newline(out, indent);
	putc(']', out);
	return rc;
}

static void put_failed_allocations(FILE *out, const struct lw_model *m)
{
	const struct lw_trace_meta *meta = lw_model_meta(m);
	putc('[', out);
	for (size_t i = 0; i < meta->failed_kind_count; i++) {
		const struct lw_failed_allocation *f = &meta->failed[i];
		const char *name = lw_alloc_error_name(f->api, f->error);

		fprintf(out, "%s{\"api\": \"%s\", \"error\": %" PRIu64 ", \"name\": ",
			i ? ", " : "", lw_api_name(f->api), f->error);
		if (name)
			fprintf(out, "\"%s\"", name);
		else
			fputs("null", out);
		fprintf(out, ", \"count\": %" PRIu64 "}", f->count);
	}
	putc(']', out);
}

/* How the trace ends, and what its checksums said. */
static void put_trace_state(FILE *out, const struct lw_trace_result *res)
{
	static const char *const cuts[] = {
		[LW_TRACE_CUT_NONE] = "cut",
		[LW_TRACE_CUT_BETWEEN] = "cut",
		[LW_TRACE_CUT_RECORD] = "cut-in-record",
		[LW_TRACE_CUT_BLOCK] = "cut-in-block",
	};
	const char *ending = res->damaged     ? "damaged"
			     : !res->truncated ? "complete"
					       : cuts[res->cut];
	char why[384];

	lw_trace_describe_end(res, why, sizeof(why));
	fprintf(out, "{\"ending\": \"%s\", \"problem\": ", ending);
	if (why[0])
		put_str(out, why);
	else
		fputs("null", out);
	fprintf(out, ", \"checksums\": %s, \"blocks_verified\": %" PRIu64 "}",
		res->checksummed ? "true" : "false", res->blocks_verified);
}

static bool same_key(const struct lw_info *x, const struct lw_info *y)
{
	return x->key.len == y->key.len &&
	       (!x->key.len || memcmp(x->key.data, y->key.data, x->key.len) == 0);
}

/* INFO records by key, then in trace order. */
static int compare_info(const void *a, const void *b)
{
	const struct lw_info *x = *(const struct lw_info *const *)a;
	const struct lw_info *y = *(const struct lw_info *const *)b;
	size_t n = x->key.len < y->key.len ? x->key.len : y->key.len;
	int c = n ? memcmp(x->key.data, y->key.data, n) : 0;

	if (c)
		return c;
	if (x->key.len != y->key.len)
		return x->key.len < y->key.len ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * The INFO records as an object: only the last value of a key, so that
 * keys are unique, in trace order. Which is last is found by sorting, not
 * by a look-up per record: a trace may hold any number of them.
 */
static int put_info(FILE *out, const struct lw_model *m, unsigned indent)
{
	const struct lw_trace_meta *meta = lw_model_meta(m);
	const struct lw_info **sorted = NULL;
	bool *last = NULL, first = true;
	size_t n = meta->info_count;

	if (n && (!(sorted = malloc(n * sizeof(*sorted))) ||
		  !(last = calloc(n, sizeof(*last))))) {
		free(sorted);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = &meta->infos[i];
	if (n)
		qsort(sorted, n, sizeof(*sorted), compare_info);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 == n || !same_key(sorted[i], sorted[i + 1]))
			last[sorted[i] - meta->infos] = true;
	}
	putc('{', out);
	for (size_t i = 0; i < n; i++) {
		const struct lw_info *info = &meta->infos[i];

		if (!last[i])
			continue;
		if (!first)
			putc(',', out);
		newline(out, indent + 2);
		lw_put_json_string(out, info->key.data, info->key.len);
		fputs(": ", out);
		lw_put_json_string(out, info->value.data, info->value.len);
		first = false;
	}
	if (!first)
		newline(out, indent);
	putc('}', out);
	free(sorted);
	free(last);
	return 0;
}

static void put_string_list(FILE *out, const struct lw_bytes *items,
			    const char *const *strs, size_t count,
			    unsigned indent)
{
	putc('[', out);
	for (size_t i = 0; i < count; i++) {
		if (i)
			putc(',', out);
		newline(out, indent + 2);
		if (items)
			lw_put_json_string(out, items[i].data, items[i].len);
		else
			put_str(out, strs[i]);
	}
	if (count)
		newline(out, indent);
	putc(']', out);
}

/*
 * The memory account of the run (the step series has each step's): PyTorch's
 * pool and what lies outside it, and the pool's verdict; null unless
 * PyTorch was loaded.
 */
static void put_memory_account(FILE *out, const struct lw_report *r,
			       const struct lw_pool *pool)
{
	const struct lw_model *m = r->model;
	const struct lw_result_pool *account = lw_result_pool(lw_result_of(r));
	struct lw_torch_view v;

	lw_torch_view(m, &v);
	if (!v.present) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"allocated_bytes_at_end\": %" PRIu64
		     ", \"peak_allocated_bytes\": %" PRIu64
		     ", \"reserved_bytes_at_end\": %" PRIu64
		     ", \"peak_reserved_bytes\": %" PRIu64
		     ", \"pool_free_at_peak_bytes\": %" PRIu64
		     ", \"outside_pool_bytes_at_end\": %" PRIu64
		     ", \"peak_outside_pool_bytes\": %" PRIu64
		     ", \"peak_in_use_bytes\": %" PRIu64
		     ", \"device_total_bytes\": null",
		account->end_allocated, account->peak_allocated,
		account->end_reserved, account->peak_reserved,
		account->free_at_peak, account->end_outside,
		account->peak_outside, account->peak_in_use);
	fputs(", \"pool\": ", out);
	if (!pool->seen) {
		fputs("null}", out);
		return;
	}
	fprintf(out, "{\"verdict\": %s, \"leak\": false, \"pattern\": ",
		pool->fragmented ? "\"pool-fragmentation\"" : "null");
	if (pool->fragmented)
		fprintf(out, "\"%s\"", lw_pool_pattern_name(pool->pattern));
	else
		fputs("null", out);
	fprintf(out, ", \"expandable_segments\": %s"
		     ", \"reserved_grows\": %s, \"reserved_excess\": %s"
		     ", \"reserved_stranded\": %s"
		     ", \"reserved_bytes_per_step\": ",
		pool->expandable ? "true" : "false",
		pool->grows ? "true" : "false",
		pool->excess ? "true" : "false",
		pool->stranded ? "true" : "false");
	put_rate(out, pool->reserved.verdict == LW_VERDICT_GROWING
			      ? pool->reserved.per_step : 0);
	fprintf(out, ", \"largest_request_bytes\": %" PRIu64
		     ", \"stranded_misses\": %" PRIu64
		     ", \"stranded_bytes\": %" PRIu64 ", \"fix\": ",
		pool->max_request, pool->stranded_misses,
		pool->stranded_bytes);
	if (pool->fragmented)
		put_str(out, lw_pool_fix(pool));
	else
		fputs("null", out);
	fputs("}}", out);
}

/* One point a line: a long run gives thousands. */
static void put_step_series(FILE *out, const struct lw_model *m,
			    unsigned indent)
{
	putc('[', out);
	for (size_t i = 0; i < lw_model_point_count(m); i++) {
		const struct lw_step_point *p = lw_model_point(m, i);

		if (i)
			putc(',', out);
		newline(out, indent + 2);
		fprintf(out, "{\"step\": %" PRIu64 ", \"live_bytes\": %" PRIu64
			     ", \"live_count\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
			     ", \"lingering_bytes\": %" PRIu64
			     ", \"allocated_bytes\": %" PRIu64
			     ", \"reserved_bytes\": %" PRIu64
			     ", \"peak_reserved_bytes\": %" PRIu64
			     ", \"peak_allocated_bytes\": %" PRIu64
			     ", \"pool_free_at_peak_bytes\": %" PRIu64
			     ", \"outside_pool_bytes\": %" PRIu64
			     ", \"peak_outside_pool_bytes\": %" PRIu64
			     ", \"peak_in_use_bytes\": %" PRIu64
			     ", \"largest_request_bytes\": %" PRIu64 "}",
			p->step, p->live_bytes, p->live_count, p->peak_bytes,
			p->lingering_bytes, p->allocated_bytes,
			p->reserved_bytes, p->peak_reserved_bytes,
			p->peak_allocated_bytes, p->free_at_peak_bytes,
			p->outside_bytes, p->peak_outside_bytes,
			p->peak_in_use_bytes, p->max_request_bytes);
	}
	if (lw_model_point_count(m))
		newline(out, indent);
	putc(']', out);
}

int lw_render_json(FILE *out, const struct lw_report *r, bool nested,
		   bool first)
{
	const struct lw_model *m = r->model;
	const struct lw_peak *peak = lw_model_peak(m);
	const struct lw_event_counts *counts = lw_model_counts(m);
	const struct lw_trace_meta *meta = lw_model_meta(m);
	unsigned in = nested ? 4 : 0, k = in + 2;
	const char *const *notes;
	const struct lw_result *res = lw_result_of(r);
	struct lw_growth_report g;
	struct lw_diagnosis d;
	size_t site_count, note_count;
	int rc = 0;

	if (!res)
		return -EINVAL;
	g = *res->growth_report;
	d = *res->diagnosis;
	site_count = lw_result_report_site_count(res);
	if (nested) {
		if (!first)
			putc(',', out);
		newline(out, in);
	}
	fputs("{", out);
	put_key(out, k, "leakwatch_report");
	fputs("1,", out);
	put_key(out, k, "trace");
	put_str(out, r->path);
	putc(',', out);
	put_key(out, k, "pid");
	fprintf(out, "%" PRIu32 ",", lw_model_header(m)->pid);
	put_key(out, k, "command");
	put_command(out, m);
	putc(',', out);
	put_key(out, k, "exe");
	put_bytes_or_null(out, lw_model_info(m, "exe"));
	putc(',', out);
	put_key(out, k, "truncated");
	fputs(r->result->truncated ? "true," : "false,", out);
	put_key(out, k, "events");
	fprintf(out, "%" PRIu64 ",", counts->events);
	put_key(out, k, "allocations");
	fprintf(out, "%" PRIu64 ",", counts->allocations);
	put_key(out, k, "frees");
	fprintf(out, "%" PRIu64 ",", counts->frees);
	put_key(out, k, "steps");
	fprintf(out, "%" PRIu64 ",", counts->steps);
	put_key(out, k, "live_bytes_at_exit");
	fprintf(out, "%" PRIu64 ",", lw_model_device_live_bytes(m));
	put_key(out, k, "live_count_at_exit");
	fprintf(out, "%" PRIu64 ",", lw_model_device_live_count(m));
	put_key(out, k, "peak");
	fprintf(out, "{\"bytes\": %" PRIu64 ", \"step\": %" PRIu64 "},",
		peak->bytes, peak->step);
	put_key(out, k, "kinds");
	putc('{', out);
	for (unsigned kind = 1; kind <= LW_MEM_KIND_MAX; kind++) {
		struct lw_totals t = lw_model_kind_totals(m, kind);

		put_key(out, k + 2, lw_kind_name(kind));
		put_totals(out, &t);
		if (kind < LW_MEM_KIND_MAX)
			putc(',', out);
	}
	newline(out, k);
	fputs("},", out);
	put_key(out, k, "unknown_frees");
	fprintf(out, "%" PRIu64 ",", counts->unknown_frees);
	put_key(out, k, "warnings");
	put_string_list(out, meta->warnings, NULL, meta->warning_count, k);
	putc(',', out);
	put_key(out, k, "sites");
	putc('[', out);
	for (size_t i = 0; i < site_count && rc == 0; i++) {
		if (i)
			putc(',', out);
		rc = put_site(out, r, &g, &d, lw_result_report_site(res, i),
			      k + 2);
	}
	if (rc == 0) {
		if (site_count)
			newline(out, k);
		fputs("],", out);
		put_key(out, k, "locations");
		rc = put_locations(out, r, res, k);
		putc(',', out);
	}
	if (rc < 0)
		return rc;

	put_key(out, k, "dropped_events");
	fprintf(out, "%" PRIu64 ",", lw_model_dropped(m));
	put_key(out, k, "reused_live_addresses");
	fprintf(out, "%" PRIu64 ",", counts->reused_live_addresses);
	put_key(out, k, "phases");
	if ((rc = put_phases(out, r, k)) < 0)
		return rc;
	putc(',', out);
	put_key(out, k, "info");
	if ((rc = put_info(out, m, k)) < 0)
		return rc;
	putc(',', out);
	put_key(out, k, "notes");
	note_count = lw_result_notes(res, &notes);
	put_string_list(out, NULL, notes, note_count, k);
	putc(',', out);
	put_key(out, k, "report_point");
	fputs(lw_model_has_program_end(m) ? "\"program_end\"," : "\"end\",", out);
	put_key(out, k, "live_bytes_at_end");
	fprintf(out, "%" PRIu64 ",", lw_model_device_live_bytes_at_end(m));
	put_key(out, k, "live_count_at_end");
	fprintf(out, "%" PRIu64 ",", lw_model_device_live_count_at_end(m));
	put_key(out, k, "python");
	put_bytes_or_null(out, lw_model_info(m, "python"));
	putc(',', out);
	put_key(out, k, "program_end");
	if (lw_model_has_program_end(m))
		fprintf(out, "{\"bytes\": %" PRIu64 ", \"count\": %" PRIu64 "}",
			lw_model_device_live_bytes(m),
			lw_model_device_live_count(m));
	else
		fputs("null", out);
	putc(',', out);
	put_key(out, k, "step_series");
	put_step_series(out, m, k);
	putc(',', out);
	put_key(out, k, "step_series_stride");
	fprintf(out, "%" PRIu64 ",", lw_model_step_stride(m));
	put_key(out, k, "growth_bytes_per_step");
	put_rate(out, g.run.per_step);
	putc(',', out);
	put_key(out, k, "verdict");
	fprintf(out, "\"%s\",", lw_verdict_name(g.run.verdict));
	put_key(out, k, "min_steps");
	fprintf(out, "%" PRIu64 ",", g.min_steps);
	put_key(out, k, "step_source");
	fprintf(out, "\"%s\",", lw_model_step_source(m));
	put_step_loop(out, m, k);
	put_key(out, k, "peak_attribution");
	if ((rc = put_peak_attribution(out, r, k)) < 0)
		return rc;
	putc(',', out);
	put_key(out, k, "gc_passes");
	fprintf(out, "%" PRIu64 ",", counts->gc_passes);
	put_key(out, k, "findings");
	if ((rc = put_findings(out, r, &d, k)) < 0)
		return rc;
	putc(',', out);
	put_key(out, k, "suppressed_findings");
	fprintf(out, "%zu,", d.suppressed_count);
	put_key(out, k, "torch_allocator");
	put_torch(out, m);
	putc(',', out);
	put_key(out, k, "failed_allocations");
	fprintf(out, "%" PRIu64 ",", meta->failed_allocations);
	put_key(out, k, "failed_allocation_errors");
	put_failed_allocations(out, m);
	putc(',', out);
	put_key(out, k, "oom");
	if ((rc = put_oom(out, r, k)) < 0)
		return rc;
	putc(',', out);
	put_key(out, k, "device_memory_by_context");
	put_contexts(out, m, k);
	putc(',', out);
	put_key(out, k, "trace_state");
	put_trace_state(out, r->result);
	putc(',', out);
	put_key(out, k, "schema_version");
	fprintf(out, "%d,", LW_JSON_SCHEMA_VERSION);
	put_key(out, k, "python_paths");
	put_pypaths(out, m, k);
	putc(',', out);
	put_key(out, k, "memory_account");
	put_memory_account(out, r, &d.pool);
	newline(out, in);
	putc('}', out);
	if (!nested)
		putc('\n', out);
	return 0;
}

void lw_json_begin_list(FILE *out)
{
	fputs("{\"leakwatch_report\": 1, \"reports\": [", out);
}

void lw_json_end_list(FILE *out)
{
	fprintf(out, "\n], \"schema_version\": %d}\n", LW_JSON_SCHEMA_VERSION);
}

/* Several traces, or a list asked for: {"reports": [...]}. */
static bool json_list(const struct lw_render_run *run)
{
	return run->count != 1 || run->list;
}

static int json_begin(struct lw_render_run *run)
{
	if (json_list(run))
		lw_json_begin_list(run->out);
	return 0;
}

static int json_report(struct lw_render_run *run, const struct lw_report *r,
		       size_t index)
{
	return lw_render_json(run->out, r, json_list(run), run->written == 0);
}

static int json_end(struct lw_render_run *run)
{
	if (json_list(run))
		lw_json_end_list(run->out);
	return 0;
}

const struct lw_renderer lw_json_renderer = {
	.name = "json",
	.needs = LW_RESULT_POOL | LW_RESULT_SITES | LW_RESULT_DIAGNOSED,
	.begin = json_begin,
	.report = json_report,
	.end = json_end,
};
