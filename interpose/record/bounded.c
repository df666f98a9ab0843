/* SPDX-License-Identifier: MIT */
#include "bounded.h"

#include <string.h>

#include "arena.h"
#include "live-table.h"
#include "lw-format.h"
#include "lw-hash.h"
#include "stacks.h"
#include "writer.h"

/* What the list notes, in the order it happened. */
enum event_type {
	EV_ALLOC,
	EV_FREE,
	EV_GC_START,
	EV_GC_STOP,
};

/* An event's bits. */
enum {
	EV_KEEP = 1,		/* an ALLOC written even if it was freed */
	EV_BEFORE_PEAK = 2,	/* (while compacting) before the peak */
};

struct event {
	uint64_t addr;
	uint64_t size;				/* ALLOC */
	struct lw_stack_entry *stack;		/* ALLOC */
	uint32_t context;			/* ALLOC */
	uint8_t type, kind, bits;
};

/*
 * The contexts (API, device, stream) allocations were made in: one per
 * stream a program allocates on, thousands for some, found through a hash
 * of their own. The table grows as they come, up to LW_BOUNDED_CONTEXTS_MAX:
 * a program that makes new streams without end (each at a new handle)
 * must not grow it for ever.
 */
#define CONTEXTS_MIN 64

struct context {
	uint64_t api;
	int64_t device;
	uint64_t stream;
	bool written;	/* a CONTEXT record of it is in the trace, or will
			 * be when the interval ends */
};

#define LIST_MIN 1024
/* Changes per SHORT_LIVED record: its payload stays far below the
 * writer's buffer; a longer list goes out in several records. */
#define CHANGES_BYTES 16384
#define CHANGE_MAX (2 + 7 * LW_VARINT_MAX)

bool lw_bounded_active;

static struct {
	bool enabled;		/* the trace is bounded */
	bool stopped;		/* memory ran out: full from there on */
	struct lw_writer *writer;
	struct lw_addr_table *live;
	lw_bounded_context_fn *context;
	uint32_t interval;	/* the running interval's number, from 1 */
	/* The interval's events, and how many came before its peak. */
	struct event *list;
	size_t count, capacity;
	size_t peak_at;
	uint64_t peak, torch_peak;
	uint64_t gc_empty;	/* passes with nothing kept inside */
	bool busy;		/* an allocation, free or GC mark came */
	bool summed;		/* ... and one was made and freed in it */
	/* The stacks that allocated in the interval, and those the trace
	 * has a change in force for (room for both together, always, so
	 * that writing an interval never needs memory). */
	struct lw_stack_entry **listed, **in_force;
	size_t listed_count, in_force_count, capacity_stacks;
	struct context *contexts;	/* context_capacity of them */
	/* 2 * context_capacity slots: a context's index + 1, 0 empty. */
	uint32_t *context_slots;
	uint32_t context_count, context_capacity, last_context;
	bool too_many_contexts;	/* why it stopped, if not memory */
} st;

static uint8_t changes[CHANGES_BYTES];
static size_t changes_len, changes_count;
static uint64_t changes_prev_stack;
static uint8_t record[CHANGES_BYTES + 8 * LW_VARINT_MAX];

void lw_bounded_reset(bool enabled, struct lw_writer *writer,
		      struct lw_addr_table *live,
		      lw_bounded_context_fn *context)
{
	lw_arena_free(st.list);
	lw_arena_free(st.listed);
	lw_arena_free(st.in_force);
	lw_arena_free(st.contexts);
	lw_arena_free(st.context_slots);
	memset(&st, 0, sizeof(st));
	lw_bounded_active = false;
	st.enabled = enabled;
	st.writer = writer;
	st.live = live;
	st.context = context;
}

void lw_bounded_steps_begin(uint64_t device_live, uint64_t torch_live)
{
	if (!st.enabled || lw_bounded_active || st.stopped)
		return;
	lw_bounded_active = true;
	st.interval = 1;
	st.peak = device_live;
	st.torch_peak = torch_live;
}

