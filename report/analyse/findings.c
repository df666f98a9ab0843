/* SPDX-License-Identifier: MIT */
/* Named frames, and the one place findings are gathered. */
#include "findings.h"

#include "analysis.h"
#include "diagnose.h"
#include "holders.h"
#include "locations.h"
#include "pystack.h"
#include "lw-size.h"
#include "lw-text.h"

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/*
 * Bytes from a trace in an evidence line, as the text report writes them:
 * controls and bytes that are not UTF-8 escaped (lw_text_escape_char()),
 * so that a trace cannot move a terminal's cursor.
 */
static void put_text(FILE *out, const void *data, size_t len)
{
	const uint8_t *s = data;
	size_t i = 0;

	while (i < len) {
		char escaped[LW_TEXT_ESCAPE_MAX];
		uint32_t cp = 0;
		size_t n = lw_utf8_sequence(s + i, len - i, &cp);

		if (lw_text_escape_char(escaped, cp, s + i, n))
			fputs(escaped, out);
		else
			fwrite(s + i, 1, n, out);
		i += n ? n : 1;
	}
}

/* file without the traced process's working directory when inside it. */
static void strip_cwd(const struct lw_model *m, const char **file,
		      size_t *len)
{
	const struct lw_bytes *cwd = lw_model_info(m, "cwd");

	if (cwd && cwd->len && *len > cwd->len + 1 &&
	    memcmp(*file, cwd->data, cwd->len) == 0 &&
	    ((*file)[cwd->len] == '/' || cwd->data[cwd->len - 1] == '/')) {
		*file += cwd->len;
		*len -= cwd->len;
		if (**file == '/') {
			(*file)++;
			(*len)--;
		}
	}
}

static void name_pyframe(const struct lw_model *m,
			 const struct lw_trace_pyframe *py,
			 struct lw_named_frame *out)
{
	struct lw_bytes function, file;

	lw_model_pyframe_names(m, py, &function, &file);
	memset(out, 0, sizeof(*out));
	out->python = true;
	out->function = (const char *)function.data;
	out->function_len = function.len;
	out->file = (const char *)file.data;
	out->file_len = file.len;
	out->line = py->line;
	if (out->file)
		strip_cwd(m, &out->file, &out->file_len);
}

static void name_native(const struct lw_model *m, const struct lw_symbol *sym,
			const struct lw_sym_frame *f, bool short_file,
			struct lw_named_frame *out)
{
	memset(out, 0, sizeof(*out));
	out->function = f->function;
	out->function_len = f->function ? strlen(f->function) : 0;
	out->file = f->file;
	out->file_len = f->file ? strlen(f->file) : 0;
	out->line = f->line;
	out->module = sym->module;
	out->offset = sym->module ? sym->offset : sym->address;
	if (out->file && short_file) {
		/* The interpreter's build tree says nothing to its user. */
		const char *slash = strrchr(out->file, '/');

		if (slash) {
			out->file_len -= (size_t)(slash + 1 - out->file);
			out->file = slash + 1;
		}
	} else if (out->file) {
		strip_cwd(m, &out->file, &out->file_len);
	}
}

int lw_named_stack(const struct lw_report *r, uint64_t stack_id,
		   struct lw_named_frame **out, size_t *count)
{
	struct lw_named_frame *named = NULL;
	struct lw_frame *frames;
	size_t n, used = 0, capacity = 0;
	int rc;

