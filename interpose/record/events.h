/* SPDX-License-Identifier: MIT */
/*
 * What the recorder announces, for the rooms above it to react to: the
 * exit summary, the live view, the growth gate, the holder search, where
 * code comes from, the optimizer hooks, PyTorch's settings. Each of them
 * subscribes once, from its start (life/process.c wires them up, before
 * the first event), and the recorder names none of them.
 *
 * An event calls its subscribers in the order they subscribed, in the
 * thread that announces it, with what struct lw_event says. A fixed table
 * and no allocation: an event costs an indexed walk of a few pointers,
 * and none is announced per allocation that was not a call per allocation
 * before. Under the tracker's lock unless the event says otherwise: a
 * subscriber then calls nothing of the tracker that takes it.
 */
#ifndef LW_EVENTS_H
#define LW_EVENTS_H

#include <stdint.h>

struct lw_writer;

enum lw_event_kind {
	/* The trace is opening: what it says of the process (writer). */
	LW_EVENT_TRACE_INFO,
	/* The trace opened at path, or could not be (path). */
	LW_EVENT_TRACE_OPENED,
	LW_EVENT_TRACE_FAILED,
	/* A step ended and was written: the figures of struct lw_event. */
	LW_EVENT_STEP_END,
	/* A step end asks for the holder search of what has grown. */
	LW_EVENT_SEARCH_DUE,
	/* A signal's request is taken: the whole holder search, asked. */
	LW_EVENT_REQUEST,
	/* The live view's line now (lead, the figures, path): the signal's
	 * request or leakwatch.snapshot(), after the trace was flushed. */
	LW_EVENT_LIVE_NOW,
	/* A new stack with Python frames, in a Python process: new code is
	 * running. Without the lock. */
	LW_EVENT_NEW_CODE,
	/* What a room asked for (lw_events_ask()) may run now, in a thread
	 * that passes through the shim. Without the lock. */
	LW_EVENT_ASKED,
	/* The exit summary is taken now (when, path, the figures, steps). */
	LW_EVENT_SUMMARY,
	/* The trace is closed at exit and a summary was taken: it is said
	 * (the failures and losses of struct lw_event). Without the lock. */
	LW_EVENT_EXIT,
	/* In a forked child, whose trace starts again: what a room kept of
	 * its parent's is forgotten. */
	LW_EVENT_FORK_CHILD,
	LW_EVENT_COUNT,
};

/* Subscribers of one event, at most. */
#define LW_EVENT_SUBSCRIBERS_MAX 4

/* What grows from step to step (kept.h), asked for only when a line is
 * printed: how many sites, and the fastest's bytes per step. */
typedef void lw_growth_fn(unsigned *sites, double *fastest);

/* What an event tells; each event fills what its comment names. */
struct lw_event {
	struct lw_writer *writer;
	const char *path;	/* the trace's */
	const char *lead;	/* LIVE_NOW: "SIGUSR2: "...; SUMMARY: when */
	uint64_t live_bytes, live_count;	/* device memory live */
	/* PyTorch's pool: its blocks and its segments. */
	uint64_t pool_allocated, pool_reserved;
	/* STEP_END: device memory live less what the step was handed. */
	uint64_t step_bytes;
	lw_growth_fn *growth;
	/* SUMMARY: steps written, frees of memory never seen allocated. */
	uint64_t steps, unknown_frees;
	/* EXIT: allocation calls that failed and the first one's API and
	 * error; events lost; the trace's descriptor lost. */
	uint64_t failed_allocations, lost_events;
	const char *failed_api;
	int failed_error, descriptor_lost;
};

typedef void lw_event_fn(const struct lw_event *event, void *ctx);

/* Calls fn(event, ctx) at each event from now on. Returns 0, or -1 when
 * the event has LW_EVENT_SUBSCRIBERS_MAX subscribers already. From the
 * start, before the first event. */
int lw_events_subscribe(enum lw_event_kind event, lw_event_fn *fn, void *ctx);

/* Announces an event (the recorder's). */
void lw_events_emit(enum lw_event_kind event, const struct lw_event *what);

/*
 * A room asks to be called (LW_EVENT_ASKED) at the next pass through the
 * shim, and says when it has answered; lw_events_poll() is the pass, a
 * plain load while nothing is asked.
 */
extern int lw_events_asked;
void lw_events_ask(void);
void lw_events_answered(void);

static inline void lw_events_poll(void)
{
	if (__builtin_expect(__atomic_load_n(&lw_events_asked,
					     __ATOMIC_RELAXED), 0)) {
		static const struct lw_event none;

		lw_events_emit(LW_EVENT_ASKED, &none);
	}
}

#endif
