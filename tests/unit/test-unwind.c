/* SPDX-License-Identifier: MIT */
/*
 * The fast walk against libunwind: at many depths, through frames with and
 * without frame pointers, with variable-sized frames, after a walk from a
 * different caller whose inner frames sit at the same addresses, and in a
 * second thread, both must give the same return addresses, and the fast
 * walk must not have handed the stack to libunwind.
 *
 * The frames of this program count as the shim's own (the core is linked
 * in), so the walk starts from inside qsort(): its comparison function,
 * which is ours, is skipped, and every frame from qsort outwards is kept.
 */
#include <alloca.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lw-test.h"
#include "unwind.h"

static int compared, fast_failed;

static int compare_stacks(const void *a, const void *b)
{
	uintptr_t fast[LW_MAX_FRAMES], slow[LW_MAX_FRAMES];

	if (compared++)
		return 0;
	uint64_t fast_hash = 0, slow_hash = 0, via_hash = 0;
	int n = lw_unwind_fast(fast, LW_MAX_FRAMES, &fast_hash);
	unsigned m = lw_unwind_libunwind(slow, LW_MAX_FRAMES, &slow_hash);
#if defined(__x86_64__)
	if (n < 0)
		fast_failed++;
	CHECK(n >= 0);
#endif
	if (getenv("LW_TEST_VERBOSE"))
		fprintf(stderr, "fast %d libunwind %u\n", n, m);
	if (n >= 0) {
		CHECK_EQ_U64(n, m);
		CHECK((unsigned)n == m &&
		      memcmp(fast, slow, m * sizeof(*fast)) == 0);
		CHECK_EQ_U64(fast_hash, slow_hash);
	}
	CHECK(m > 3);
	/* The running hash is the whole stack's hash once finished. */
	CHECK_EQ_U64(lw_hash_finish(slow_hash, m), lw_stack_hash(slow, m));
	unsigned via = lw_unwind(fast, LW_MAX_FRAMES, &via_hash);
	CHECK_EQ_U64(via, m);
	CHECK_EQ_U64(via_hash, slow_hash);
	return (int)(*(const int *)a - *(const int *)b);
}

static void at_the_bottom(void)
{
	int pair[2] = { 2, 1 };

	compared = 0;
	qsort(pair, 2, sizeof(pair[0]), compare_stacks);
	CHECK(compared > 0);
}

/* Frames of three shapes: small, with a frame pointer kept because of
 * alloca(), and large. */
__attribute__((noinline)) static int descend(int depth);

__attribute__((noinline)) static int with_alloca(int depth)
{
	volatile char *buf = alloca((size_t)(depth % 7) * 16 + 40);
	buf[0] = (char)depth;
	int r = descend(depth - 1);
	return r + buf[0];
}

__attribute__((noinline)) static int with_big_frame(int depth)
{
	volatile char buf[5000];
	buf[depth] = 1;
	int r = descend(depth - 1);
	return r + buf[depth];
}

__attribute__((noinline)) static int descend(int depth)
{
	if (depth <= 0) {
		at_the_bottom();
		return 0;
	}
	int r;
	if (depth % 3 == 0)
		r = with_alloca(depth);
	else if (depth % 5 == 0)
		r = with_big_frame(depth);
	else
		r = descend(depth - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return r + 1;
}

/*
 * Two callers with frames of the same shape, called from the same place:
 * the walk from inside the second finds every frame below it at the same
 * stack address, with the same return address, as the walk before it, and
 * must still see that the caller above differs.
 */
__attribute__((noinline)) static void common_mid(void)
{
	at_the_bottom();
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static int via_a(void)
{
	volatile int x = 1;

	common_mid();
	return x + 1;
}

__attribute__((noinline)) static int via_b(void)
{
	volatile int x = 2;

	common_mid();
	return x + 2;
}

static void *thread_main(void *arg)
{
	descend(*(int *)arg);
	return NULL;
}

/*
 * A thread-specific destructor of the program's, made after the shim's own
 * and so run after it at thread exit, that allocates (walks the stack)
 * once the walk's per-thread memory is gone.
 */
static pthread_key_t late_key;
static int late_walks;

static void late_destructor(void *value)
{
	(void)value;
	descend(4);
	late_walks++;
}

static void *exiting_thread(void *arg)
{
	(void)arg;
	descend(6);
	pthread_setspecific(late_key, &late_key);
	return NULL;
}

int main(void)
{
	lw_unwind_init(1);
	for (int depth = 0; depth <= 90; depth += 7) {
		descend(depth);
		descend(depth); /* again, from the cached rules */
	}
	for (int i = 0; i < 4; i++) {
		int (*volatile caller)(void) = i % 2 ? via_b : via_a;

		CHECK_EQ_U64(caller(), i % 2 ? 4 : 2);
	}
	pthread_t t;
	int depth = 25;
	CHECK(pthread_create(&t, NULL, thread_main, &depth) == 0);
	pthread_join(t, NULL);
	CHECK(pthread_key_create(&late_key, late_destructor) == 0);
	CHECK(pthread_create(&t, NULL, exiting_thread, NULL) == 0);
	pthread_join(t, NULL);
	CHECK_EQ_U64(late_walks, 1);
	return lw_test_done("test-unwind");
}