	*out = NULL;
	*count = 0;
	rc = lw_model_stack(r->model, stack_id, &frames, &n);
	if (rc < 0 || n == 0)
		return rc;
	if ((rc = lw_fold_stack(r, frames, &n)) < 0)
		goto error;
	for (size_t i = 0; i < n; i++) {
		const struct lw_symbol *sym = NULL;
		unsigned parts = 1;

		/* A named stack drops the folded runs but the framework's,
		 * one frame named by its operator. */
		if (frames[i].fold != LW_FOLD_NONE &&
		    frames[i].fold != LW_FOLD_FRAMEWORK)
			continue;
		if (!frames[i].python && !frames[i].fold) {
			rc = lw_symbolize(r->symbolizer, frames[i].address,
					  &sym);
			if (rc < 0)
				goto error;
			parts = sym->frame_count;
		}
		if (used + parts > capacity) {
			size_t next = (used + parts) * 2;
			struct lw_named_frame *p =
				realloc(named, next * sizeof(*p));

			if (!p) {
				rc = -ENOMEM;
				goto error;
			}
			named = p;
			capacity = next;
		}
		if (frames[i].fold) {
			memset(&named[used], 0, sizeof(named[used]));
			named[used].folded = frames[i].folded;
			named[used++].fold = frames[i].name;
			continue;
		}
		if (frames[i].python) {
			name_pyframe(r->model, frames[i].py, &named[used++]);
			continue;
		}
		for (unsigned j = 0; j < parts; j++)
			name_native(r->model, sym, &sym->frames[j],
				    !r->native &&
					    lw_frame_is_interpreter(r, sym),
				    &named[used++]);
	}
	free(frames);
	*out = named;
	*count = used;
	return 0;

error:
	free(frames);
	free(named);
	return rc;
}

void lw_put_frame_label(FILE *out, const struct lw_named_frame *f,
			void (*put)(FILE *out, const void *data, size_t len))
{
	char buf[64];
	int n;

	if (f->folded) {
		struct lw_frame run = { .folded = f->folded,
					.fold = LW_FOLD_FRAMEWORK,
					.name = f->fold };

		lw_put_fold_label(out, &run, put);
		return;
	}
	if (!f->function && !f->file) {
		if (f->module) {
			const char *slash = strrchr(f->module, '/');
			const char *base = slash ? slash + 1 : f->module;

			put(out, base, strlen(base));
			n = snprintf(buf, sizeof(buf), "+0x%" PRIx64, f->offset);
		} else {
			n = snprintf(buf, sizeof(buf), "0x%" PRIx64, f->offset);
		}
		put(out, buf, (size_t)n);
		return;
	}
	if (f->function)
		put(out, f->function, f->function_len);
	else
		put(out, "??", 2);
	if (!f->file)
		return;
	put(out, " (", 2);
	put(out, f->file, f->file_len);
	if (f->line > 0) {
		n = snprintf(buf, sizeof(buf), ":%" PRId64, f->line);
		put(out, buf, (size_t)n);
	}
	put(out, ")", 1);
}

static void put_raw(FILE *out, const void *data, size_t len)
{
	fwrite(data, 1, len, out);
}