static size_t context_slot(uint64_t api, int64_t device, uint64_t stream)
{
	uint64_t key = stream ^ lw_hash_mix(api << 32 ^ (uint64_t)device);

	return (size_t)(lw_hash_mix(key) >> 32) &
	       (2 * (size_t)st.context_capacity - 1);
}

/* Puts context i in its slot (there is room: the slots are never more
 * than half full). */
static void slot_context(uint32_t i)
{
	const struct context *c = &st.contexts[i];
	size_t mask = 2 * (size_t)st.context_capacity - 1;
	size_t at = context_slot(c->api, c->device, c->stream);

	while (st.context_slots[at])
		at = (at + 1) & mask;
	st.context_slots[at] = i + 1;
}

/* Twice the room for contexts; false when leakwatch's memory is out. */
static bool grow_contexts(void)
{
	uint32_t n = st.context_capacity ? 2 * st.context_capacity
					 : CONTEXTS_MIN;
	struct context *contexts = lw_arena_alloc(n * sizeof(*contexts));
	uint32_t *slots = lw_arena_alloc(2 * (size_t)n * sizeof(*slots));

	if (!contexts || !slots) {
		lw_arena_free(contexts);
		lw_arena_free(slots);
		return false;
	}
	if (st.context_count)
		memcpy(contexts, st.contexts,
		       st.context_count * sizeof(*contexts));
	lw_arena_free(st.contexts);
	lw_arena_free(st.context_slots);
	st.contexts = contexts;
	st.context_slots = slots;
	st.context_capacity = n;
	for (uint32_t i = 0; i < st.context_count; i++)
		slot_context(i);
	return true;
}

/* The index of a context, added at its first use; -1 when it cannot be
 * (too many contexts, or leakwatch's memory is out). */
static __attribute__((noinline)) int find_context(uint64_t api,
						  int64_t device,
						  uint64_t stream)
{
	size_t mask = 2 * (size_t)st.context_capacity - 1;

	for (size_t at = st.context_capacity
				 ? context_slot(api, device, stream) : 0;
	     st.context_capacity && st.context_slots[at];
	     at = (at + 1) & mask) {
		uint32_t i = st.context_slots[at] - 1;
		const struct context *c = &st.contexts[i];

		if (c->api == api && c->device == device && c->stream == stream) {
			st.last_context = i;
			return (int)i;
		}
	}
	if (st.context_count == LW_BOUNDED_CONTEXTS_MAX) {
		st.too_many_contexts = true;
		return -1;
	}
	if (st.context_count == st.context_capacity && !grow_contexts())
		return -1;
	st.contexts[st.context_count] = (struct context){
		.api = api, .device = device, .stream = stream,
	};
	slot_context(st.context_count);
	st.last_context = st.context_count;
	return (int)st.context_count++;
}

/* The same, the latest one first (one comparison, nearly always). */
static inline int context_index(uint64_t api, int64_t device, uint64_t stream)
{
	const struct context *c;

	if (st.context_count) {
		c = &st.contexts[st.last_context];
		if (c->api == api && c->device == device &&
		    c->stream == stream)
			return (int)st.last_context;
	}
	return find_context(api, device, stream);
}

bool lw_bounded_stopped_by_contexts(void)
{
	return st.too_many_contexts;
}

void lw_bounded_context_written(unsigned api, int64_t device, uint64_t stream)
{
	int i = context_index(api, device, stream);

	if (i >= 0)
		st.contexts[i].written = true;
}

/*
 * Compacts the list: of its allocations, keeps the latest one made at each
 * address that is still live and pending, and those to be written anyway;
 * keeps every other event but the passes of the collector with nothing
 * kept between their marks (counted instead). final: the interval ends,
 * and what is kept is no longer pending.
 */
