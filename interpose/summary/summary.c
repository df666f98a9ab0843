/* SPDX-License-Identifier: MIT */
#include "summary.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "kept.h"
#include "lw-size.h"
#include "lw-text.h"
#include "stacks.h"
#include "warn.h"

void lw_summary_init(struct lw_summary *s, const char *trace_path,
		     const char *when, uint64_t live_bytes, uint64_t live_count,
		     uint64_t unknown_frees)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->trace_path, sizeof(s->trace_path), "%s", trace_path);
	s->when = when;
	s->live_bytes = live_bytes;
	s->live_count = live_count;
	s->unknown_frees = unknown_frees;
}

void lw_summary_add_site(struct lw_summary *s, const uintptr_t *frames,
			 unsigned depth, const char *python, uint64_t bytes,
			 uint64_t count)
{
	unsigned pos;

	s->sites_total++;
	if (s->nsites == LW_SUMMARY_SITES &&
	    bytes <= s->sites[LW_SUMMARY_SITES - 1].bytes)
		return;
	pos = s->nsites < LW_SUMMARY_SITES ? s->nsites++ : LW_SUMMARY_SITES - 1;
	while (pos > 0 && s->sites[pos - 1].bytes < bytes) {
		s->sites[pos] = s->sites[pos - 1];
		pos--;
	}
	struct lw_summary_site *site = &s->sites[pos];
	site->bytes = bytes;
	site->count = count;
	site->depth = depth < LW_SUMMARY_FRAMES ? depth : LW_SUMMARY_FRAMES;
	memcpy(site->frames, frames, site->depth * sizeof(*frames));
	snprintf(site->python, sizeof(site->python), "%s", python ? python : "");
}

void lw_summary_add_growing(struct lw_summary *s, const uintptr_t *frames,
			    unsigned depth, const char *python, double rate,
			    uint64_t max_bytes, int released)
{
	unsigned pos;

	s->growing_total++;
	if (s->ngrowing == LW_SUMMARY_SITES &&
	    rate <= s->growing[LW_SUMMARY_SITES - 1].rate)
		return;
	pos = s->ngrowing < LW_SUMMARY_SITES ? s->ngrowing++
					     : LW_SUMMARY_SITES - 1;
	while (pos > 0 && s->growing[pos - 1].rate < rate) {
		s->growing[pos] = s->growing[pos - 1];
		pos--;
	}
	struct lw_summary_growth *g = &s->growing[pos];
	g->rate = rate;
	g->max_bytes = max_bytes;
	g->released = released;
	g->depth = depth < LW_SUMMARY_FRAMES ? depth : LW_SUMMARY_FRAMES;
	memcpy(g->frames, frames, g->depth * sizeof(*frames));
	snprintf(g->python, sizeof(g->python), "%s", python ? python : "");
}

/* Writes what snprintf() formatted into line (n, cut to the buffer). */
static void put(const char *line, int n, size_t size)
{
	lw_write_stderr(line, n < 0 ? 0 : (size_t)n < size ? (size_t)n
							  : size - 1);
}

/* Text of the program's (a name, a path), escaped as the text report
 * escapes it: it cannot forge a line of its own or reach the terminal. */
static const char *escaped(char *out, size_t size, const char *text)
{
	lw_text_escape(out, size, text, strlen(text));
	return out;
}

/* "name (module+0xoff)" for a return address. */
static void describe(char *out, size_t size, uintptr_t addr)
{
	char name[256], module_name[256];
	Dl_info info;

	/* addr - 1: a return address may be the first byte of the next
	 * function when the call was the last instruction. */
	if (!dladdr((void *)(addr - 1), &info) || !info.dli_fname) {
		snprintf(out, size, "0x%llx", (unsigned long long)addr);
		return;
	}
	const char *module = strrchr(info.dli_fname, '/');
	module = module ? module + 1 : info.dli_fname;
	escaped(module_name, sizeof(module_name), module);
	unsigned long long offset = addr - (uintptr_t)info.dli_fbase;
	if (info.dli_sname)
		snprintf(out, size, "%s (%s+0x%llx)",
			 escaped(name, sizeof(name), info.dli_sname),
			 module_name, offset);
	else
		snprintf(out, size, "%s+0x%llx", module_name, offset);
}

/* The sites that grew from step to step, first: what leaked. */
static void print_growing(const struct lw_summary *s)
{
	char line[1024], rate[32], bytes[32], where[640];
	int n;

	if (!s->ngrowing)
		return;
	n = snprintf(line, sizeof(line),
		     "leakwatch: device memory grew from step to step at "
		     "%llu site%s:\n", (unsigned long long)s->growing_total,
		     s->growing_total == 1 ? "" : "s");
	put(line, n, sizeof(line));
	for (unsigned i = 0; i < s->ngrowing; i++) {
		const struct lw_summary_growth *g = &s->growing[i];

		lw_format_rate(rate, g->rate);
		lw_format_size(bytes, g->max_bytes);
		if (g->python[0])
			escaped(where, sizeof(where), g->python);
		else if (g->depth)
			describe(where, sizeof(where), g->frames[0]);
		else
			snprintf(where, sizeof(where), "(no stack)");
		n = snprintf(line, sizeof(line),
			     "leakwatch:   %s per step at %s, %s at the most%s\n",
			     rate, where, bytes,
			     g->released ? ", let go after the last step" : "");
		put(line, n, sizeof(line));
	}
}