char *lw_frame_label_string(const struct lw_named_frame *frame, size_t *len)
{
	char *text = NULL;
	FILE *s = open_memstream(&text, len);

	if (!s)
		return NULL;
	lw_put_frame_label(s, frame, put_raw);
	if (fclose(s) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* "grows by +512 B per step at forward_backward (train.c:51)" */
/* "CATEGORY: REASON, +N per step at LOCATION". */
static char *make_title(const struct lw_report_finding *f, const char *reason)
{
	char rate[LW_SIZE_BUF], *text = NULL;
	size_t len = 0;
	FILE *s = open_memstream(&text, &len);

	if (!s)
		return NULL;
	fprintf(s, "%s: %s", f->category, reason ? reason : "GPU memory leak");
	if (f->bytes_per_step > 0)
		fprintf(s, ", %s per step", lw_format_rate(rate, f->bytes_per_step));
	if (f->count_per_step >= 0.5)
		fprintf(s, " (%+.3g allocation%s per step)", f->count_per_step,
			f->count_per_step == 1 ? "" : "s");
	if (f->have_location) {
		fputs(" at ", s);
		lw_put_frame_label(s, &f->location, put_raw);
	}
	if (fclose(s) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* What a finding held, and when it was let go: "grew to 15.0 KiB in 30
 * allocations by step 200, released after the last step, when `train`
 * returned" (the function whose local held it, from the holder search). */
static int put_held(FILE *out, const struct lw_report *r,
		    const struct lw_finding *f)
{
	const struct lw_evidence *ev = &f->evidence;
	char a[LW_SIZE_BUF];
	const char *function;
	size_t len;
	int rc;

	if (ev->bytes_per_step > 0)
		fprintf(out, "grew to %s in %" PRIu64 " allocation%s by step %" PRIu64,
			lw_format_size(a, ev->held_bytes), ev->held_count,
			ev->held_count == 1 ? "" : "s", ev->held_step);
	else
		fprintf(out, "held %s in %" PRIu64 " allocation%s at step ends",
			lw_format_size(a, ev->held_bytes), ev->held_count,
			ev->held_count == 1 ? "" : "s");
	fputs(", released after the last step", out);
	if ((rc = lw_released_when(r, f->site, &function, &len)) < 0)
		return rc;
	if (rc) {
		fputs(", when `", out);
		put_text(out, function, len);
		fputs("` returned", out);
	}
	return 0;
}

/*
 * The pool's verdict in numbers: how reserved grew against the steps'
 * peaks of allocated, both peaks, and the requests behind the pattern.
 */
static int put_pool_evidence(FILE *out, const struct lw_report *r,
			     const struct lw_finding *f)
{
	const struct lw_pool *p = r->analysis ? &r->analysis->diagnosis.pool
					      : NULL;
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF], c[LW_SIZE_BUF], d[LW_SIZE_BUF];

	if (f->evidence.bytes_per_step > 0) {
		fprintf(out, "reserved memory grows by %s per step",
			lw_format_rate(a, f->evidence.bytes_per_step));
		if (p && p->allocated.verdict == LW_VERDICT_GROWING &&
		    p->allocated.per_step > 0)
			fprintf(out, ", the steps' peak of allocated by %s",
				lw_format_rate(b, p->allocated.per_step));
		else
			fputs("; allocated memory does not", out);
		fputs("; ", out);
	}
	if (!p)
		return 0;
	fprintf(out, "reserved %s at its peak for %s allocated at its peak",
		lw_format_size(a, p->peak_reserved),
		lw_format_size(b, p->peak_allocated));
	if (p->pattern == LW_POOL_PATTERN_STRANDED)
		fprintf(out, "; %" PRIu64 " new segment%s (%s) for a size freed and not yet reusable",
			p->stranded_misses,
			p->stranded_misses == 1 ? "" : "s",
			lw_format_size(a, p->stranded_bytes));
	else if (p->max_request)
		fprintf(out, "; the largest request of a step: %s at the first, %s at the last (%s to %s)",
			lw_format_size(a, p->first_request),
			lw_format_size(b, p->last_request),
			lw_format_size(c, p->min_request),
			lw_format_size(d, p->max_request));
	if (p->expandable)
		fputs("; expandable_segments:True is on", out);
	return 0;
}

/* What outlived the function whose local held it: "still held after
 * `run` returned (by `service.cache`, ...)". */
static int put_held_after(FILE *out, const struct lw_report *r,
			  const struct lw_finding *f)
{
	const char *function;
	struct lw_held by;
	size_t len;
	int rc;

	if ((rc = lw_held_after_return(r, f->site, &function, &len, &by)) <= 0)
		return rc;
	fputs(", still held after `", out);
	put_text(out, function, len);
	fputs("` returned", out);
	if (by.holder) {
		fputs(" (by `", out);
		put_text(out, by.path, by.path_len);
		fputs("`, ", out);
		put_text(out, by.root, by.root_len);
		putc(')', out);
	}
	return 0;
}

static int put_evidence(FILE *out, const struct lw_report *r,
			const struct lw_finding *f)
{
	const struct lw_model *m = r->model;
	const struct lw_evidence *ev = &f->evidence;
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF];
	const char *sep = "";
	bool live_said = false;

	if (f->category == LW_CATEGORY_CACHE_GROWTH)
		return put_pool_evidence(out, r, f);
	if (ev->bytes_per_step > 0 && f->leak) {
		fprintf(out, "%s per step (%s per 10,000 steps), %+.3g allocation%s per step",
			lw_format_rate(a, ev->bytes_per_step),
			lw_format_rate(b, ev->bytes_per_step * 10000),
			ev->count_per_step,
			ev->count_per_step == 1 ? "" : "s");
		if (ev->sites > 1)
			fprintf(out, " over %" PRIu32 " sites", ev->sites);
		sep = "; ";
	}
	/*
	 * The frees and what is live, as parts of the allocations made: a
	 * line that also makes temporaries frees as many blocks as it keeps,
	 * and "40 freed ...; 40 live" alone reads as the same 40. Frees are
	 * counted up to the report point (the program's end), as what is
	 * live is; the rest were made after it.
	 */
	if (ev->frees && (f->category == LW_CATEGORY_RETAINED_LOSS ||
			  f->category == LW_CATEGORY_METRIC_COPY ||
			  f->category == LW_CATEGORY_CYCLE_DELAYED)) {
		uint64_t counted = ev->frees + ev->live_count;

		fprintf(out, "%s%" PRIu64 " allocation%s made: %" PRIu64 " freed after %.1f steps on average (at most %" PRIu64 "), %" PRIu64 " live (%s)",
			sep, ev->allocations, ev->allocations == 1 ? "" : "s",
			ev->frees, ev->mean_lifetime, ev->max_lifetime,
			ev->live_count, lw_format_size(a, ev->live_bytes));
		if (ev->allocations > counted)
			fprintf(out, ", %" PRIu64 " made after the program's code ended",
				ev->allocations - counted);
		sep = "; ";
		live_said = true;
	}
	if (ev->gc_frees) {
		fprintf(out, "%s%" PRIu64 " of %" PRIu64 " frees inside the cycle collector's passes (%" PRIu64 " passes)",
			sep, ev->gc_frees, ev->frees, ev->gc_passes);
		sep = "; ";
	}
	if (f->category == LW_CATEGORY_LINGERING) {
		char c[LW_SIZE_BUF];

		fprintf(out, "%salive at %" PRIu64 " of %" PRIu64 " step peaks, adding %s to a typical step's peak of %s (%.0f%%; up to %s at one)",
			sep, ev->lingering_steps, m->counts.steps,
			lw_format_size(a, ev->lingering_mean_bytes),
			lw_format_size(b, ev->typical_peak_bytes),
			ev->typical_peak_bytes
				? 100.0 * (double)ev->lingering_mean_bytes /
					  (double)ev->typical_peak_bytes
				: 0.0,
			lw_format_size(c, ev->lingering_bytes));
		sep = "; ";
	}
	if (f->category == LW_CATEGORY_UNRELEASED_MODULE) {
		const struct lw_string *name = lw_model_string(m, ev->phase_string);

		fprintf(out, "%s%s born in phase \"", sep,
			lw_format_size(a, ev->phase_bytes));
		if (name)
			put_text(out, name->text.data, name->text.len);
		fputs("\" outlived it", out);
		sep = "; ";
	}
	if (lw_evidence_let_go(ev)) {
		int rc;

		fputs(sep, out);
		if ((rc = put_held(out, r, f)) < 0)
			return rc;
		fprintf(out, "; %" PRIu64 " bytes per allocation on average",
			ev->mean_size);
		return 0;
	}
	if (!live_said)
		fprintf(out, "%s%s live in %" PRIu64 " allocation%s",
			sep, lw_format_size(a, ev->live_bytes), ev->live_count,
			ev->live_count == 1 ? "" : "s");
	if (ev->live_bytes && f->leak) {
		int rc;

		if ((rc = put_held_after(out, r, f)) < 0)
			return rc;
	}
	fprintf(out, "; %" PRIu64 " bytes per allocation on average",
		ev->mean_size);
	return 0;
}

int lw_evidence_string(const struct lw_report *r, const struct lw_finding *f,
		       char **out)
{
	char *text = NULL;
	size_t len = 0;
	FILE *s = open_memstream(&text, &len);
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	rc = put_evidence(s, r, f);
	if (fclose(s) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0)
		free(text);
	else
		*out = text;
	return rc;
}

struct line_rate {
	uint32_t location, site;
	double rate;
};

static int faster_line(const void *a, const void *b)
{
	const struct line_rate *x = a, *y = b;

	if (x->rate != y->rate)
		return x->rate > y->rate ? -1 : 1;
	return (x->location > y->location) - (x->location < y->location);
}

int lw_finding_lines(const struct lw_report *r, size_t finding,
		     uint32_t **out, size_t *count)
{
	const struct lw_model *m = r->model;
	const struct lw_diagnosis *d = &r->analysis->diagnosis;
	const struct lw_growth_report *g = &r->analysis->growth;
	struct line_rate *lines = NULL;
	uint32_t lead_loc, *sites;
	size_t n = 0;
	int rc;

	*out = NULL;
	*count = 0;
	if (finding >= d->finding_count || !r->locations)
		return 0;
	if ((rc = lw_location_of(r->locations, d->findings[finding].site,
				 &lead_loc)) < 0)
		return rc;
	for (uint32_t i = 0; i < lw_model_site_count(m); i++) {
		uint32_t loc;
		size_t k;

		if (d->sites[i].finding != finding)
			continue;
		if ((rc = lw_location_of(r->locations, i, &loc)) < 0)
			goto out;
		for (k = 0; k < n && lines[k].location != loc; k++)
			;
		if (k == n) {
			struct line_rate *grown =
				realloc(lines, (n + 1) * sizeof(*lines));

			if (!grown) {
				rc = -ENOMEM;
				goto out;
			}
			lines = grown;
			lines[n].location = loc;
			lines[n].site = i;
			/* The lead's line first. */
			lines[n++].rate = loc == lead_loc ? INFINITY : 0;
		}
		if (loc == lead_loc)
			lines[k].site = d->findings[finding].site;
		else
			lines[k].rate += g->sites[i].bytes_per_step;
	}
	if (n > 1)
		qsort(lines, n, sizeof(*lines), faster_line);
	if (!(sites = malloc((n ? n : 1) * sizeof(*sites)))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < n; k++)
		sites[k] = lines[k].site;
	*out = sites;
	*count = n;
out:
	free(lines);
	return rc;
}

int lw_site_location(const struct lw_report *r, uint32_t site,
		     struct lw_named_frame *out, bool *found)
{
	const struct lw_model *m = r->model;
	struct lw_site_stack st;
	const struct lw_location *loc = &st.location;
	int rc = lw_site_stack(r, site, &st);

	*found = false;
	if (rc == 0 && loc->frame) {
		*found = true;
		if (loc->frame->python)
			name_pyframe(m, loc->frame->py, out);
		else
			name_native(m, loc->symbol, &loc->symbol->frames[0],
				    false, out);
	}
	lw_site_stack_fini(&st);
	return rc;
}

/* The finding's lines but its lead's, named. */
static int other_lines(const struct lw_report *r, size_t finding,
		       struct lw_report_finding *f)
{
	uint32_t *sites;
	size_t n;
	int rc = lw_finding_lines(r, finding, &sites, &n);

	if (rc < 0 || n < 2)
		goto out;
	if (!(f->also = calloc(n - 1, sizeof(*f->also)))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 1; k < n && rc == 0; k++) {
		bool found;

		rc = lw_site_location(r, sites[k], &f->also[f->also_count],
				      &found);
		if (found)
			f->also_count++;
	}
out:
	free(sites);
	return rc;
}

int lw_findings_collect(const struct lw_report *r, struct lw_findings *out)
{
	const struct lw_diagnosis *d;
	size_t n = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!r->analysis)
		return -EINVAL;
	out->growth = r->analysis->growth;
	d = &r->analysis->diagnosis;
	for (size_t i = 0; i < d->finding_count; i++)
		n += d->findings[i].leak && !d->findings[i].suppressed;
	if (n == 0)
		goto out;
	out->items = calloc(n, sizeof(*out->items));
	if (!out->items) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < d->finding_count; i++) {
		const struct lw_finding *df = &d->findings[i];
		struct lw_report_finding *f;

		if (!df->leak || df->suppressed)
			continue;
		f = &out->items[out->count++];
		f->site = df->site;
		f->category = lw_category_name(df->category);
		f->verdict = out->growth.sites[df->site].verdict;
		f->bytes_per_step = df->evidence.bytes_per_step;
		f->count_per_step = df->evidence.count_per_step;
		f->fix = df->fix;
		if ((rc = lw_evidence_string(r, df, &f->evidence)) < 0)
			goto out;
		if ((rc = lw_site_location(r, f->site, &f->location,
					   &f->have_location)) < 0 ||
		    (rc = other_lines(r, i, f)) < 0)
			goto out;
		f->title = make_title(f, df->reason);
		if (!f->title) {
			rc = -ENOMEM;
			goto out;
		}
	}
out:
	return rc;
}

void lw_findings_fini(struct lw_findings *findings)
{
	for (size_t i = 0; i < findings->count; i++) {
		free(findings->items[i].title);
		free(findings->items[i].evidence);
		free(findings->items[i].also);
	}
	free(findings->items);
	memset(findings, 0, sizeof(*findings));
}