static void compact(bool final)
{
	size_t n = st.count, j = n, kept_before = 0;

	for (size_t i = n; i-- > 0;) {
		struct event ev = st.list[i];

		if (ev.type == EV_ALLOC) {
			struct lw_live *e = lw_live_table_find(st.live,
							       ev.addr);

			if (e && (e->flags & LW_LIVE_PENDING) &&
			    !(e->flags & LW_LIVE_CLAIMED)) {
				if (final)
					e->flags &= (uint8_t)~(LW_LIVE_PENDING |
							       LW_LIVE_KEEP);
				else
					e->flags |= LW_LIVE_CLAIMED;
			} else if (!(ev.bits & EV_KEEP)) {
				continue;
			}
		}
		if (ev.type == EV_GC_START && j < n &&
		    st.list[j].type == EV_GC_STOP) {
			j++;
			st.gc_empty++;
			continue;
		}
		ev.bits = (uint8_t)((ev.bits & EV_KEEP) |
				    (i < st.peak_at ? EV_BEFORE_PEAK : 0));
		st.list[--j] = ev;
	}
	for (size_t i = j; i < n; i++) {
		const struct event *ev = &st.list[i];

		kept_before += (ev->bits & EV_BEFORE_PEAK) != 0;
		if (!final && ev->type == EV_ALLOC) {
			struct lw_live *e = lw_live_table_find(st.live,
							       ev->addr);

			if (e)
				e->flags &= (uint8_t)~LW_LIVE_CLAIMED;
		}
	}
	memmove(st.list, st.list + j, (n - j) * sizeof(*st.list));
	st.count = n - j;
	st.peak_at = kept_before;
}

/* Room for one more event in a full list: compacts it, and grows it when
 * that frees less than half. False when leakwatch's memory is out. */
static __attribute__((noinline)) bool make_room(void)
{
	struct event *grown;
	size_t n;

	if (st.capacity) {
		compact(false);
		if (st.count <= st.capacity / 2)
			return true;
	}
	n = st.capacity ? 2 * st.capacity : LIST_MIN;
	grown = lw_arena_alloc(n * sizeof(*grown));
	if (!grown)
		return false;
	if (st.count)
		memcpy(grown, st.list, st.count * sizeof(*grown));
	lw_arena_free(st.list);
	st.list = grown;
	st.capacity = n;
	return true;
}

static inline bool list_room(void)
{
	return st.count < st.capacity || make_room();
}

/* Lists a stack for the interval, with room for it in force too. */
static bool list_stack(struct lw_stack_entry *s)
{
	if (st.listed_count + st.in_force_count >= st.capacity_stacks) {
		size_t n = st.capacity_stacks ? 2 * st.capacity_stacks : 256;
		struct lw_stack_entry **listed, **in_force;

		listed = lw_arena_alloc(n * sizeof(*listed));
		in_force = lw_arena_alloc(n * sizeof(*in_force));
		if (!listed || !in_force) {
			lw_arena_free(listed);
			lw_arena_free(in_force);
			return false;
		}
		if (st.listed_count)
			memcpy(listed, st.listed,
			       st.listed_count * sizeof(*listed));
		if (st.in_force_count)
			memcpy(in_force, st.in_force,
			       st.in_force_count * sizeof(*in_force));
		lw_arena_free(st.listed);
		lw_arena_free(st.in_force);
		st.listed = listed;
		st.in_force = in_force;
		st.capacity_stacks = n;
	}
	st.listed[st.listed_count++] = s;
	return true;
}

void lw_bounded_stop(void)
{
	/* What is live after it is written in full: the interval's peak no
	 * longer matters. */
	lw_bounded_settle(0, 0);
	lw_bounded_active = false;
	st.stopped = true;
}

