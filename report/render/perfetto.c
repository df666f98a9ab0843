/* SPDX-License-Identifier: MIT */
/*
 * `--format perfetto`: the Chrome trace event format (JSON), which
 * ui.perfetto.dev and chrome://tracing open. Each trace is one process
 * (its pid) holding:
 *   - a counter track "device memory" (bytes live at each step point, and
 *     at the start and end), and one counter track per growing site (its
 *     live bytes at each step point, at most PERFETTO_MAX_SITES);
 *   - thread 1 "steps": a slice per step point ("step N", or "steps A-B"
 *     once the series is downsampled);
 *   - thread 2 "phases": a slice per phase, nested as they were;
 *   - thread 3 "findings": an instant event per finding at the end of the
 *     trace, its rate and location in args.
 * Timestamps are microseconds since the epoch, so traces of several ranks
 * line up.
 */
#include "formats.h"
#include "result.h"
#include "timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PERFETTO_MAX_SITES LW_RESULT_SERIES_MAX

/* One run of the format over its traces: whether an event was written. */
struct perfetto_state {
	bool first;
};

static void event_sep(FILE *out, struct perfetto_state *s)
{
	fputs(s->first ? "\n" : ",\n", out);
	s->first = false;
}

static void put_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void put_process_name(FILE *out, struct perfetto_state *st,
			     const struct lw_report *r)
{
	const struct lw_model *m = r->model;
	const struct lw_bytes *cmdline = lw_model_info(m, "cmdline");
	const struct lw_bytes *rank = lw_model_info(m, "rank");
	char *text = NULL;
	size_t len = 0;
	FILE *s = open_memstream(&text, &len);

	if (!s)
		return;
	if (rank) {
		fputs("rank ", s);
		fwrite(rank->data, 1, rank->len, s);
		fputs(": ", s);
	}
	if (cmdline && cmdline->len) {
		for (size_t i = 0; i < cmdline->len; i++)
			putc(cmdline->data[i] ? cmdline->data[i] : ' ', s);
	} else {
		fprintf(s, "pid %" PRIu32, lw_model_header(m)->pid);
	}
	if (fclose(s) == 0) {
		event_sep(out, st);
		fprintf(out, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %" PRIu32 ", \"args\": {\"name\": ",
			lw_model_header(m)->pid);
		/* Trailing space of a NUL-terminated command line. */
		while (len && text[len - 1] == ' ')
			len--;
		lw_put_json_string(out, text, len);
		fputs("}}", out);
	}
	free(text);
}

static void put_thread_name(FILE *out, struct perfetto_state *st,
			    uint32_t pid, int tid, const char *name)
{
	event_sep(out, st);
	fprintf(out, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %" PRIu32 ", \"tid\": %d, \"args\": {\"name\": \"%s\"}}",
		pid, tid, name);
}

static void put_counter(FILE *out, struct perfetto_state *st, uint32_t pid,
			const char *name, uint64_t ns, uint64_t bytes)
{
	event_sep(out, st);
	fprintf(out, "{\"ph\": \"C\", \"name\": \"%s\", \"pid\": %" PRIu32 ", \"ts\": ",
		name, pid);
	put_us(out, ns);
	fprintf(out, ", \"args\": {\"bytes\": %" PRIu64 "}}", bytes);
}

static void put_slice_head(FILE *out, struct perfetto_state *st,
			   uint32_t pid, int tid, uint64_t begin,
			   uint64_t end)
{
	event_sep(out, st);
	fprintf(out, "{\"ph\": \"X\", \"pid\": %" PRIu32 ", \"tid\": %d, \"ts\": ",
		pid, tid);
	put_us(out, begin);
	fputs(", \"dur\": ", out);
	put_us(out, end > begin ? end - begin : 0);
}

static int put_finding(FILE *out, struct perfetto_state *st,
		       const struct lw_report *r,
		       const struct lw_timeline *t,
		       const struct lw_result_finding *v)
{
	const struct lw_report_finding *f = v->finding;
	uint32_t pid = lw_model_header(r->model)->pid;
	char rate[LW_SIZE_BUF];

	event_sep(out, st);
	fprintf(out, "{\"ph\": \"i\", \"s\": \"p\", \"pid\": %" PRIu32 ", \"tid\": 3, \"ts\": ",
		pid);
	put_us(out, t->end_ns);
	fputs(", \"name\": ", out);
	lw_put_json_string(out, f->title, strlen(f->title));
	fprintf(out, ", \"args\": {\"verdict\": \"%s\", \"bytes_per_step\": %.17g, \"count_per_step\": %.17g, \"rate\": \"%s per step\", \"location\": ",
		lw_verdict_name(f->verdict), f->bytes_per_step,
		f->count_per_step, lw_format_rate(rate, f->bytes_per_step));
	if (v->location_label)
		lw_put_json_string(out, v->location_label,
				   v->location_label_len);
	else
		fputs("null", out);
	fputs(", \"fix\": ", out);
	if (f->fix)
		lw_put_json_string(out, f->fix, strlen(f->fix));
	else
		fputs("null", out);
	fputs("}}", out);
	return 0;
}