void lw_summary_print(const struct lw_summary *s)
{
	char line[2 * PATH_MAX + 256], bytes[32], where[3][600];
	char python[4 * sizeof(s->sites[0].python)], path[PATH_MAX];
	int n;

	print_growing(s);

	if (!s->live_count) {
		n = snprintf(line, sizeof(line),
			     "leakwatch: no device memory live %s\n", s->when);
		put(line, n, sizeof(line));
	} else {
		lw_format_size(bytes, s->live_bytes);
		n = snprintf(line, sizeof(line),
			     "leakwatch: %s of device memory live %s in "
			     "%llu allocation%s from %llu site%s\n", bytes, s->when,
			     (unsigned long long)s->live_count,
			     s->live_count == 1 ? "" : "s",
			     (unsigned long long)s->sites_total,
			     s->sites_total == 1 ? "" : "s");
		put(line, n, sizeof(line));
	}
	for (unsigned i = 0; i < s->nsites; i++) {
		const struct lw_summary_site *site = &s->sites[i];
		lw_format_size(bytes, site->bytes);
		for (unsigned f = 0; f < 3; f++)
			where[f][0] = '\0';
		for (unsigned f = 0; f < site->depth; f++)
			describe(where[f], sizeof(where[f]), site->frames[f]);
		if (site->python[0]) {
			n = snprintf(line, sizeof(line),
				     "leakwatch:   %s in %llu allocation%s at "
				     "%s\n", bytes,
				     (unsigned long long)site->count,
				     site->count == 1 ? "" : "s",
				     escaped(python, sizeof(python),
					     site->python));
			put(line, n, sizeof(line));
			continue;
		}
		n = snprintf(line, sizeof(line),
			     "leakwatch:   %s in %llu allocation%s at %s%s%s\n",
			     bytes, (unsigned long long)site->count,
			     site->count == 1 ? "" : "s",
			     site->depth ? where[0] : "(no stack)",
			     site->depth > 1 ? " <- " : "",
			     site->depth > 1 ? where[1] : "");
		put(line, n, sizeof(line));
	}
	if (s->failed_allocations) {
		n = snprintf(line, sizeof(line),
			     "leakwatch: %llu CUDA allocation%s failed (the "
			     "first: %s returned error %d)\n",
			     (unsigned long long)s->failed_allocations,
			     s->failed_allocations == 1 ? "" : "s",
			     s->failed_api, s->failed_error);
		put(line, n, sizeof(line));
	}
	if (s->lost_events) {
		n = snprintf(line, sizeof(line),
			     "leakwatch: about %llu event%s (allocations, "
			     "frees, steps) from when the trace stopped being "
			     "written %s not in it%s\n",
			     (unsigned long long)s->lost_events,
			     s->lost_events == 1 ? "" : "s",
			     s->lost_events == 1 ? "is" : "are",
			     s->descriptor_lost ?
				     " (the program closed or replaced the "
				     "trace's descriptor, and the trace could "
				     "not be opened again)" : "");
		put(line, n, sizeof(line));
	}
	if (s->unknown_frees) {
		n = snprintf(line, sizeof(line),
			     "leakwatch: %llu free%s of memory allocated "
			     "before or outside leakwatch's view\n",
			     (unsigned long long)s->unknown_frees,
			     s->unknown_frees == 1 ? "" : "s");
		put(line, n, sizeof(line));
	}
	escaped(path, sizeof(path), s->trace_path);
	n = snprintf(line, sizeof(line),
		     "leakwatch: trace %s (full report: leakwatch report %s)\n",
		     path, path);
	put(line, n, sizeof(line));
}

/* ---- the recorder's events (events.h) ---- */

/* The summary taken last: said at exit. */
static struct lw_summary taken;

struct summarizing {
	struct lw_summary *summary;
	uint32_t steps;
};

static void summarize_stack(struct lw_stack_entry *s, void *data)
{
	const struct summarizing *z = data;
	char python[160] = "";
	int growing = lw_kept_growing(s, z->steps);

	if (!s->device_live_count && !growing)
		return;
	lw_stacks_python_location(s, python, sizeof(python));
	if (growing)
		lw_summary_add_growing(z->summary, s->frames, s->depth,
				       python[0] ? python : NULL,
				       lw_kept_rate(s), s->kept.max_bytes,
				       !s->device_live_count);
	if (s->device_live_count)
		lw_summary_add_site(z->summary, s->frames, s->depth,
				    python[0] ? python : NULL,
				    s->device_live_bytes, s->device_live_count);
}

/* Under the tracker's lock: the stacks hold still. */
static void on_summary(const struct lw_event *e, void *ctx)
{
	struct summarizing z = { &taken, (uint32_t)e->steps };

	(void)ctx;
	lw_summary_init(&taken, e->path, e->lead, e->live_bytes,
			e->live_count, e->unknown_frees);
	lw_stacks_for_each(summarize_stack, &z);
}

static void on_exit_said(const struct lw_event *e, void *ctx)
{
	(void)ctx;
	taken.failed_allocations = e->failed_allocations;
	taken.failed_api = e->failed_api;
	taken.failed_error = e->failed_error;
	taken.lost_events = e->lost_events;
	taken.descriptor_lost = e->descriptor_lost;
	lw_summary_print(&taken);
}

void lw_summary_start(void)
{
	lw_events_subscribe(LW_EVENT_SUMMARY, on_summary, NULL);
	lw_events_subscribe(LW_EVENT_EXIT, on_exit_said, NULL);
}