bool lw_bounded_alloc(struct lw_live *e, unsigned api, int64_t device,
		      uint64_t stream, uint64_t device_live,
		      uint64_t torch_live)
{
	struct lw_stack_entry *s = e->stack;
	int context = context_index(api, device, stream);
	struct event *ev;
	bool keep;

	if (context < 0 || !list_room()) {
		lw_bounded_stop();
		return false;
	}
	/* The first allocation of a stack and kind, or in a context, is
	 * written whole: a reader meets the site and the context where
	 * they began. So is one the tracker asks for (LW_LIVE_KEEP). */
	keep = (e->flags & LW_LIVE_KEEP) || !s ||
	       !(s->short_lived.announced & (1u << e->kind)) ||
	       !st.contexts[context].written;
	if (s) {
		struct lw_short_lived *sl = &s->short_lived;

		if (sl->interval != st.interval) {
			if (!list_stack(s)) {
				lw_bounded_stop();
				return false;
			}
			sl->interval = st.interval;
			sl->kind = e->kind;
			sl->context = (uint32_t)context;
			sl->count = sl->bytes = sl->gc_count = sl->gc_bytes = 0;
		} else if (sl->kind != e->kind ||
			   sl->context != (uint32_t)context) {
			/* Counted per stack in one kind and context. */
			keep = true;
		}
		if (keep)
			sl->announced |= (uint8_t)(1u << e->kind);
	}
	if (keep)
		st.contexts[context].written = true;
	ev = &st.list[st.count++];
	ev->addr = e->addr;
	ev->size = e->size;
	ev->stack = s;
	ev->type = EV_ALLOC;
	ev->kind = e->kind;
	ev->context = (uint32_t)context;
	ev->bits = keep ? EV_KEEP : 0;
	e->flags |= (uint8_t)(LW_LIVE_PENDING | (keep ? LW_LIVE_KEEP : 0));
	st.busy = true;
	if (device_live > st.peak) {
		st.peak = device_live;
		st.peak_at = st.count;
	}
	if (torch_live > st.torch_peak)
		st.torch_peak = torch_live;
	return true;
}

/* Notes an event that is not an allocation; false when out of memory. */
static bool note(enum event_type type, uint64_t addr)
{
	struct event *ev;

	if (!list_room()) {
		lw_bounded_stop();
		return false;
	}
	ev = &st.list[st.count++];
	memset(ev, 0, sizeof(*ev));
	ev->addr = addr;
	ev->type = (uint8_t)type;
	st.busy = true;
	return true;
}

int lw_bounded_free(struct lw_live *e, bool in_gc)
{
	if ((e->flags & (LW_LIVE_PENDING | LW_LIVE_KEEP)) == LW_LIVE_PENDING) {
		struct lw_short_lived *sl = &e->stack->short_lived;

		sl->count++;
		sl->bytes += e->size;
		if (in_gc) {
			sl->gc_count++;
			sl->gc_bytes += e->size;
		}
		st.busy = st.summed = true;
		/* Made last of all: it leaves the list at once (the latest
		 * allocation at its address is this one). */
		if (st.count && st.list[st.count - 1].type == EV_ALLOC &&
		    st.list[st.count - 1].addr == e->addr) {
			st.count--;
			if (st.peak_at > st.count)
				st.peak_at = st.count;
		}
		return 1;
	}
	return note(EV_FREE, e->addr) ? 0 : -1;
}

bool lw_bounded_unknown_free(uint64_t addr)
{
	return note(EV_FREE, addr);
}

bool lw_bounded_gc_mark(unsigned mark)
{
	return note(mark == LW_MARK_GC_START ? EV_GC_START : EV_GC_STOP, 0);
}

/* Writes the changes so far as one SHORT_LIVED record; last: the one
 * that ends the interval, with its figures. events: the allocations and
 * frees it stands for. */
static void write_record(bool last, uint64_t after_peak, uint64_t events)
{
	size_t n = 0;

	n += lw_varint_put(record + n, last ? st.peak : 0);
	n += lw_varint_put(record + n, last ? after_peak : 0);
	n += lw_varint_put(record + n, last ? st.torch_peak : 0);
	n += lw_varint_put(record + n, last ? st.gc_empty : 0);
	n += lw_varint_put(record + n, last && st.summed);
	n += lw_varint_put(record + n, changes_count);
	memcpy(record + n, changes, changes_len);
	n += changes_len;
	lw_writer_short_lived(st.writer, record, n, events);
	changes_len = changes_count = 0;
	changes_prev_stack = 0;
}

/* Adds a change: from now on, s makes count allocations per interval. */
static void put_change(const struct lw_stack_entry *s, unsigned kind,
		       unsigned context, uint64_t count, uint64_t bytes,
		       uint64_t gc_count, uint64_t gc_bytes)
{
	const struct context *c = &st.contexts[context];
	uint8_t *p;

	if (changes_len + CHANGE_MAX > sizeof(changes))
		write_record(false, 0, 0);
	p = changes + changes_len;
	p += lw_varint_put(p, lw_zigzag_encode((int64_t)(s->id -
							  changes_prev_stack)));
	p += lw_varint_put(p, kind);
	p += lw_varint_put(p, c->api);
	p += lw_varint_put(p, lw_zigzag_encode(c->device));
	p += lw_varint_put(p, c->stream);
	p += lw_varint_put(p, count);
	p += lw_varint_put(p, bytes);
	p += lw_varint_put(p, gc_count);
	p += lw_varint_put(p, gc_bytes);
	changes_len = (size_t)(p - changes);
	changes_count++;
	changes_prev_stack = s->id;
}

