/* SPDX-License-Identifier: MIT */
/*
 * Who holds it: runs the walk (walk.h) over the program's objects and
 * writes a HOLDER record for each holder it finds. The walk reads the
 * interpreter and runs nothing in it, so it needs a thread that holds the
 * GIL and keeps it for the whole search: it never takes the GIL itself,
 * which could deadlock (allocations inside backward() run with the GIL
 * released while another thread may hold it and wait on them).
 *
 * Three searches. The whole one at the report point (the atexit callback of
 * pyhooks.c), on leakwatch_snapshot() and on SIGUSR2, for every allocation
 * that outlived the step that made it. The one during the run, asked at a
 * step end for the stacks that have grown long enough to be judged
 * (kept.h), for their memory only: the holder of a leak inside a function
 * (a list local to train()) is gone once the function returns, so it is
 * found while it runs. An asked search runs on the next thread that passes
 * through the shim holding the GIL (lw_events_poll(): the thread allocating
 * the next step's tensors, whichever thread trains), or in the main thread
 * at its next pending call, whichever comes first. The searches during the
 * run may take together at most IN_RUN_SHARE of the process's wall time;
 * past it a search waits for a later step end (the first for a growth, and
 * the first for memory kept into the next step, always run), and a later
 * one stops where it would pass that share. Each stops at the budget
 * (LEAKWATCH_HOLDERS_BUDGET).
 */
#include "holders.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "events.h"
#include "pyapi.h"
#include "lw-format.h"
#include "tracker.h"
#include "walk.h"

/* Targets passed to one search at most: the oldest are as good as any. */
#define MAX_TARGETS 65536
/* The share of the process's wall time the searches during the run may
 * take together. */
#define IN_RUN_SHARE 0.01

/* Searches asked for (ASK_*) and not yet run. */
static int asked;
#define ASK_WHOLE 1
#define ASK_IN_RUN 2

static double budget = 2.0;
static int enabled = 1;
/* The searches during the run: how many, their time, since when. */
static unsigned in_run_searches;
static double in_run_seconds, started;

static void on_asked(const struct lw_event *event, void *ctx);
static void on_request(const struct lw_event *event, void *ctx);
static void on_search_due(const struct lw_event *event, void *ctx);

void lw_holders_configure(int on, double budget_seconds)
{
	enabled = on;
	if (budget_seconds > 0)
		budget = budget_seconds;
	started = lw_walk_now();
	lw_events_subscribe(LW_EVENT_ASKED, on_asked, NULL);
	lw_events_subscribe(LW_EVENT_REQUEST, on_request, NULL);
	lw_events_subscribe(LW_EVENT_SEARCH_DUE, on_search_due, NULL);
}

static void record(const struct lw_walk_holder *h, void *ctx)
{
	unsigned flags = *(const unsigned *)ctx | h->flags;

	if (h->graph_nodes || strstr(h->path, ".grad_fn"))
		flags |= LW_HOLDER_GRAPH;
	for (size_t i = 0; i < h->count; i++)
		lw_record_holder(h->addresses[i], h->path, h->root, h->objects,
				 h->graph_nodes, flags);
}

