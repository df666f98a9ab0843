/* SPDX-License-Identifier: MIT */
/*
 * The tracker under concurrent use: threads allocating and freeing (some
 * frees failing and put back, some of addresses never allocated), steps,
 * phases and optimizer steps from other threads, all at once. The trace
 * read back must hold exactly what each thread left live. Built with
 * ThreadSanitizer in CI, where any data race fails it.
 *
 *   test-concurrency [THREADS] [OPERATIONS-PER-THREAD]
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lw-test.h"
#include "model.h"
#include "trace-reader.h"
#include "tracker.h"

struct worker {
	pthread_t thread;
	unsigned index;
	unsigned long operations;
	uint64_t live_count, live_bytes;
};

static volatile int stop_marks;

static uintptr_t address(unsigned thread, unsigned long i)
{
	return ((uintptr_t)(thread + 1) << 40) | ((uintptr_t)i << 8);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct lw_pending_free pending;
	unsigned long i;

	for (i = 0; i < w->operations / 2; i++) {
		uintptr_t a = address(w->index, i);
		uint64_t size = 1 + (i * 7919 + w->index) % 4096;
		if (lw_enter()) {
			lw_record_alloc(LW_API_CUDA_MALLOC, LW_MEM_DEVICE,
					(void *)a, size, 0);
			lw_leave();
		}
		int keep = i % 97 == 0;
		int fails = i % 31 == 0;
		if (!lw_enter())
			continue;
		if (keep) {
			/* a free of an address never allocated, that fails */
			lw_free_begin((void *)(a | 1), &pending);
			lw_free_end(&pending, 0);
		} else {
			lw_free_begin((void *)a, &pending);
			lw_free_end(&pending, !fails);
		}
		lw_leave();
		if (keep || fails) {
			w->live_count++;
			w->live_bytes += size;
		}
	}
	return NULL;
}

static void *marks(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_marks, __ATOMIC_ACQUIRE)) {
		lw_record_step(LW_STEP_OPTIMIZER);
		lw_record_phase_begin("phase");
		lw_record_phase_end();
		usleep(100);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 8;
	unsigned long operations = argc > 2 ? strtoul(argv[2], NULL, 10)
					    : 40000;
	char dir[] = "/tmp/lw-test-concurrency-XXXXXX", pattern[PATH_MAX],
	     path[PATH_MAX];
	struct worker workers[64];
	pthread_t marker;
	uint64_t count = 0, bytes = 0;

	if (nthreads < 1 || nthreads > 64)
		return 2;
	CHECK(mkdtemp(dir) != NULL);
	snprintf(pattern, sizeof(pattern), "%s/t-%%p.trace", dir);
	snprintf(path, sizeof(path), "%s/t-%d.trace", dir, (int)getpid());
	setenv("LEAKWATCH_OUT", pattern, 1);
	setenv("LEAKWATCH_QUIET", "1", 1);
	unsetenv("LEAKWATCH_MANIFEST");

	CHECK(pthread_create(&marker, NULL, marks, NULL) == 0);
	for (unsigned t = 0; t < nthreads; t++) {
		workers[t] = (struct worker){ .index = t,
					      .operations = operations };
		CHECK(pthread_create(&workers[t].thread, NULL, work,
				     &workers[t]) == 0);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		pthread_join(workers[t].thread, NULL);
		count += workers[t].live_count;
		bytes += workers[t].live_bytes;
	}
	__atomic_store_n(&stop_marks, 1, __ATOMIC_RELEASE);
	pthread_join(marker, NULL);
	lw_shutdown();

	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	if (!f)
		return lw_test_done("test-concurrency");
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	rewind(f);
	uint8_t *buf = malloc((size_t)len);
	CHECK(buf && fread(buf, 1, (size_t)len, f) == (size_t)len);
	fclose(f);

	struct lw_model model;
	struct lw_trace_result result;
	CHECK(lw_model_init(&model) == 0);
	CHECK(lw_trace_read(buf, (size_t)len, &lw_model_ops, &model,
			    &result) == 0);
	CHECK(!result.truncated);
	CHECK_EQ_U64(lw_model_device_live_count(&model), count);
	CHECK_EQ_U64(lw_model_device_live_bytes(&model), bytes);
	CHECK(lw_model_kind_totals(&model, LW_MEM_DEVICE).allocations >=
	      nthreads * (operations / 2));
	lw_model_fini(&model);
	free(buf);
	unlink(path);
	rmdir(dir);
	return lw_test_done("test-concurrency");
}
