/* SPDX-License-Identifier: MIT */
#include "trace-pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* More threads than this help no report. */
#define MAX_THREADS 64

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t loaded;	/* a result came in */
	pthread_cond_t room;	/* a trace was used */
	const struct lw_trace_pool_ops *ops;
	void *ctx;
	size_t count, ahead;
	size_t next;		/* the next index to load */
	size_t used;		/* indices below were used */
	bool first_loaded;	/* index 0's load returned */
	/* Per slot (index % ahead): the index loaded there, its result. */
	size_t *slot_index;
	int *slot_result;
	bool *slot_ready;
};

size_t lw_trace_pool_threads(size_t count)
{
	static const char name[] = "LEAKWATCH_THREADS";
	const char *setting = getenv(name);
	size_t threads = 0;
	cpu_set_t cpus;

	if (setting && setting[0]) {
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(setting, &end, 10);
		if (setting[0] >= '0' && setting[0] <= '9' && !*end &&
		    !errno && n >= 1 && n <= MAX_THREADS)
			threads = n;
		else {
			static bool warned;

			if (!warned)
				lw_error("warning: %s=%s is not a whole number from 1 to %d; using the processors",
					 name, setting, MAX_THREADS);
			warned = true;
		}
	}
	if (!threads) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);

		if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
			threads = (size_t)CPU_COUNT(&cpus);
		else
			threads = online > 0 ? (size_t)online : 1;
	}
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	if (threads > count)
		threads = count;
	return threads ? threads : 1;
}

static void *worker(void *arg)
{
	struct pool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		size_t index, slot;
		int result;

		/* The first trace is read alone: the symbols of its
		 * libraries, read once into the symbol cache, serve the
		 * others, which would each read them meanwhile. */
		while (p->next < p->count &&
		       (p->next >= p->used + p->ahead ||
			(p->next > 0 && !p->first_loaded)))
			pthread_cond_wait(&p->room, &p->lock);
		if (p->next >= p->count)
			break;
		index = p->next++;
		pthread_mutex_unlock(&p->lock);
		result = p->ops->load(p->ctx, index);
		pthread_mutex_lock(&p->lock);
		slot = index % p->ahead;
		p->slot_index[slot] = index;
		p->slot_result[slot] = result;
		p->slot_ready[slot] = true;
		if (index == 0) {
			p->first_loaded = true;
			pthread_cond_broadcast(&p->room);
		}
		pthread_cond_broadcast(&p->loaded);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void run_in_order(size_t count, const struct lw_trace_pool_ops *ops,
			 void *ctx)
{
	for (size_t i = 0; i < count; i++) {
		int result = ops->load(ctx, i);

		if (ops->use)
			ops->use(ctx, i, result);
	}
}

int lw_trace_pool_run(size_t count, size_t ahead,
		      const struct lw_trace_pool_ops *ops, void *ctx)
{
	size_t threads = lw_trace_pool_threads(count), started = 0;
	pthread_t tids[MAX_THREADS];
	struct pool p = {
		.ops = ops,
		.ctx = ctx,
		.count = count,
		.ahead = ahead ? ahead : 1,
	};

	if (threads <= 1) {
		run_in_order(count, ops, ctx);
		return 0;
	}
	p.slot_index = calloc(p.ahead, sizeof(*p.slot_index));
	p.slot_result = calloc(p.ahead, sizeof(*p.slot_result));
	p.slot_ready = calloc(p.ahead, sizeof(*p.slot_ready));
	if (!p.slot_index || !p.slot_result || !p.slot_ready) {
		free(p.slot_index);
		free(p.slot_result);
		free(p.slot_ready);
		return -ENOMEM;
	}
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.loaded, NULL);
	pthread_cond_init(&p.room, NULL);
	while (started < threads &&
	       pthread_create(&tids[started], NULL, worker, &p) == 0)
		started++;
	if (started == 0) {
		/* No thread to be had: this one does it all. */
		run_in_order(count, ops, ctx);
	} else {
		for (size_t i = 0; i < count; i++) {
			size_t slot = i % p.ahead;
			int result;

			pthread_mutex_lock(&p.lock);
			while (!p.slot_ready[slot] || p.slot_index[slot] != i)
				pthread_cond_wait(&p.loaded, &p.lock);
			result = p.slot_result[slot];
			pthread_mutex_unlock(&p.lock);
			if (ops->use)
				ops->use(ctx, i, result);
			pthread_mutex_lock(&p.lock);
			p.slot_ready[slot] = false;
			p.used = i + 1;
			pthread_cond_broadcast(&p.room);
			pthread_mutex_unlock(&p.lock);
		}
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	pthread_cond_destroy(&p.room);
	pthread_cond_destroy(&p.loaded);
	pthread_mutex_destroy(&p.lock);
	free(p.slot_index);
	free(p.slot_result);
	free(p.slot_ready);
	return 0;
}
