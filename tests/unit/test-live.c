/* SPDX-License-Identifier: MIT */
/*
 * The live table under churn: tens of thousands of allocations made and
 * freed in a scrambled order, the table growing several times and records
 * moving back as others are freed. After every step each free must find
 * exactly the allocations still live, with their sizes, and the live totals
 * must match a plain model of what is live.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lw-test.h"
#include "tracker.h"

#define N 20000

static uint64_t model_size[N]; /* 0: not live */
static uint64_t model_bytes, model_count;

/* Addresses that crowd: many share low bits, some differ only high up. */
static uintptr_t addr_of(unsigned i)
{
	return ((uintptr_t)(i % 97) << 40) + ((uintptr_t)(i / 97) << 12) +
	       0x7f0000000000ull;
}

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rng(void)
{
	return lw_test_rng(&rng_state);
}

static void alloc(unsigned i, uint64_t size)
{
	CHECK(lw_enter());
	lw_record_alloc(LW_API_CUDA_MALLOC, LW_MEM_DEVICE, (void *)addr_of(i),
			size, 0);
	lw_leave();
	if (model_size[i]) { /* the same address again: replaces the old */
		model_bytes -= model_size[i];
		model_count--;
	}
	model_size[i] = size;
	model_bytes += size;
	model_count++;
}

static void release(unsigned i)
{
	struct lw_pending_free pending;

	CHECK(lw_enter());
	lw_free_begin((void *)addr_of(i), &pending);
	lw_free_end(&pending, 1);
	lw_leave();
	CHECK_EQ_U64(pending.known, model_size[i] != 0);
	if (pending.known)
		CHECK_EQ_U64(pending.size, model_size[i]);
	if (model_size[i]) {
		model_bytes -= model_size[i];
		model_count--;
		model_size[i] = 0;
	}
}

static void check_totals(void)
{
	uint64_t bytes = 0, count = 0;

	CHECK(lw_device_live(&bytes, &count) == 0);
	CHECK_EQ_U64(bytes, model_bytes);
	CHECK_EQ_U64(count, model_count);
}

int main(void)
{
	char dir[] = "/tmp/lw-test-live-XXXXXX", pattern[PATH_MAX],
	     path[PATH_MAX];

	CHECK(mkdtemp(dir) != NULL);
	snprintf(pattern, sizeof(pattern), "%s/t-%%p.trace", dir);
	snprintf(path, sizeof(path), "%s/t-%d.trace", dir, (int)getpid());
	setenv("LEAKWATCH_OUT", pattern, 1);
	setenv("LEAKWATCH_QUIET", "1", 1);
	unsetenv("LEAKWATCH_MANIFEST");
	lw_init();
	CHECK(lw_state == LW_STATE_ACTIVE);

	/* Grow from empty to N live, with frees mixed in. */
	for (unsigned i = 0; i < N; i++) {
		alloc(i, 1 + i % 4096);
		if (i % 3 == 2)
			release((unsigned)(rng() % (i + 1)));
	}
	check_totals();
	/* Churn: random frees (live or not) and allocations, some of them
	 * over an address still live. */
	for (unsigned round = 0; round < 20; round++) {
		for (unsigned k = 0; k < N; k++) {
			unsigned i = (unsigned)(rng() % N);
			if (rng() & 1)
				release(i);
			else
				alloc(i, 1 + rng() % 100000);
		}
		check_totals();
	}
	/* Every address, live or not: each free finds exactly what is live. */
	for (unsigned i = 0; i < N; i++)
		release(i);
	check_totals();
	CHECK_EQ_U64(model_count, 0);
	/* And the table works again once empty. */
	alloc(7, 123);
	check_totals();
	release(7);
	check_totals();

	lw_shutdown();
	unlink(path);
	rmdir(dir);
	return lw_test_done("test-live");
}
