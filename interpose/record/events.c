/* SPDX-License-Identifier: MIT */
/*
 * The recorder's events (events.h): a fixed table filled at the start,
 * read without a lock afterwards (the start ends before any event, and
 * lw_state's release publishes it).
 */
#include "events.h"

#include <assert.h>
#include <stddef.h>

static struct subscriber {
	lw_event_fn *fn;
	void *ctx;
} subscribers[LW_EVENT_COUNT][LW_EVENT_SUBSCRIBERS_MAX];
static unsigned subscriber_count[LW_EVENT_COUNT];

int lw_events_asked;

int lw_events_subscribe(enum lw_event_kind event, lw_event_fn *fn, void *ctx)
{
	unsigned n = subscriber_count[event];

	/* The subscribers are the shim's own rooms, fixed at build time: one
	 * too many is a mistake the test suite (built with assertions) finds
	 * at the first start, not a condition of the program's. */
	assert(n < LW_EVENT_SUBSCRIBERS_MAX);
	if (n == LW_EVENT_SUBSCRIBERS_MAX)
		return -1;
	subscribers[event][n] = (struct subscriber){ fn, ctx };
	subscriber_count[event] = n + 1;
	return 0;
}

void lw_events_emit(enum lw_event_kind event, const struct lw_event *what)
{
	const struct subscriber *s = subscribers[event];

	for (unsigned i = 0; i < subscriber_count[event]; i++)
		s[i].fn(what, s[i].ctx);
}

void lw_events_ask(void)
{
	__atomic_store_n(&lw_events_asked, 1, __ATOMIC_RELEASE);
}

void lw_events_answered(void)
{
	__atomic_store_n(&lw_events_asked, 0, __ATOMIC_RELAXED);
}
