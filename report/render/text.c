/* SPDX-License-Identifier: MIT */
/*
 * The text report: a summary of the trace, then the sites that still held
 * memory at the report point (or at exit), largest first, each led by its
 * location (lw_find_location(): the line to look at first), then its stack.
 *
 * Everything that comes from the trace (paths, names, arguments) goes
 * through lw_put_text(), never into a format string.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "lw-cells.h"
#include "render.h"
#include "result.h"

/* Whether a shell would need an argument quoted. */
static bool needs_quotes(const uint8_t *s, size_t len)
{
	if (len == 0)
		return true;
	for (size_t i = 0; i < len; i++) {
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_./:=@%+,-", s[i]) || s[i] == 0)
			return true;
	}
	return false;
}

static void put_argument(FILE *out, const uint8_t *s, size_t len)
{
	size_t start = 0;

	if (!needs_quotes(s, len)) {
		lw_put_text(out, s, len);
		return;
	}
	putc('\'', out);
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '\'')
			continue;
		lw_put_text(out, s + start, i - start);
		fputs("'\\''", out);
		start = i + 1;
	}
	lw_put_text(out, s + start, len - start);
	putc('\'', out);
}

/* The command line, NUL-separated in the trace, as a shell would take it. */
static void put_command(FILE *out, const struct lw_model *m)
{
	const struct lw_bytes *cmdline = lw_model_info(m, "cmdline");
	const struct lw_bytes *exe = lw_model_info(m, "exe");
	size_t start = 0, len;

	if (!cmdline || cmdline->len == 0) {
		if (exe)
			lw_put_text(out, exe->data, exe->len);
		else
			fputs("(command not recorded)", out);
		return;
	}
	len = cmdline->len;
	if (cmdline->data[len - 1] == 0)
		len--; /* a terminating NUL, not an empty last argument */
	for (size_t i = 0; i <= len; i++) {
		if (i < len && cmdline->data[i] != 0)
			continue;
		if (start)
			putc(' ', out);
		put_argument(out, cmdline->data + start, i - start);
		start = i + 1;
	}
}

static void put_phases(FILE *out, const struct lw_model *m)
{
	const struct lw_phase_table *phases = lw_model_phases(m);
	const struct lw_trace_meta *meta = lw_model_meta(m);
	bool first = true;

	if (phases->begins == 0 && phases->unbalanced_ends == 0)
		return;
	fputs("  phases:", out);
	for (size_t i = 0; i < meta->string_count; i++) {
		const struct lw_string *s = &meta->strings[i];

		if (!s->phase_begins)
			continue;
		fputs(first ? " " : ", ", out);
		lw_put_text(out, s->text.data, s->text.len);
		fprintf(out, " (%" PRIu64 ")", s->phase_begins);
		first = false;
	}
	if (phases->unnamed_begins)
		fprintf(out, "%s(unnamed) (%" PRIu64 ")", first ? " " : ", ",
			phases->unnamed_begins);
	if (phases->depth)
		fprintf(out, "; %" PRIu64 " still open at the end",
			phases->depth);
	if (phases->unbalanced_ends)
		fprintf(out, "; %" PRIu64 " unbalanced phase end%s",
			phases->unbalanced_ends,
			phases->unbalanced_ends == 1 ? "" : "s");
	putc('\n', out);
}

static const char *const kind_labels[] = {
	NULL, "device", "managed", "pinned host", "registered host",
};

/* Allocation calls that failed: how many, which errors, which runtime. */
static void put_failed_allocations(FILE *out, const struct lw_model *m)
{
	const struct lw_trace_meta *meta = lw_model_meta(m);
	const struct lw_bytes *cudart = lw_model_info(m, "cudart");

	if (!meta->failed_allocations)
		return;
	fprintf(out, "  FAILED allocations: %" PRIu64 "%s:", meta->failed_allocations,
		lw_model_counts(m)->allocations ? "" : " (none succeeded: nothing here was judged)");
	for (size_t i = 0; i < meta->failed_kind_count; i++) {
		const struct lw_failed_allocation *f = &meta->failed[i];
		const char *name = lw_alloc_error_name(f->api, f->error);

		fprintf(out, "%s %s returned %s%s%" PRIu64 "%s %" PRIu64 " time%s",
			i ? "," : "", lw_api_name(f->api), name ? name : "",
			name ? " (" : "error ", f->error, name ? ")" : "",
			f->count, f->count == 1 ? "" : "s");
	}
	if (cudart) {
		fputs("; CUDA runtime ", out);
		lw_put_text(out, cudart->data, cudart->len);
	}
	putc('\n', out);
}

enum context_key { BY_API, BY_DEVICE, BY_STREAM };

/* What a context is grouped by: "other" (the table's overflow) apart. */
static void context_key(const struct lw_context_totals *c,
			enum context_key by, char *buf, size_t size)
{
	if (c->other)
		snprintf(buf, size, "other");
	else if (by == BY_API)
		snprintf(buf, size, "%s", c->api ? lw_api_name(c->api)
						 : "unknown");
	else if (by == BY_DEVICE && c->device < 0)
		snprintf(buf, size, "not known");
	else if (by == BY_DEVICE)
		snprintf(buf, size, "cuda:%" PRId64, c->device);
	else if (c->stream == 0)
		snprintf(buf, size, "default");
	else
		snprintf(buf, size, "0x%" PRIx64, c->stream);
}

