/* SPDX-License-Identifier: MIT */
/*
 * The bare-mode growth gate. With LEAKWATCH_MAX_GROWTH=SIZE, a program that
 * would exit with status 0 exits with LW_EXIT_GROWTH (23) instead when its
 * device memory grew by more than SIZE per step: the run's series of device
 * memory at step ends, judged as `leakwatch check` judges a run
 * (common/lw-growth.c), after at least LEAKWATCH_MIN_STEPS steps (default
 * 10). Any other status is passed on untouched: the program's own failure
 * always wins. A gate that could judge nothing (every allocation failed,
 * the trace could not be written, fewer steps than it needs) exits
 * LW_EXIT_UNJUDGED (24) instead of passing: a gate never passes on
 * nothing. A program that marks no steps is not judged here (the report
 * infers steps from the trace; the shim does not): the gate says so and
 * names the command that judges it.
 *
 * The other limits of `leakwatch check` (LEAKWATCH_MAX_RESERVED_GROWTH,
 * LEAKWATCH_MAX_PEAK, LEAKWATCH_MAX_RESERVED_PEAK, LEAKWATCH_FAIL_ON) need
 * the whole trace (PyTorch's pool, the diagnosis), which the program's
 * process does not read: where only the shim is loaded, it says once, at
 * the exit of the process that traced, which command judges them.
 *
 * Only an on_exit() handler learns the exit status. This one is registered
 * from the library's constructor, which runs before the C library registers
 * the dynamic linker's finalizer at the program's start; handlers run in
 * reverse order, so it runs after the program's atexit handlers and after
 * every library destructor (the trace is closed by then). Changing the
 * status with _exit() then skips only the final flush of stdio buffers,
 * which it does first.
 *
 * The series is kept like the report's: at most LW_GATE_POINTS points,
 * pairs merged (the later one kept) and the stride doubled when full.
 */
#include "gate.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "config.h"
#include "events.h"
#include "lw-growth.h"
#include "lw-size.h"
#include "tracker.h"
#include "warn.h"

#define LW_GATE_POINTS 8192

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static int gate_on;
/* Limits only `leakwatch run` or `leakwatch check` judge, by name. */
static char other_limits[160];
static uint64_t max_growth, min_steps = LW_DEFAULT_MIN_STEPS;
static uint64_t steps, stride = 1;
static size_t point_count;
static double points[LW_GATE_POINTS];
static char trace[256];
static int trace_failed;
static char limit_text[64];	/* as the user wrote it */

static void opened(const char *path)
{
	if (!gate_on && !other_limits[0])
		return;
	pthread_mutex_lock(&gate_lock);
	snprintf(trace, sizeof(trace), "%s", path);
	pthread_mutex_unlock(&gate_lock);
}

static void failed(const char *path)
{
	if (!gate_on && !other_limits[0])
		return;
	pthread_mutex_lock(&gate_lock);
	snprintf(trace, sizeof(trace), "%s", path);
	trace_failed = 1;
	pthread_mutex_unlock(&gate_lock);
}

static void step(uint64_t device_bytes)
{
	if (!gate_on)
		return;
	pthread_mutex_lock(&gate_lock);
	steps++;
	if (steps % stride == 0) {
		if (point_count == LW_GATE_POINTS) {
			for (size_t i = 0; i < LW_GATE_POINTS / 2; i++)
				points[i] = points[2 * i + 1];
			point_count = LW_GATE_POINTS / 2;
			stride *= 2;
		}
		if (steps % stride == 0)
			points[point_count++] = (double)device_bytes;
	}
	pthread_mutex_unlock(&gate_lock);
}

static void reset(void)
{
	/* After fork, in the only thread: no lock is held. */
	steps = 0;
	stride = 1;
	point_count = 0;
	trace[0] = 0;
	trace_failed = 0;
}

static void say(const char *line)
{
	lw_write_stderr(line, strlen(line));
}

