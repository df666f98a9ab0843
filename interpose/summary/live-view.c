/* SPDX-License-Identifier: MIT */
#include "live-view.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "events.h"
#include "lw-size.h"
#include "tracker.h"
#include "warn.h"

static unsigned live_every;
static int live_signal;
static int handler_installed;
static uint64_t steps;
static uint64_t first_bytes, first_step, last_bytes, last_step;
/* Device memory at the end of the latest step: growth is judged on step
 * ends, never on what a step happens to hold in the middle of it. */
static uint64_t end_bytes;
static int have_first;
/* PyTorch's pool now: what its tensors use, what it reserved. */
static uint64_t pool_allocated, pool_reserved;

/* Async-signal-safe: the recorder sets a flag; its next event does the
 * work (LW_EVENT_LIVE_NOW). */
static void on_signal(int signo)
{
	(void)signo;
	lw_record_request();
}

static void trace_opened(void)
{
	struct sigaction old, sa;

	if (!live_signal || handler_installed)
		return;
	if (sigaction(SIGUSR2, NULL, &old) < 0 ||
	    (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL) == 0)
		handler_installed = 1;
}

/* "; +X over the last K steps, +R per step since step F" from step ends. */
static int format_growth(char *line, size_t size, uint64_t bytes)
{
	char delta[32], rate[32];
	uint64_t since = steps - last_step;
	int64_t d = (int64_t)(bytes - last_bytes);
	int64_t total = (int64_t)(bytes - first_bytes);

	lw_format_size(delta, (uint64_t)(d < 0 ? -d : d));
	lw_format_size(rate, (uint64_t)((total < 0 ? -total : total) /
					(int64_t)(steps - first_step)));
	return snprintf(line, size,
			"; %s%s over the last %" PRIu64 " step%s, %s%s per step since step %" PRIu64,
			d < 0 ? "-" : "+", delta, since, since == 1 ? "" : "s",
			total < 0 ? "-" : "+", rate, first_step);
}

/* "; growing at N sites (+R per step at the fastest)" (kept.h). */
static void format_sites(char *line, size_t size, lw_growth_fn *growth)
{
	char rate[32];
	unsigned sites = 0;
	double fastest = 0;

	if (growth)
		growth(&sites, &fastest);
	if (!sites)
		return;
	lw_format_rate(rate, fastest);
	snprintf(line, size, "; growing at %u site%s (%s per step at the fastest)",
		 sites, sites == 1 ? "" : "s", rate);
}

static void format_line(char *line, size_t size, const char *lead,
			uint64_t live_bytes, uint64_t live_count,
			lw_growth_fn *growth)
{
	char live[32];
	size_t len;
	int n;

	lw_format_size(live, live_bytes);
	n = snprintf(line, size, "leakwatch: %sstep %" PRIu64 ": %s of device memory live in %" PRIu64 " allocation%s",
		     lead, steps, live, live_count, live_count == 1 ? "" : "s");
	if (n < 0 || (size_t)n >= size)
		return;
	len = (size_t)n;
	if (have_first && steps > last_step) {
		if (lead[0]) {
			/* Now, in a step: the growth is that of step ends. */
			lw_format_size(live, end_bytes);
			n = snprintf(line + len, size - len,
				     "; %s at the end of step %" PRIu64, live,
				     steps);
			if (n < 0 || (size_t)n >= size - len)
				return;
			len += (size_t)n;
		}
		n = format_growth(line + len, size - len, end_bytes);
		if (n < 0 || (size_t)n >= size - len)
			return;
		len += (size_t)n;
	}
	format_sites(line + len, size - len, growth);
	len = strlen(line);
	if (pool_reserved && len < size) {
		char a[32], r[32];

		lw_format_size(a, pool_allocated);
		lw_format_size(r, pool_reserved);
		snprintf(line + len, size - len,
			 "; PyTorch's pool: %s allocated of %s reserved", a, r);
	}
}

static void pool(uint64_t allocated, uint64_t reserved)
{
	pool_allocated = allocated;
	pool_reserved = reserved;
}

static void remember(uint64_t live_bytes)
{
	if (!have_first) {
		first_bytes = live_bytes;
		first_step = steps;
		have_first = 1;
	}
	last_bytes = live_bytes;
	last_step = steps;
}

static void step(uint64_t live_bytes, uint64_t live_count,
		 lw_growth_fn *growth)
{
	char line[512];

	steps++;
	end_bytes = live_bytes;
	if (!have_first && steps == 1) {
		/* The baseline: memory after the first step (optimizer
		 * state and caches are made there). */
		remember(live_bytes);
		return;
	}
	if (!live_every || steps % live_every != 0)
		return;
	format_line(line, sizeof(line) - 1, "", live_bytes, live_count, growth);
	strcat(line, "\n");
	lw_write_stderr(line, strlen(line));
	remember(live_bytes);
}

static void print_now(const char *lead, uint64_t live_bytes,
		      uint64_t live_count, const char *trace_path,
		      lw_growth_fn *growth)
{
	char line[512 + 4096];
	size_t n;

	format_line(line, 512, lead, live_bytes, live_count, growth);
	n = strlen(line);
	snprintf(line + n, sizeof(line) - n, "; trace flushed: %s\n",
		 trace_path);
	lw_write_stderr(line, strlen(line));
}

static void reset(void)
{
	steps = first_step = last_step = end_bytes = 0;
	pool_allocated = pool_reserved = 0;
	have_first = 0;
}

/* The recorder's events (events.h). */
static void on_trace_opened(const struct lw_event *event, void *ctx)
{
	(void)event;
	(void)ctx;
	trace_opened();
}

static void on_step_end(const struct lw_event *e, void *ctx)
{
	(void)ctx;
	pool(e->pool_allocated, e->pool_reserved);
	step(e->live_bytes, e->live_count, e->growth);
}

static void on_live_now(const struct lw_event *e, void *ctx)
{
	(void)ctx;
	pool(e->pool_allocated, e->pool_reserved);
	print_now(e->lead, e->live_bytes, e->live_count, e->path, e->growth);
}

static void on_fork_child(const struct lw_event *event, void *ctx)
{
	(void)event;
	(void)ctx;
	reset();
}

void lw_live_view_configure(unsigned every, int use_signal)
{
	live_every = every;
	live_signal = use_signal;
	lw_events_subscribe(LW_EVENT_TRACE_OPENED, on_trace_opened, NULL);
	lw_events_subscribe(LW_EVENT_STEP_END, on_step_end, NULL);
	lw_events_subscribe(LW_EVENT_LIVE_NOW, on_live_now, NULL);
	lw_events_subscribe(LW_EVENT_FORK_CHILD, on_fork_child, NULL);
}