/*
 * Live device memory by API, device or stream: a line only when memory is
 * live under two of them or more (a job on two GPUs, a pool and cudaMalloc,
 * two streams), in the order they were first seen.
 */
static void put_contexts(FILE *out, const struct lw_model *m,
			 enum context_key by)
{
	static const char *const labels[] = { "API", "device", "stream" };
	char keys[LW_CONTEXTS_MAX][32], key[32], size[LW_SIZE_BUF];
	struct lw_live_count sums[LW_CONTEXTS_MAX];
	size_t n = 0, live = 0;

	for (size_t i = 0; i < lw_model_context_count(m); i++) {
		struct lw_live_count c = lw_model_context_live(m, i);
		size_t j;

		if (c.live_count == 0)
			continue;
		context_key(lw_model_context(m, i), by, key, sizeof(key));
		for (j = 0; j < n && strcmp(keys[j], key) != 0; j++)
			;
		if (j == n) {
			memcpy(keys[n], key, sizeof(key));
			sums[n++] = (struct lw_live_count){ 0, 0 };
		}
		sums[j].live_bytes += c.live_bytes;
		sums[j].live_count += c.live_count;
	}
	for (size_t j = 0; j < n; j++)
		live += sums[j].live_count > 0;
	if (live < 2)
		return;
	fprintf(out, "  device memory by %s:", labels[by]);
	for (size_t j = 0; j < n; j++)
		fprintf(out, "%s %s %s in %" PRIu64, j ? "," : "", keys[j],
			lw_format_size(size, sums[j].live_bytes),
			sums[j].live_count);
	putc('\n', out);
}

static void put_summary(FILE *out, const struct lw_report *r,
			const char *when)
{
	const struct lw_model *m = r->model;
	const struct lw_peak *peak = lw_model_peak(m);
	const struct lw_event_counts *counts = lw_model_counts(m);
	const struct lw_trace_meta *meta = lw_model_meta(m);
	const struct lw_trace_result *res = r->result;
	uint64_t live = lw_model_device_live_bytes(m);
	uint64_t count = lw_model_device_live_count(m);
	const struct lw_bytes *python;
	char size[LW_SIZE_BUF];

	fputs("leakwatch: leak report for ", out);
	lw_put_text_str(out, r->path);
	fprintf(out, "\n  process %" PRIu32 ": ", lw_model_header(m)->pid);
	put_command(out, m);
	putc('\n', out);
	if ((python = lw_model_info(m, "python"))) {
		fputs("  python: ", out);
		lw_put_text(out, python->data, python->len);
		putc('\n', out);
	}
	if ((python = lw_model_info(m, "cudart_runtimes"))) {
		fputs("  CUDA runtimes: ", out);
		lw_put_text(out, python->data, python->len);
		fputs(" (each call went to its caller's own)\n", out);
	}
	lw_put_torch_text(out, m);
	if (res->truncated) {
		char why[384];

		lw_trace_describe_end(res, why, sizeof(why));
		fputs("  trace: ", out);
		lw_put_text_str(out, why);
		if (res->damaged)
			fprintf(out, "; showing the %" PRIu64 " events before it\n",
				counts->events);
		else
			fprintf(out, "; showing %" PRIu64 " events up to the last flush\n",
				counts->events);
	} else
		fprintf(out, "  trace: complete, %" PRIu64 " events\n", counts->events);
	if (res->zero_tail)
		fprintf(out, "  (the last %zu bytes of the file are zeros that were never written)\n",
			res->zero_tail);
	if (lw_model_dropped(m))
		fprintf(out, "  dropped events: %" PRIu64 " (the shim could not record them: the numbers below may be off)\n",
			lw_model_dropped(m));
	char source[768];

	lw_render_step_source(m, false, source, sizeof(source));
	fprintf(out, "  steps: %" PRIu64 " (", counts->steps);
	lw_put_text_str(out, source);
	fputs(")\n", out);
	put_phases(out, m);

	fprintf(out, "  peak device memory: %s (%" PRIu64 " bytes)",
		lw_format_size(size, peak->bytes), peak->bytes);
	if (peak->bytes && counts->steps) {
		if (peak->step < counts->steps)
			fprintf(out, " during step %" PRIu64, peak->step);
		else
			fputs(" after the last step", out);
	}
	fprintf(out, "\n  live device memory %s: %s (%" PRIu64 " bytes) in %" PRIu64 " allocation%s\n",
		when, lw_format_size(size, live), live, count,
		count == 1 ? "" : "s");
	if (lw_model_has_program_end(m)) {
		live = lw_model_device_live_bytes_at_end(m);
		count = lw_model_device_live_count_at_end(m);
		fprintf(out, "  live device memory %s: %s (%" PRIu64 " bytes) in %" PRIu64 " allocation%s\n",
			res->truncated
				? "at the end of the trace"
				: "at exit, after interpreter finalization",
			lw_format_size(size, live), live, count,
			count == 1 ? "" : "s");
	}
	fputs("  by kind:", out);
	for (unsigned k = 1; k <= LW_MEM_KIND_MAX; k++) {
		struct lw_totals t = lw_model_kind_totals(m, k);

		fprintf(out, "%s %s %s in %" PRIu64, k == 1 ? "" : ",",
			kind_labels[k], lw_format_size(size, t.live_bytes),
			t.live_count);
	}
	putc('\n', out);
	put_contexts(out, m, BY_API);
	put_contexts(out, m, BY_DEVICE);
	put_contexts(out, m, BY_STREAM);
	fprintf(out, "  unknown frees: %" PRIu64 "%s\n", counts->unknown_frees,
		counts->unknown_frees ? " (memory allocated before tracing began, or freed twice)" : "");
	put_failed_allocations(out, m);
	if (counts->reused_live_addresses)
		fprintf(out, "  allocations at a still-live address: %" PRIu64 " (their free was not seen; counted as freed)\n",
			counts->reused_live_addresses);
	for (size_t i = 0; i < meta->warning_count; i++) {
		fputs("  warning from the shim: ", out);
		lw_put_text(out, meta->warnings[i].data, meta->warnings[i].len);
		putc('\n', out);
	}
}