static int by_start(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* One search: of every suspect, or (in_run) of the stacks asked for. The
 * caller holds the GIL (lw_walk_possible()). */
static void search(int in_run)
{
	uint64_t *pairs;
	size_t n, count;
	unsigned flags = 0;
	double start = lw_walk_now(), limit = budget;
	struct lw_walk_result res;
	int entered = 0;

	/* Inside a hook already (a poll after its record): the tracker's
	 * lock is free, and the thread is marked as inside. */
	if (!lw_in_hook) {
		if (!lw_enter())
			return;
		entered = 1;
	}
	/* The first search during the run for each reason (a growth,
	 * memory kept into the next step) always runs, with the whole
	 * budget; later ones wait while the searches have taken more than
	 * their share, and stop where they would take more. */
	if (in_run && in_run_searches && !lw_holders_first_of_its_reason()) {
		double left = IN_RUN_SHARE * (start - started) - in_run_seconds;

		if (left <= 0)
			goto out;
		if (left < limit)
			limit = left;
	}
	count = lw_holder_targets(NULL, 0, in_run);
	if (count == 0)
		goto out; /* nothing outlived its step: nothing to explain */
	if (count > MAX_TARGETS)
		count = MAX_TARGETS;
	pairs = lw_arena_alloc(2 * count * sizeof(*pairs));
	if (!pairs)
		goto out;
	n = lw_holder_targets(pairs, count, in_run);
	if (n > count)
		n = count;
	qsort(pairs, n, 2 * sizeof(*pairs), by_start);
	res = lw_walk(pairs, n, start + limit, lw_steps_since_gc(), record,
		      &flags);
	lw_arena_free(pairs);
	/* Cut before it found anything: the report says so. */
	if (res.cut)
		lw_record_holder(0, "", "", 0, 0, LW_HOLDER_CUT);
	if (in_run) {
		in_run_searches++;
		in_run_seconds += lw_walk_now() - start;
		lw_record_searches_in_run(in_run_searches, in_run_seconds);
	}
out:
	if (entered)
		lw_leave();
}

/*
 * The text of the notebook cells, once each, so that the report shows the
 * lines of a cell (the interpreter's linecache holds it, not a file). At
 * the searches of the whole heap (the report point, snapshot(), SIGUSR2),
 * with or without the holder search.
 */
static void note_cell(const char *name, const char *text, size_t len,
		      void *ctx)
{
	(void)ctx;
	lw_record_source(name, text, len);
}

static void note_cells(void)
{
	int entered = 0;

	if (!lw_in_hook) {
		if (!lw_enter())
			return;
		entered = 1;
	}
	lw_walk_cells(note_cell, NULL);
	if (entered)
		lw_leave();
}

void lw_holders_search(void)
{
	if (!lw_walk_possible())
		return;
	note_cells();
	if (enabled)
		search(0);
}

/* Runs what was asked, if this thread holds the GIL. */
static void run_asked(void)
{
	int what;

	if (!lw_walk_possible())
		return;
	what = __atomic_exchange_n(&asked, 0, __ATOMIC_ACQ_REL);
	lw_events_answered();
	/* The whole search covers the stacks asked for too, but leaves
	 * their ask: it may have been cut before it reached them. */
	if (what & ASK_WHOLE) {
		note_cells();
		search(0);
	}
	if (what & ASK_IN_RUN)
		search(1);
}

void lw_holders_run_asked(void)
{
	if (enabled)
		run_asked();
}

/* The main thread's pending call: C code the interpreter calls between
 * two instructions, with the GIL held. */
static int pending_call(void *arg)
{
	(void)arg;
	run_asked();
	return 0;
}

static void ask(int what)
{
	const struct lw_pyapi *py;

	if (!enabled)
		return;
	if (__atomic_fetch_or(&asked, what, __ATOMIC_ACQ_REL) & what)
		return; /* asked already: that one covers this */
	lw_events_ask();
	py = lw_pyapi();
	if (py->Py_AddPendingCall && py->Py_IsInitialized &&
	    py->Py_IsInitialized())
		py->Py_AddPendingCall(pending_call, NULL);
}

void lw_holders_schedule(void)
{
	ask(ASK_WHOLE);
}

void lw_holders_schedule_in_run(void)
{
	ask(ASK_IN_RUN);
}

/* The recorder's events (events.h). */
static void on_asked(const struct lw_event *event, void *ctx)
{
	(void)event;
	(void)ctx;
	lw_holders_run_asked();
}

/* SIGUSR2: the whole search. */
static void on_request(const struct lw_event *event, void *ctx)
{
	(void)event;
	(void)ctx;
	lw_holders_schedule();
}

/* A step end found stacks grown long enough to be judged. */
static void on_search_due(const struct lw_event *event, void *ctx)
{
	(void)event;
	(void)ctx;
	lw_holders_schedule_in_run();
}