static int perfetto_report(struct lw_render_run *run,
			   const struct lw_report *r, size_t index)
{
	FILE *out = run->out;
	const struct lw_report_options *options = run->options;
	struct perfetto_state *st = run->state;
	const struct lw_model *m = r->model;
	uint32_t pid = lw_model_header(m)->pid;
	const struct lw_result *res = lw_result_of(r);
	struct lw_timeline t;
	size_t points, findings;
	int rc;

	(void)options;
	(void)index;
	if (!res)
		return -EINVAL;
	findings = lw_result_finding_count(res);
	rc = lw_timeline_read(r, &t);
	if (rc < 0)
		goto out;
	put_process_name(out, st, r);
	put_thread_name(out, st, pid, 1, "steps");
	put_thread_name(out, st, pid, 2, "phases");
	put_thread_name(out, st, pid, 3, "findings");

	points = t.step_count < lw_model_point_count(m) ? t.step_count
						    : lw_model_point_count(m);
	put_counter(out, st, pid, "device memory", t.start_ns, 0);
	for (size_t i = 0; i < points; i++)
		put_counter(out, st, pid, "device memory", t.step_ns[i],
			    lw_model_point(m, i)->live_bytes);
	put_counter(out, st, pid, "device memory", t.end_ns,
		    lw_model_device_live_bytes_at_end(m));

	for (size_t i = 0; i < points; i++) {
		const struct lw_step_point *p = lw_model_point(m, i);
		uint64_t begin = i ? t.step_ns[i - 1] : t.start_ns;

		put_slice_head(out, st, pid, 1, begin, t.step_ns[i]);
		if (lw_model_step_stride(m) > 1)
			fprintf(out, ", \"name\": \"steps %" PRIu64 "-%" PRIu64 "\"",
				p->step - lw_model_step_stride(m) + 1, p->step);
		else
			fprintf(out, ", \"name\": \"step %" PRIu64 "\"", p->step);
		fprintf(out, ", \"args\": {\"live_bytes\": %" PRIu64 ", \"peak_bytes\": %" PRIu64 "}}",
			p->live_bytes, p->peak_bytes);
	}

	for (size_t i = 0; i < t.phase_count; i++) {
		const struct lw_phase_span *s = &t.phases[i];
		const struct lw_string *name = lw_model_string(m, s->name_string);

		put_slice_head(out, st, pid, 2, s->begin_ns, s->end_ns);
		fputs(", \"name\": ", out);
		if (name)
			lw_put_json_string(out, name->text.data, name->text.len);
		else
			fputs("\"(unnamed phase)\"", out);
		fprintf(out, ", \"args\": {\"first_step\": %" PRIu64 ", \"end_step\": %" PRIu64 "}}",
			s->begin_step, s->end_step);
	}

	/* A counter per finding: its location's sites summed. */
	for (size_t k = 0; k < findings && k < PERFETTO_MAX_SITES; k++) {
		const struct lw_result_finding *v = lw_result_finding(res, k);
		char name[48];

		snprintf(name, sizeof(name), "growing site #%zu", k + 1);
		for (size_t i = 0; i < points && v->series_sites; i++)
			put_counter(out, st, pid, name, t.step_ns[i],
				    v->series[i]);
	}
	for (size_t k = 0; rc == 0 && k < findings; k++)
		rc = put_finding(out, st, r, &t, lw_result_finding(res, k));
out:
	lw_timeline_fini(&t);
	return rc;
}

static int perfetto_begin(struct lw_render_run *run)
{
	struct perfetto_state *st = run->state;

	st->first = true;
	fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", run->out);
	return 0;
}

static int perfetto_end(struct lw_render_run *run)
{
	fputs("\n]}\n", run->out);
	return 0;
}

const struct lw_renderer lw_perfetto_renderer = {
	.name = "perfetto",
	.state_size = sizeof(struct perfetto_state),
	.needs = LW_RESULT_SERIES,
	.begin = perfetto_begin,
	.report = perfetto_report,
	.end = perfetto_end,
};