/* A source file relative to the traced process's directory when inside. */
static void put_file(FILE *out, const struct lw_model *m, const void *data,
		     size_t len)
{
	const struct lw_bytes *cwd = lw_model_info(m, "cwd");
	const char *file = data;

	if (cwd && cwd->len && len > cwd->len + 1 &&
	    memcmp(file, cwd->data, cwd->len) == 0 &&
	    (file[cwd->len] == '/' || cwd->data[cwd->len - 1] == '/')) {
		file += cwd->len;
		len -= cwd->len;
		if (*file == '/') {
			file++;
			len--;
		}
	}
	lw_put_text(out, file, len);
}

static void put_module_offset(FILE *out, const struct lw_symbol *sym)
{
	const char *slash = strrchr(sym->module, '/');

	lw_put_text_str(out, slash ? slash + 1 : sym->module);
	fprintf(out, "+0x%" PRIx64, sym->offset);
}

/*
 * One frame after lead (the indentation, or "at" for a location), without
 * the newline.
 */
static void put_frame(FILE *out, const struct lw_model *m, const char *lead,
		      const struct lw_symbol *sym, const struct lw_sym_frame *f,
		      bool short_file)
{
	fputs(lead, out);
	if (!f->function && !f->file) {
		if (sym->module)
			put_module_offset(out, sym);
		else
			fprintf(out, "0x%" PRIx64, sym->address);
		return;
	}
	lw_put_text_str(out, f->function ? f->function : "??");
	fputs("  ", out);
	if (f->file && short_file) {
		/* The interpreter's build tree says nothing to its user. */
		const char *slash = strrchr(f->file, '/');

		lw_put_text_str(out, slash ? slash + 1 : f->file);
	} else if (f->file) {
		put_file(out, m, f->file, strlen(f->file));
		if (f->line)
			fprintf(out, ":%u", f->line);
	} else if (sym->module) {
		putc('(', out);
		put_module_offset(out, sym);
		putc(')', out);
	}
}

/*
 * Line `line` of a notebook cell's text, which the shim copied into the
 * trace (INFO "source:NAME"): *text and *len, stripped; 0 when the trace
 * has no text for it.
 */