/* Ends the process with LW_EXIT_UNJUDGED when it would exit 0. */
static void unjudged(int status, const char *why)
{
	char line[1024];

	snprintf(line, sizeof(line),
		 "leakwatch: LEAKWATCH_MAX_GROWTH: growth cannot be judged: "
		 "%s%s\n", why,
		 status == 0 ? "; exit status 24"
			     : " (the program's own exit status is kept)");
	say(line);
	if (status == 0) {
		fflush(NULL);
		_exit(LW_EXIT_UNJUDGED);
	}
}

static void gate_at_exit(int status, void *arg)
{
	char line[1024], rate[48], per10k[48], limit[32], command[400];
	uint64_t recorded, failed;
	struct lw_growth g;
	int over = 0;

	(void)arg;
	pthread_mutex_lock(&gate_lock);
	if (!trace[0]) {
		/* Nothing was recorded here (a launcher, a worker). */
		pthread_mutex_unlock(&gate_lock);
		return;
	}
	if (other_limits[0]) {
		snprintf(line, sizeof(line),
			 "leakwatch: %s: not judged by the shim alone (it needs "
			 "the whole trace): run the program under `leakwatch "
			 "run`, or judge its trace with `leakwatch check` "
			 "(%s)\n", other_limits, trace);
		say(line);
	}
	if (!gate_on) {
		pthread_mutex_unlock(&gate_lock);
		return;
	}
	if (trace_failed) {
		snprintf(line, sizeof(line),
			 "the trace %s could not be written", trace);
		pthread_mutex_unlock(&gate_lock);
		unjudged(status, line);
		return;
	}
	lw_allocation_counts(&recorded, &failed);
	if (failed && !recorded) {
		snprintf(line, sizeof(line),
			 "every CUDA allocation failed (%llu calls; see the "
			 "exit summary and the trace %s)",
			 (unsigned long long)failed, trace);
		pthread_mutex_unlock(&gate_lock);
		unjudged(status, line);
		return;
	}
	lw_format_size(limit, max_growth);
	/* The command that judges this trace as this gate does. */
	if (min_steps == LW_DEFAULT_MIN_STEPS)
		snprintf(command, sizeof(command),
			 "leakwatch check --max-growth %s %s", limit_text,
			 trace);
	else
		snprintf(command, sizeof(command),
			 "leakwatch check --max-growth %s --min-steps %llu %s",
			 limit_text, (unsigned long long)min_steps, trace);
	/* A gate never passes on nothing. */
	if (steps == 0) {
		snprintf(line, sizeof(line),
			 "the program marked no steps: mark them "
			 "(leakwatch.step(), leakwatch_mark_step(), or "
			 "LEAKWATCH_STEP_AT=file:line for a loop), or judge the "
			 "trace with `%s`, which infers steps", command);
		pthread_mutex_unlock(&gate_lock);
		unjudged(status, line);
		return;
	}
	if (steps < min_steps) {
		snprintf(line, sizeof(line),
			 "%llu step%s, at least %llu needed (LEAKWATCH_MIN_STEPS): "
			 "run it longer", (unsigned long long)steps,
			 steps == 1 ? "" : "s", (unsigned long long)min_steps);
		pthread_mutex_unlock(&gate_lock);
		unjudged(status, line);
		return;
	}
	g = lw_judge_series(points, point_count, stride);
	over = g.verdict == LW_VERDICT_GROWING &&
	       g.per_step > (double)max_growth;
	lw_format_rate(rate, g.per_step);
	lw_format_rate(per10k, g.per_step * 10000);
	if (over)
		snprintf(line, sizeof(line),
			 "leakwatch: GROWING: device memory %s per step (%s "
			 "per 10,000 steps) over %llu steps, more than the %s "
			 "allowed by LEAKWATCH_MAX_GROWTH%s; `%s` names the "
			 "sites\n",
			 rate, per10k, (unsigned long long)steps, limit,
			 status == 0 ? ": exit status 23"
				     : " (the program's own exit status is kept)",
			 command);
	else
		snprintf(line, sizeof(line),
			 "leakwatch: ok: %s, device memory %s per step over "
			 "%llu steps, within the %s allowed by "
			 "LEAKWATCH_MAX_GROWTH\n",
			 lw_verdict_name(g.verdict), rate,
			 (unsigned long long)steps, limit);
	pthread_mutex_unlock(&gate_lock);
	say(line);
	if (over && status == 0) {
		fflush(NULL);
		_exit(LW_EXIT_GROWTH);
	}
}