/*
 * The changes that make the trace's entries the interval's counts: each
 * stack listed whose counts differ from its entry, and each entry in force
 * of a stack that made nothing this time. Returns the allocations the
 * entries now stand for.
 */
static uint64_t put_changes(void)
{
	uint64_t total = 0;
	size_t kept = 0;

	for (size_t i = 0; i < st.listed_count; i++) {
		struct lw_stack_entry *s = st.listed[i];
		struct lw_short_lived *sl = &s->short_lived;

		if ((sl->count || sl->sent_count) &&
		    (sl->count != sl->sent_count ||
		     sl->bytes != sl->sent_bytes ||
		     sl->gc_count != sl->sent_gc_count ||
		     sl->gc_bytes != sl->sent_gc_bytes ||
		     (sl->count && (sl->kind != sl->sent_kind ||
				    sl->context != sl->sent_context)))) {
			put_change(s, sl->count ? sl->kind : sl->sent_kind,
				   sl->count ? sl->context : sl->sent_context,
				   sl->count, sl->bytes, sl->gc_count,
				   sl->gc_bytes);
			sl->sent_count = sl->count;
			sl->sent_bytes = sl->bytes;
			sl->sent_gc_count = sl->gc_count;
			sl->sent_gc_bytes = sl->gc_bytes;
			sl->sent_kind = sl->kind;
			sl->sent_context = sl->context;
		}
		if (sl->sent_count && !sl->in_force) {
			sl->in_force = true;
			st.in_force[st.in_force_count++] = s;
		}
	}
	for (size_t i = 0; i < st.in_force_count; i++) {
		struct lw_stack_entry *s = st.in_force[i];
		struct lw_short_lived *sl = &s->short_lived;

		if (sl->interval != st.interval && sl->sent_count) {
			put_change(s, sl->sent_kind, sl->sent_context, 0,
				   0, 0, 0);
			sl->sent_count = sl->sent_bytes = 0;
			sl->sent_gc_count = sl->sent_gc_bytes = 0;
		}
		if (!sl->sent_count) {
			sl->in_force = false;
			continue;
		}
		total += sl->sent_count;
		st.in_force[kept++] = s;
	}
	st.in_force_count = kept;
	return total;
}

void lw_bounded_settle(uint64_t device_live, uint64_t torch_live)
{
	uint64_t after_peak = 0, total = 0;

	if (!lw_bounded_active || !st.busy)
		return;
	compact(true);
	for (size_t i = 0; i < st.count; i++) {
		const struct event *ev = &st.list[i];
		const struct context *c;
		uint8_t mark;

		switch (ev->type) {
		case EV_ALLOC:
			c = &st.contexts[ev->context];
			st.context((unsigned)c->api, c->device, c->stream);
			lw_writer_alloc(st.writer, ev->kind, ev->addr,
					ev->size, ev->stack ? ev->stack->id : 0);
			after_peak += i >= st.peak_at;
			break;
		case EV_FREE:
			lw_writer_free(st.writer, ev->addr);
			after_peak += i >= st.peak_at;
			break;
		default:
			mark = ev->type == EV_GC_START ? LW_MARK_GC_START
						       : LW_MARK_GC_STOP;
			lw_writer_ext(st.writer, LW_REC_MARK, &mark, 1);
			break;
		}
	}
	if (st.summed)
		total = put_changes();
	write_record(true, after_peak, 2 * total);
	st.count = st.peak_at = 0;
	st.peak = device_live;
	st.torch_peak = torch_live;
	st.gc_empty = 0;
	st.busy = st.summed = false;
	st.listed_count = 0;
	st.interval++;
}
