/* SPDX-License-Identifier: MIT */
/*
 * The shim's table of distinct stacks (interpose/record/stacks.c): the same
 * frames are one stack with one id, other frames another; stacks whose
 * hashes collide stay apart; the table keeps every stack as it grows; a
 * reset starts the ids again at 1.
 */
#include <stdint.h>
#include <string.h>

#include "lw-test.h"
#include "stacks.h"
#include "unwind.h"

#define DEPTH 6

static void frames_of(uintptr_t *frames, unsigned seed)
{
	for (unsigned i = 0; i < DEPTH; i++)
		frames[i] = 0x400000u + 0x10u * seed + i;
}

/* Interns frames as the tracker does: find, else add. */
static struct lw_stack_entry *intern(const uintptr_t *frames, unsigned depth,
				     unsigned py_depth)
{
	uint64_t hash = lw_stacks_hash_from(lw_stack_hash(frames, depth), frames,
					    depth, py_depth);
	struct lw_stack_entry *s = lw_stacks_find(hash, frames, depth,
						  py_depth);

	return s ? s : lw_stacks_add(hash, frames, depth, py_depth);
}

static void same_and_other(void)
{
	uintptr_t a[DEPTH], b[DEPTH];
	struct lw_stack_entry *sa, *sa2, *sb;

	frames_of(a, 1);
	frames_of(b, 2);
	sa = intern(a, DEPTH, 0);
	sa2 = intern(a, DEPTH, 0);
	sb = intern(b, DEPTH, 0);
	REQUIRE(sa && sb);
	CHECK(sa == sa2);
	CHECK(sa != sb);
	CHECK_EQ_U64(sa->id, 1);
	CHECK_EQ_U64(sb->id, 2);
	/* A shorter stack of the same frames is another stack. */
	CHECK(intern(a, DEPTH - 1, 0) != sa);
}

static void python_frames_count(void)
{
	/* Native frames, then (code, line) pairs of the Python frames. */
	uintptr_t f[DEPTH + 4], g[DEPTH + 4];

	frames_of(f, 7);
	f[DEPTH] = 0x7000;
	f[DEPTH + 1] = 42;
	f[DEPTH + 2] = 0x7100;
	f[DEPTH + 3] = 3;
	memcpy(g, f, sizeof(f));
	g[DEPTH + 1] = 43; /* the same code, another line */
	CHECK(intern(f, DEPTH, 2) == intern(f, DEPTH, 2));
	CHECK(intern(f, DEPTH, 2) != intern(g, DEPTH, 2));
	CHECK(intern(f, DEPTH, 2) != intern(f, DEPTH, 1));
	CHECK(intern(f, DEPTH, 2) != intern(f, DEPTH, 0));
}

static void collisions_stay_apart(void)
{
	uintptr_t a[DEPTH], b[DEPTH];
	const uint64_t hash = 0x1234; /* forced: both under one hash */
	struct lw_stack_entry *sa, *sb;

	frames_of(a, 100);
	frames_of(b, 101);
	sa = lw_stacks_add(hash, a, DEPTH, 0);
	REQUIRE(sa);
	CHECK(lw_stacks_find(hash, b, DEPTH, 0) == NULL);
	sb = lw_stacks_add(hash, b, DEPTH, 0);
	REQUIRE(sb);
	CHECK(sa != sb && sa->id != sb->id);
	CHECK(lw_stacks_find(hash, a, DEPTH, 0) == sa);
	CHECK(lw_stacks_find(hash, b, DEPTH, 0) == sb);
	/* Under one hash, the same words read as fewer Python frames, or
	 * as fewer native ones, are not the stack. */
	uintptr_t p[DEPTH + 4];

	frames_of(p, 102);
	p[DEPTH] = 0x7200;
	p[DEPTH + 1] = 1;
	p[DEPTH + 2] = 0x7300;
	p[DEPTH + 3] = 2;
	REQUIRE(lw_stacks_add(hash, p, DEPTH, 2));
	CHECK(lw_stacks_find(hash, p, DEPTH, 1) == NULL);
	CHECK(lw_stacks_find(hash, p, DEPTH - 1, 2) == NULL);
}

static void grows(void)
{
	enum { N = 20000 };
	static struct lw_stack_entry *kept[N];
	uintptr_t f[DEPTH];

	for (unsigned i = 0; i < N; i++) {
		frames_of(f, 1000 + i);
		kept[i] = intern(f, DEPTH, 0);
		REQUIRE(kept[i]);
	}
	for (unsigned i = 0; i < N; i++) {
		frames_of(f, 1000 + i);
		CHECK(intern(f, DEPTH, 0) == kept[i]);
		if (i && kept[i]->id != kept[i - 1]->id + 1) {
			lw_test_fail("stack %u: id %u after %u", i,
				     kept[i]->id, kept[i - 1]->id);
			break;
		}
	}
}

static void reset_starts_again(void)
{
	uintptr_t a[DEPTH];

	lw_stacks_reset();
	frames_of(a, 5);
	struct lw_stack_entry *s = intern(a, DEPTH, 0);

	REQUIRE(s);
	CHECK_EQ_U64(s->id, 1);
}

int main(void)
{
	same_and_other();
	python_frames_count();
	collisions_stay_apart();
	grows();
	reset_starts_again();
	return lw_test_done("test-stacks");
}