/*
 * Reads the gate's settings and registers its handler, early (see the top
 * of this file). A bad value means no gate, and a warning at the first
 * allocation (with the other settings').
 */
/* LEAKWATCH_MAX_GROWTH and LEAKWATCH_MIN_STEPS: 1 when the growth gate
 * is asked for and its values parse. */
static int growth_settings(void)
{
	const char *value = getenv("LEAKWATCH_MAX_GROWTH");
	const char *steps_value = getenv("LEAKWATCH_MIN_STEPS");

	if (!value)
		return 0;
	if (lw_parse_size(value, &max_growth) < 0) {
		lw_config_defer_problem("LEAKWATCH_MAX_GROWTH",
					"LEAKWATCH_MAX_GROWTH='%.64s' is not a "
					"size (such as 0, 512KiB or 1MiB); "
					"growth is not judged", value);
		return 0;
	}
	snprintf(limit_text, sizeof(limit_text), "%s", value);
	if (steps_value) {
		char *end;
		unsigned long long n;

		n = strtoull(steps_value, &end, 10);
		if (!*steps_value || *end || steps_value[0] == '-' || n == 0) {
			lw_config_defer_problem("LEAKWATCH_MIN_STEPS",
						"LEAKWATCH_MIN_STEPS='%.64s' is "
						"not a positive number of steps; "
						"growth is not judged",
						steps_value);
			return 0;
		}
		min_steps = n;
	}
	return 1;
}

__attribute__((constructor)) static void gate_init(void)
{
	static const char *const others[] = {
		"LEAKWATCH_MAX_RESERVED_GROWTH", "LEAKWATCH_MAX_PEAK",
		"LEAKWATCH_MAX_RESERVED_PEAK", "LEAKWATCH_FAIL_ON",
	};
	size_t used = 0;
	int growth;

	if (getauxval(AT_SECURE))
		return;
	if (getenv("LEAKWATCH_DISABLE") &&
	    lw_parse_bool(getenv("LEAKWATCH_DISABLE")) == 1)
		return;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		int n;

		if (!getenv(others[i]))
			continue;
		/* The pytest plugin judges LEAKWATCH_FAIL_ON itself, in the
		 * pytest it started again with the shim. */
		if (strcmp(others[i], "LEAKWATCH_FAIL_ON") == 0 &&
		    getenv("LEAKWATCH_PYTEST_REEXEC"))
			continue;
		n = snprintf(other_limits + used, sizeof(other_limits) - used,
			     "%s%s", used ? ", " : "", others[i]);
		if (n > 0 && (size_t)n < sizeof(other_limits) - used)
			used += (size_t)n;
	}
	growth = growth_settings();
	if (!growth && !used)
		return;
	if (on_exit(gate_at_exit, NULL) == 0)
		gate_on = growth;
	else
		other_limits[0] = 0;
}

/* The recorder's events (events.h). */
static void on_trace_opened(const struct lw_event *event, void *ctx)
{
	(void)ctx;
	opened(event->path);
}

static void on_trace_failed(const struct lw_event *event, void *ctx)
{
	(void)ctx;
	failed(event->path);
}

static void on_step_end(const struct lw_event *event, void *ctx)
{
	(void)ctx;
	step(event->step_bytes);
}

static void on_fork_child(const struct lw_event *event, void *ctx)
{
	(void)event;
	(void)ctx;
	reset();
}

void lw_gate_start(void)
{
	lw_events_subscribe(LW_EVENT_TRACE_OPENED, on_trace_opened, NULL);
	lw_events_subscribe(LW_EVENT_TRACE_FAILED, on_trace_failed, NULL);
	lw_events_subscribe(LW_EVENT_STEP_END, on_step_end, NULL);
	lw_events_subscribe(LW_EVENT_FORK_CHILD, on_fork_child, NULL);
}
