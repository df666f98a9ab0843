/* SPDX-License-Identifier: MIT */
/*
 * Where the program's Python code comes from: the facts that pypaths.c
 * reads from the interpreter's objects and the file system, with the GIL
 * held and none of the program's code run, each written once to the trace
 * as a PYPATH record. The report tells the user's code from libraries with
 * them (report/symbols/usercode.c), and so does the exit summary, with the
 * rules made of them (python/coderules.h).
 */
#include "origins.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coderules.h"
#include "events.h"
#include "lw-hash.h"
#include "tracker.h"

static int failed_once;
/* The next call starts afresh: a new trace (after fork) has none of the
 * facts recorded so far. */
static int fresh = 1;
/* Facts were recorded once the first Python stack was seen. */
static int early_done;
/* The facts of this trace, and the rules made of them for the exit
 * summary (lw_origins_code_origin()); with the GIL. */
static struct lw_code_fact *facts;
static size_t fact_count, fact_capacity;
/* The facts by hash (fact_hash()), for each to be written once: index + 1,
 * 0 for a free slot; a power of two, at most half full. */
static uint32_t *slots;
static size_t slot_count;

/* One warning, once: the report then judges code by its paths alone. */
static void give_up(const char *why)
{
	if (!failed_once) {
		failed_once = 1;
		lw_warn_once(LW_WARN_ORIGINS, "reading where Python code comes from failed (%s); reports tell the program's code from libraries by their paths alone", why);
	}
}

static uint64_t fact_hash(unsigned kind, const char *path,
			  const char *name)
{
	/* 0xff, in no UTF-8 text, between the two: ("ab", "c") and
	 * ("a", "bc") are two facts. */
	uint64_t h = lw_fnv1a_str((kind + 1) * LW_HASH_GOLDEN, path);

	h = lw_fnv1a_str(lw_fnv1a(h, "\xff", 1), name);
	return h ^ (h >> 29);
}

/* The slot of a fact kept, or of the free one it would take. */
static uint32_t *slot_of(unsigned kind, const char *path, const char *name)
{
	size_t i = fact_hash(kind, path, name) & (slot_count - 1);

	for (;; i = (i + 1) & (slot_count - 1)) {
		const struct lw_code_fact *f;

		if (!slots[i])
			return &slots[i];
		f = &facts[slots[i] - 1];
		if (f->kind == kind && strcmp(f->path, path) == 0 &&
		    strcmp(f->name ? f->name : "", name) == 0)
			return &slots[i];
	}
}

static int kept(unsigned kind, const char *path, const char *name)
{
	return slot_count && *slot_of(kind, path, name);
}

/* Room in slots for one more fact; -1 without memory. */
static int grow_slots(void)
{
	size_t next = slot_count ? 2 * slot_count : 64;
	uint32_t *old = slots;
	size_t old_count = slot_count;

	if (2 * (fact_count + 1) <= slot_count)
		return 0;
	if (!(slots = calloc(next, sizeof(*slots)))) {
		slots = old;
		return -1;
	}
	slot_count = next;
	for (size_t i = 0; i < old_count; i++) {
		const struct lw_code_fact *f;

		if (!old[i])
			continue;
		f = &facts[old[i] - 1];
		*slot_of(f->kind, f->path, f->name ? f->name : "") = old[i];
	}
	free(old);
	return 0;
}

/* Keeps a fact for the exit summary's rules; -1 without memory. */
static int keep_fact(unsigned kind, const char *path, const char *name)
{
	struct lw_code_fact *grown;
	char *p, *n;

	if (fact_count >= UINT32_MAX - 1 || grow_slots() < 0)
		return -1;
	if (fact_count == fact_capacity) {
		size_t next = fact_capacity ? fact_capacity * 2 : 32;

		if (!(grown = realloc(facts, next * sizeof(*grown))))
			return -1;
		facts = grown;
		fact_capacity = next;
	}
	p = strdup(path);
	n = name[0] ? strdup(name) : NULL;
	if (!p || (name[0] && !n)) {
		free(p);
		free(n);
		return -1;
	}
	*slot_of(kind, path, name) = (uint32_t)(fact_count + 1);
	facts[fact_count++] = (struct lw_code_fact){ kind, p, n };
	return 0;
}

static void drop_facts(void)
{
	for (size_t i = 0; i < fact_count; i++) {
		free((char *)facts[i].path);
		free((char *)facts[i].name);
	}
	fact_count = 0;
	if (slot_count)
		memset(slots, 0, slot_count * sizeof(*slots));
	lw_code_rules_drop();
}

/* What one reading gave. */
struct reading {
	size_t given;		/* facts new to this trace */
	int untaken;		/* one of them no trace took */
	int unkept;		/* one of them could not be kept */
};

/* Writes one fact, when this trace does not hold it yet. */
static void found(unsigned kind, const char *path, const char *name,
		  void *ctx)
{
	struct reading *r = ctx;

	if (kind < 1 || kind > LW_PYPATH_KIND_MAX ||
	    kept(kind, path, name))
		return;
	if (lw_record_pypath(kind, path, name) < 0) {
		r->untaken = 1;
		return;
	}
	r->given++;
	if (keep_fact(kind, path, name) < 0)
		r->unkept = 1;
}

void lw_origins_record(void)
{
	struct reading r = { 0, 0, 0 };
	int saved_errno = errno, rc;

	if (!lw_enter())
		return;
	if (fresh)
		drop_facts();	/* a new trace's */
	fresh = 0;
	rc = lw_pypaths_read(found, &r);
	if (rc == -ENOMEM || r.unkept)
		give_up("no memory");
	else if (rc == -EINVAL)
		give_up("the interpreter's objects are not as expected");
	else if (rc < 0 && rc != -ENOTSUP)
		give_up("the working directory cannot be read");
	/* No trace took one: all of them again next time. */
	if (r.untaken)
		fresh = 1;
	if (r.given)
		lw_code_rules_make(facts, fact_count);
	lw_leave();
	errno = saved_errno;
}

int lw_origins_early_due(void)
{
	return !__atomic_load_n(&early_done, __ATOMIC_ACQUIRE);
}

void lw_origins_record_early(void)
{
	if (__atomic_load_n(&early_done, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&early_done, 1, __ATOMIC_RELEASE);
	lw_origins_record();
}

void lw_origins_reset(void)
{
	fresh = 1;
	__atomic_store_n(&early_done, 0, __ATOMIC_RELEASE);
}

static void on_fork_child(const struct lw_event *event, void *ctx)
{
	(void)event;
	(void)ctx;
	lw_origins_reset();
}

void lw_origins_start(void)
{
	lw_events_subscribe(LW_EVENT_FORK_CHILD, on_fork_child, NULL);
}
