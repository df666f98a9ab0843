/* SPDX-License-Identifier: MIT */
#include "live-view.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lw-size.h"
#include "summary.h"

volatile sig_atomic_t lw_live_requested;

static unsigned live_every;
static int live_signal;
static int handler_installed;
static uint64_t steps;
static uint64_t first_bytes, first_step, last_bytes, last_step;
static int have_first;

void lw_live_view_configure(unsigned every, int use_signal)
{
	live_every = every;
	live_signal = use_signal;
}

/* Async-signal-safe: sets a flag; the next event does the work. */
static void on_signal(int signo)
{
	(void)signo;
	lw_live_requested = 1;
}

void lw_live_view_trace_opened(void)
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

static void format_line(char *line, size_t size, const char *lead,
			uint64_t live_bytes, uint64_t live_count)
{
	char live[32], delta[32], rate[32];
	int n;

	lw_format_size(live, live_bytes);
	n = snprintf(line, size, "leakwatch: %sstep %" PRIu64 ": %s of device memory live in %" PRIu64 " allocation%s",
		     lead, steps, live, live_count, live_count == 1 ? "" : "s");
	if (n < 0 || (size_t)n >= size)
		return;
	if (have_first && steps > last_step) {
		uint64_t since = steps - last_step;
		int64_t d = (int64_t)(live_bytes - last_bytes);
		int64_t total = (int64_t)(live_bytes - first_bytes);

		lw_format_size(delta, (uint64_t)(d < 0 ? -d : d));
		lw_format_size(rate, (uint64_t)((total < 0 ? -total : total) /
					   (int64_t)(steps - first_step)));
		snprintf(line + n, size - (size_t)n,
			 "; %s%s over the last %" PRIu64 " step%s, %s%s per step since step %" PRIu64,
			 d < 0 ? "-" : "+", delta, since, since == 1 ? "" : "s",
			 total < 0 ? "-" : "+", rate, first_step);
	}
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

void lw_live_view_step(uint64_t live_bytes, uint64_t live_count)
{
	char line[512];

	steps++;
	if (!have_first && steps == 1) {
		/* The baseline: memory after the first step (optimizer
		 * state and caches are made there). */
		remember(live_bytes);
		return;
	}
	if (!live_every || steps % live_every != 0)
		return;
	format_line(line, sizeof(line) - 1, "", live_bytes, live_count);
	strcat(line, "\n");
	lw_write_stderr(line, strlen(line));
	remember(live_bytes);
}

void lw_live_view_print_now(uint64_t live_bytes, uint64_t live_count,
		       const char *trace_path)
{
	char line[512 + 4096];
	size_t n;

	format_line(line, 512, "SIGUSR2: ", live_bytes, live_count);
	n = strlen(line);
	snprintf(line + n, sizeof(line) - n, "; trace flushed: %s\n",
		 trace_path);
	lw_write_stderr(line, strlen(line));
}

void lw_live_view_reset(void)
{
	steps = first_step = last_step = 0;
	have_first = 0;
	lw_live_requested = 0;
}