static int cell_line(const struct lw_model *m, const struct lw_bytes *file,
		     int64_t line, const char **text, size_t *len)
{
	char key[4200];
	const struct lw_bytes *src;
	const char *p, *end, *nl;

	if (line < 1 || file->len + sizeof(LW_CELL_SOURCE_KEY) > sizeof(key))
		return 0;
	snprintf(key, sizeof(key), "%s%.*s", LW_CELL_SOURCE_KEY,
		 (int)file->len, (const char *)file->data);
	if (!(src = lw_model_info(m, key)))
		return 0;
	p = (const char *)src->data;
	end = p + src->len;
	for (int64_t i = 1; i < line && p < end; i++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	if (p >= end)
		return 0;
	nl = memchr(p, '\n', (size_t)(end - p));
	if (!nl)
		nl = end;
	while (p < nl && (*p == ' ' || *p == '\t'))
		p++;
	while (nl > p && (nl[-1] == ' ' || nl[-1] == '\t' || nl[-1] == '\r'))
		nl--;
	*text = p;
	*len = (size_t)(nl - p);
	return *len > 0;
}

static void put_pyframe(FILE *out, const struct lw_model *m, const char *lead,
			const struct lw_trace_pyframe *f)
{
	struct lw_bytes function, file;
	char cell[32];
	const char *text;
	size_t len;

	lw_model_pyframe_names(m, f, &function, &file);
	fputs(lead, out);
	if (function.data)
		lw_put_text(out, function.data, function.len);
	else
		fputs("??", out);
	fputs("  ", out);
	if (file.data && lw_cell_name((const char *)file.data, file.len, cell,
				      sizeof(cell)))
		/* A notebook cell: its name, and its line's text (the
		 * report has no file to read it from). */
		fputs(cell, out);
	else if (file.data)
		put_file(out, m, file.data, file.len);
	else
		fputs("(unknown Python code)", out);
	if (f->line > 0)
		fprintf(out, ":%" PRId64, f->line);
	if (file.data && lw_cell_name((const char *)file.data, file.len, NULL, 0) &&
	    cell_line(m, &file, f->line, &text, &len)) {
		fputs("  `", out);
		lw_put_text(out, (const uint8_t *)text, len);
		putc('`', out);
	}
}

#define FRAME_LEAD "       "
/* Out to the left of the frames, so that the eye finds it first. */
#define LOCATION_LEAD "    at "

/* A site's location line, without its newline: "    at FRAME", or for a
 * block made in backward on autograd's thread "    in backward()
 * (MmBackward0) called from FRAME". */
static void put_location_as(FILE *out, const struct lw_model *m,
			    const struct lw_location *loc, const char *lead)
{
	if (loc->frame->python && loc->in_backward) {
		fputs("    in backward() ", out);
		if (loc->autograd_node[0])
			fprintf(out, "(%s) ", loc->autograd_node);
		put_pyframe(out, m, "called from ", loc->frame->py);
	} else if (loc->frame->python) {
		put_pyframe(out, m, lead, loc->frame->py);
	} else {
		put_frame(out, m, lead, loc->symbol, &loc->symbol->frames[0],
			  false);
	}
}

static void put_location(FILE *out, const struct lw_model *m,
			 const struct lw_location *loc)
{
	put_location_as(out, m, loc, LOCATION_LEAD);
}

/* A finding's other lines: "    also at FUNCTION  FILE:LINE". */
static void put_other_lines(FILE *out, const struct lw_report *r,
			    const struct lw_result *res,
			    const struct lw_result_diagnosed *dd)
{
	for (size_t i = 1; i < dd->line_count; i++) {
		const struct lw_result_stack *rs =
			lw_result_stack(res, dd->lines[i]);

		if (rs && rs->st.location.frame) {
			put_location_as(out, r->model, &rs->st.location,
					"    also at ");
			putc('\n', out);
		}
	}
}

/* The first line of a site: what it holds at the report point. */
static void put_site_header(FILE *out, const struct lw_report *r, size_t rank,
			    uint32_t site)
{
	const struct lw_model *m = r->model;
	struct lw_totals t = lw_model_site_totals(m, site);
	struct lw_live_count end = lw_model_site_live_at_end(m, site);
	char size[LW_SIZE_BUF];

	fprintf(out, "  #%zu %s (%" PRIu64 " bytes) in %" PRIu64 " allocation%s (%s), %" PRIu64 " made here",
		rank, lw_format_size(size, t.live_bytes), t.live_bytes,
		t.live_count, t.live_count == 1 ? "" : "s",
		kind_labels[lw_model_site(m, site)->kind], t.allocations);
	/* The exit view too, where finalization changed it. */
	if (lw_model_has_program_end(m) && (end.live_bytes != t.live_bytes ||
				    end.live_count != t.live_count)) {
		const char *when = r->result->truncated
					   ? "at the end of the trace"
					   : "at exit";

		if (end.live_count == 0)
			fprintf(out, "; all freed %s", when);
		else
			fprintf(out, "; %s: %s in %" PRIu64, when,
				lw_format_size(size, end.live_bytes),
				end.live_count);
	}
	putc('\n', out);
}

/* "(not a leak: REASON)" under a live site whose memory is none, where no
 * finding says so. */
static void put_not_a_leak(FILE *out, const struct lw_report *r,
			   uint32_t site)
{
	const struct lw_diagnosis *d = lw_result_of(r)->diagnosis;
	const struct lw_site_diagnosis *sd;

	if (!d->sites || site >= d->site_count)
		return;
	sd = &d->sites[site];
	if (sd->category == LW_CATEGORY_NOT_A_LEAK && sd->reason &&
	    sd->finding >= d->finding_count)
		fprintf(out, "    (not a leak: %s)\n", sd->reason);
}

/* "... N more frames" for frames left out by --frames, if any. */
static void put_skipped(FILE *out, size_t *skipped)
{
	if (*skipped)
		fprintf(out, FRAME_LEAD "... %zu more frame%s\n", *skipped,
			*skipped == 1 ? "" : "s");
	*skipped = 0;
}

/* A folded run (frame i of a folded stack): its operator for the
 * framework's, how many it holds. */
static void put_folded(FILE *out, const struct lw_result *res,
		       const struct lw_result_stack *rs, size_t i)
{
	const struct lw_frame *f = &rs->folded->frames[i];
	const char *s = f->folded == 1 ? "" : "s";

	if (f->fold == LW_FOLD_FRAMEWORK) {
		const char *label;
		size_t len;

		label = lw_result_fold(res, rs, i, &len);
		fputs(FRAME_LEAD, out);
		lw_put_text(out, label, len);
		fprintf(out, "  (%" PRIu32 " framework frame%s)\n", f->folded,
			s);
	} else {
		fprintf(out, FRAME_LEAD "... %" PRIu32 " %s frame%s\n",
			f->folded,
			f->fold == LW_FOLD_START ? "start-up" : "interpreter",
			s);
	}
}

/*
 * A site's location line and its stack: every Python frame, every folded
 * run, and at most max_frames (0: all) native frames, those past it
 * counted where they were left out; as the result folded and symbolized
 * it.
 */
static int put_site_stack(FILE *out, const struct lw_report *r, uint32_t site,
			  size_t max_frames)
{
	const struct lw_model *m = r->model;
	const struct lw_result *res = lw_result_of(r);
	const struct lw_result_stack *rs = lw_result_stack(res, site);
	size_t native = 0, skipped = 0;

	if (!rs || !rs->folded)
		return -EINVAL;
	if (rs->st.count == 0) {
		fputs(FRAME_LEAD "(no stack was captured)\n", out);
		return 0;
	}
	put_location(out, m, &rs->st.location);
	if (lw_model_site_native_thread(m, site))
		fputs("  (native thread: no Python frames)", out);
	putc('\n', out);
	for (size_t i = 0; i < rs->folded->count; i++) {
		const struct lw_frame *f = &rs->folded->frames[i];
		const struct lw_symbol *sym = rs->folded->symbols[i];

		if (f->fold != LW_FOLD_NONE) {
			put_skipped(out, &skipped);
			put_folded(out, res, rs, i);
			continue;
		}
		if (f->python) {
			put_skipped(out, &skipped);
			put_pyframe(out, m, FRAME_LEAD, f->py);
			putc('\n', out);
			continue;
		}
		if (max_frames && native == max_frames) {
			skipped++;
			continue;
		}
		native++;
		if (!sym)
			return -EINVAL;
		for (unsigned j = 0; j < sym->frame_count; j++) {
			put_frame(out, m, FRAME_LEAD, sym, &sym->frames[j],
				  !r->native && rs->folded->interpreter[i]);
			putc('\n', out);
		}
	}
	put_skipped(out, &skipped);
	return 0;
}

/*
 * One entry of the live list: a location, with what its sites hold
 * together, the stack of its largest site, and with --sites every site.
 */
static int put_location_entry(FILE *out, const struct lw_report *r,
			      size_t rank, const struct lw_location_sum *sum,
			      const struct lw_result_sums *live,
			      const struct lw_report_options *options)
{
	const struct lw_model *m = r->model;
	const uint32_t *sites = live->sites, *location_of = live->where;
	size_t site_count = live->site_count;
	char size[LW_SIZE_BUF];
	uint64_t made = 0;
	size_t shown = 0;
	int rc;

	if (sum->sites == 1) {
		put_site_header(out, r, rank, sum->lead);
		put_not_a_leak(out, r, sum->lead);
		return put_site_stack(out, r, sum->lead, options->frames);
	}
	for (size_t i = 0; i < site_count; i++)
		if (lw_location_sum_holds(m, sum, location_of[i], sites[i]))
			made += lw_model_site_totals(m, sites[i]).allocations;
	fprintf(out, "  #%zu %s (%" PRIu64 " bytes) in %" PRIu64 " allocation%s (%s), %" PRIu64 " made here, from %" PRIu32 " sites (stacks)\n",
		rank, lw_format_size(size, sum->bytes), sum->bytes, sum->count,
		sum->count == 1 ? "" : "s", kind_labels[lw_model_site(m, sum->lead)->kind],
		made, sum->sites);
	put_not_a_leak(out, r, sum->lead);
	if ((rc = put_site_stack(out, r, sum->lead, options->frames)) < 0)
		return rc;
	if (!options->sites) {
		fprintf(out, FRAME_LEAD "(the largest of the %" PRIu32 "; --sites shows each)\n",
			sum->sites);
		return 0;
	}
	for (size_t i = 0; i < site_count && rc == 0; i++) {
		if (!lw_location_sum_holds(m, sum, location_of[i], sites[i]))
			continue;
		put_site_header(out, r, rank, sites[i]);
		rc = put_site_stack(out, r, sites[i], options->frames);
		shown++;
	}
	return rc;
}

void lw_put_stack_location(FILE *out, const struct lw_model *m,
			   const struct lw_site_stack *st)
{
	if (st->count == 0) {
		fputs(LOCATION_LEAD "(no stack was captured)\n", out);
		return;
	}
	put_location(out, m, &st->location);
	putc('\n', out);
}

int lw_put_site_location(FILE *out, const struct lw_report *r, uint32_t site)
{
	const struct lw_result_stack *rs =
		lw_result_stack(lw_result_of(r), site);

	if (!rs)
		return -EINVAL;
	lw_put_stack_location(out, r->model, &rs->st);
	return 0;
}

/*
 * The growth section: the run's verdict, then the growing sites, fastest
 * first (at most top of them; 0: all), by location. Nothing for a trace
 * without steps.
 */
static int put_growth(FILE *out, const struct lw_report *r, size_t top,
		      bool sites_breakdown)
{
	const struct lw_model *m = r->model;
	const struct lw_event_counts *counts = lw_model_counts(m);
	const struct lw_result *res = lw_result_of(r);
	const struct lw_growth_report g = *res->growth_report;
	const struct lw_result_sums *growth = lw_result_growth(res);
	const uint32_t *sites = growth->sites;
	const struct lw_location_sum *sums = growth->sums;
	size_t count = growth->site_count, nsums = growth->count, shown;
	char rate[LW_SIZE_BUF], per10k[LW_SIZE_BUF];
	int rc = 0;

	if (counts->steps == 0)
		return 0;
	if (lw_model_meta(m)->failed_allocations && !counts->allocations) {
		fputs("\nGrowth: not judged: every CUDA allocation failed (see FAILED allocations above)\n",
		      out);
		return 0;
	}
	putc('\n', out);
	if (g.run.verdict == LW_VERDICT_NOT_ENOUGH_STEPS) {
		fprintf(out, "Growth: not enough steps to judge (%" PRIu64 " step%s, at least %" PRIu64 " needed)\n",
			counts->steps, counts->steps == 1 ? "" : "s", r->min_steps);
		return 0;
	}
	/* Only growth that goes on is extrapolated: a plateau's rate is
	 * that of its rise, which stopped. */
	if (g.run.verdict == LW_VERDICT_GROWING)
		fprintf(out, "Growth: %s; device memory %s per step (%s per 10,000 steps)%s\n",
			lw_verdict_name(g.run.verdict),
			lw_format_rate(rate, g.run.per_step),
			lw_format_rate(per10k, g.run.per_step * 10000),
			lw_model_step_stride(m) > 1 ? " (series downsampled)" : "");
	else if (g.run.verdict == LW_VERDICT_PLATEAU && g.run.per_step > 0)
		fprintf(out, "Growth: plateau; device memory rose by %s per step, then stopped growing%s\n",
			lw_format_rate(rate, g.run.per_step),
			lw_model_step_stride(m) > 1 ? " (series downsampled)" : "");
	else if (g.run.verdict == LW_VERDICT_PLATEAU)
		fprintf(out, "Growth: plateau; device memory rose, then stopped growing%s\n",
			lw_model_step_stride(m) > 1 ? " (series downsampled)" : "");
	else
		fprintf(out, "Growth: %s; device memory does not grow from step to step (%s per step)%s\n",
			lw_verdict_name(g.run.verdict),
			lw_format_rate(rate, g.run.per_step),
			lw_model_step_stride(m) > 1 ? " (series downsampled)" : "");
	if (count == 0)
		fputs("  no site grows from step to step\n", out);
	shown = top && top < nsums ? top : nsums;
	for (size_t i = 0; i < shown && rc == 0; i++) {
		const struct lw_location_sum *s = &sums[i];

		fprintf(out, "  #%zu growing: %s per step, %s per 10,000 steps, %+.3g allocation%s per step (%s)",
			i + 1, lw_format_rate(rate, s->rate),
			lw_format_rate(per10k, s->rate * 10000),
			s->count_rate, s->count_rate == 1 ? "" : "s",
			kind_labels[lw_model_site(m, s->lead)->kind]);
		if (s->sites > 1)
			fprintf(out, ", from %" PRIu32 " sites", s->sites);
		putc('\n', out);
		rc = lw_put_site_location(out, r, s->lead);
		for (size_t j = 0; sites_breakdown && s->sites > 1 &&
				   j < count && rc == 0; j++) {
			const struct lw_site_growth *sg = &g.sites[sites[j]];

			if (!lw_location_sum_holds(m, s, growth->where[j],
						   sites[j]))
				continue;
			fprintf(out, FRAME_LEAD "site %" PRIu32 ": %s per step, %+.3g allocation%s per step\n",
				sites[j], lw_format_rate(rate, sg->bytes_per_step),
				sg->count_per_step,
				sg->count_per_step == 1 ? "" : "s");
		}
	}
	if (rc == 0 && shown < nsums)
		fprintf(out, "  ... %zu more growing location%s not shown (--top 0 shows all)\n",
			nsums - shown, nsums - shown == 1 ? "" : "s");
	return rc;
}

/* One phase's surviving memory, one entry per location, largest first. */
static int put_phase_sites(FILE *out, const struct lw_report *r,
			   const struct lw_result_sums *phase, size_t top)
{
	const struct lw_model *m = r->model;
	char size[LW_SIZE_BUF];
	int rc = 0;

	for (size_t k = 0; k < phase->count && rc == 0; k++) {
		const struct lw_location_sum *s = &phase->sums[k];

		if (top && k == top) {
			fputs("  ... more sites not shown (--top 0 shows all)\n",
			      out);
			break;
		}
		fprintf(out, "  #%zu %s (%" PRIu64 " bytes) in %" PRIu64 " allocation%s (%s)",
			k + 1, lw_format_size(size, s->bytes), s->bytes,
			s->count, s->count == 1 ? "" : "s",
			kind_labels[lw_model_site(m, s->lead)->kind]);
		if (s->sites > 1)
			fprintf(out, ", from %" PRIu32 " sites", s->sites);
		putc('\n', out);
		rc = lw_put_site_location(out, r, s->lead);
	}
	return rc;
}

/* Phases whose memory outlived them, largest first in each. */
static int put_phase_survivors(FILE *out, const struct lw_report *r,
			       size_t top)
{
	const struct lw_model *m = r->model;
	const struct lw_phase_table *phases = lw_model_phases(m);
	char size[LW_SIZE_BUF];
	int rc = 0;

	for (size_t i = 0; i < phases->count && rc == 0; i++) {
		const struct lw_phase *ph = &phases->items[i];
		const struct lw_string *name = lw_model_string(m, ph->string_id);

		if (ph->surviving_count == 0 || !name)
			continue;
		fputs("\nPhase \"", out);
		lw_put_text(out, name->text.data, name->text.len);
		fprintf(out, "\": %s (%" PRIu64 " bytes) in %" PRIu64 " allocation%s born inside it outlived it\n",
			lw_format_size(size, ph->surviving_bytes),
			ph->surviving_bytes, ph->surviving_count,
			ph->surviving_count == 1 ? "" : "s");
		rc = put_phase_sites(out, r, lw_result_phase(lw_result_of(r), i),
				     top);
	}
	return rc;
}

/* What lingered at the highest step peak, and which sites linger. */
static int put_peak_attribution(FILE *out, const struct lw_report *r,
				size_t top)
{
	const struct lw_model *m = r->model;
	const struct lw_lingering *w = &lw_model_peak(m)->worst;
	const struct lw_result_sums *l = lw_result_lingering(lw_result_of(r));
	const struct lw_location_sum *sums = l->sums;
	char size[LW_SIZE_BUF], peak[LW_SIZE_BUF];
	size_t shown, nsums = l->count;
	int rc = 0;

	if (lw_model_peak(m)->lingering_steps == 0)
		return 0;
	fprintf(out, "\nPeak attribution: at %" PRIu64 " of %" PRIu64 " step peaks, memory from an earlier step was still live (freed within %d steps)\n",
		lw_model_peak(m)->lingering_steps, lw_model_counts(m)->steps,
		LW_LINGER_STEPS);
	fprintf(out, "  at the highest step peak (step %" PRIu64 ", %s): %s from earlier steps\n",
		w->step, lw_format_size(peak, w->peak_bytes),
		lw_format_size(size, w->bytes));
	shown = top && top < nsums ? top : nsums;
	for (size_t i = 0; i < shown && rc == 0; i++) {
		const struct lw_location_sum *s = &sums[i];

		fprintf(out, "  #%zu lingering at %" PRIu64 " step peak%s, up to %s (%" PRIu64 " bytes) at one (%s)",
			i + 1, s->count, s->count == 1 ? "" : "s",
			lw_format_size(size, s->bytes), s->bytes,
			kind_labels[lw_model_site(m, s->lead)->kind]);
		if (s->sites > 1)
			fprintf(out, ", from %" PRIu32 " sites", s->sites);
		putc('\n', out);
		rc = lw_put_site_location(out, r, s->lead);
	}
	if (rc == 0 && shown < nsums)
		fprintf(out, "  ... %zu more lingering location%s not shown (--top 0 shows all)\n",
			nsums - shown, nsums - shown == 1 ? "" : "s");
	return rc;
}

/* "held by" under a finding's line, and the fix against the holder. */
static void put_held_by(FILE *out, const struct lw_held_by *held)
{
	if (held->count == 0)
		return;
	for (size_t i = 0; i < held->count; i++) {
		const struct lw_held *e = &held->items[i];
		const struct lw_holder *h = e->holder;

		fputs("      held by: ", out);
		lw_put_text(out, (const uint8_t *)e->path, e->path_len);
		fputs(" (", out);
		lw_put_text(out, (const uint8_t *)e->root_short,
			    e->root_short_len);
		fprintf(out, "; %" PRIu64 " object%s", h->objects,
			h->objects == 1 ? "" : "s");
		if (h->graph)
			fprintf(out, ", %" PRIu64 " graph node%s kept",
				h->graph, h->graph == 1 ? "" : "s");
		fputs(")\n", out);
	}
	if (held->cut)
		fputs("      (the holder search ran out of time: there may be more)\n",
		      out);
	fputs("      fix the holder: ", out);
	lw_put_text_str(out, held->items[0].fix);
	putc('\n', out);
}

/*
 * The diagnosis: each finding with its kind, confidence, reason, line,
 * evidence and fix; leaks first. Nothing when there is nothing to say.
 */
static int put_diagnosis(FILE *out, const struct lw_report *r, size_t top)
{
	const struct lw_result *res = lw_result_of(r);
	const struct lw_diagnosis d = *res->diagnosis;
	size_t leaks = 0, others = 0, shown = 0;
	bool in_others = false;
	char size[LW_SIZE_BUF];
	int rc = 0;

	if (rc < 0 || d.finding_count == 0)
		goto out;
	for (size_t i = 0; i < d.finding_count; i++) {
		if ((d.findings[i].suppressed && d.findings[i].leak) ||
		    d.findings[i].category == LW_CATEGORY_CACHE_GROWTH)
			continue;
		if (d.findings[i].leak)
			leaks++;
		else
			others++;
	}
	if (!leaks && !others && !d.suppressed_count)
		goto out; /* the pool's verdict has a section of its own */
	fprintf(out, "\nDiagnosis: %zu leak%s", leaks, leaks == 1 ? "" : "s");
	if (others)
		fprintf(out, ", %zu not a leak", others);
	if (d.suppressed_count)
		fprintf(out, "; %zu suppressed (%s live)", d.suppressed_count,
			lw_format_size(size, d.suppressed_bytes));
	putc('\n', out);
	for (size_t i = 0; i < d.finding_count && rc == 0; i++) {
		const struct lw_finding *f = &d.findings[i];
		const struct lw_result_diagnosed *dd = lw_result_diagnosed(res, i);

		if ((f->suppressed && f->leak) ||
		    f->category == LW_CATEGORY_CACHE_GROWTH)
			continue;
		if (!f->leak && !in_others) {
			fputs("  Not leaks (no need to chase them):\n", out);
			in_others = true;
		}
		if (top && shown == top) {
			fputs("  ... more findings not shown (--top 0 shows all)\n",
			      out);
			break;
		}
		fprintf(out, "  #%zu %s (%s confidence): %s\n", ++shown,
			lw_result_category(res, f->category),
			lw_result_confidence(res, f->confidence), f->reason);
		if ((rc = lw_put_site_location(out, r, f->site)) < 0)
			break;
		if (f->leak) {
			put_other_lines(out, r, res, dd);
			put_held_by(out, &dd->held);
		}
		fprintf(out, "      evidence: %s\n", dd->evidence);
		if (lw_finding_has_fix(f))
			fprintf(out, "      fix: %s\n", f->fix);
	}
out:
	return rc;
}

/* The live sites, largest first, one entry per location (at most top). */
static int put_live(FILE *out, const struct lw_report *r,
		    const struct lw_report_options *options)
{
	const struct lw_result_sums *live = lw_result_live(lw_result_of(r));
	size_t nsums = live->count, shown;
	int rc = 0;

	shown = options->top && options->top < nsums ? options->top : nsums;
	for (size_t i = 0; i < shown && rc == 0; i++)
		rc = put_location_entry(out, r, i + 1, &live->sums[i], live,
					options);
	if (rc == 0 && shown < nsums) {
		uint64_t rest = 0;
		char size[LW_SIZE_BUF];

		for (size_t i = shown; i < nsums; i++)
			rest += live->sums[i].bytes;
		fprintf(out, "  ... %zu more %s holding %s (%" PRIu64 " bytes) not shown (--top 0 shows all)\n",
			nsums - shown,
			nsums - shown == 1 ? "site" : "sites",
			lw_format_size(size, rest), rest);
	}
	return rc;
}

int lw_render_text(FILE *out, const struct lw_report *r,
		   const struct lw_report_options *options)
{
	const struct lw_model *m = r->model;
	const char *when = lw_model_has_program_end(m)
				   ? "when the program's code finished"
			   : r->result->truncated ? "at the end of the trace"
						  : "at exit";
	const struct lw_result *res = lw_result_of(r);
	const char *const *notes;
	size_t note_count;
	int rc;

	if (!res)
		return -EINVAL;

	put_summary(out, r, when);
	if ((rc = put_diagnosis(out, r, options->top)) < 0 ||
	    (rc = lw_put_pool_text(out, r)) < 0 ||
	    (rc = put_growth(out, r, options->top, options->sites)) < 0 ||
	    (rc = put_phase_survivors(out, r, options->top)) < 0 ||
	    (rc = put_peak_attribution(out, r, options->top)) < 0 ||
	    (rc = lw_put_oom_text(out, r, options->top)) < 0)
		return rc;
	putc('\n', out);
	if (lw_model_device_live_count(m) == 0)
		fprintf(out, "No device memory was live %s.\n", when);
	if (lw_result_live(res)->site_count)
		fprintf(out, "Live %s, by site (largest first):\n", when);
	if ((rc = put_live(out, r, options)) < 0)
		return rc;
	note_count = lw_result_notes(res, &notes);
	for (size_t i = 0; i < note_count; i++) {
		fputs("note: ", out);
		lw_put_text_str(out, notes[i]);
		putc('\n', out);
	}
	return 0;
}

static int text_report(struct lw_render_run *run, const struct lw_report *r,
		       size_t index)
{
	if (run->written)
		putc('\n', run->out);
	return lw_render_text(run->out, r, run->options);
}

const struct lw_renderer lw_text_renderer = {
	.name = "text",
	.needs = LW_RESULT_POOL | LW_RESULT_DIAGNOSED | LW_RESULT_GROWTH |
		 LW_RESULT_LISTS,
	.report = text_report,
	.merged_view = true,
};
