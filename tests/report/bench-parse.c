/* SPDX-License-Identifier: MIT */
/*
 * Parse speed: reads a trace into a model several times and prints the best
 * rate in events per second.
 *
 *     bench-parse --generate EVENTS [SLOTS]
 *                                      a synthetic trace built in memory,
 *                                      with about SLOTS/2 live allocations
 *     bench-parse TRACE                a trace file
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"
#include "trace-builder.h"
#include "trace-reader.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int load_file(const char *path, struct out *o)
{
	FILE *f = fopen(path, "rb");
	uint8_t chunk[65536];
	size_t n;

	if (!f) {
		fprintf(stderr, "bench-parse: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		put_bytes(o, chunk, n);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct out o = { 0 };
	double best = 0;
	uint64_t events = 0;

	if ((argc == 3 || argc == 4) && strcmp(argv[1], "--generate") == 0) {
		trace_build_large(&o, strtoull(argv[2], NULL, 10),
				  argc == 4 ? (unsigned)strtoul(argv[3], NULL, 10)
					    : 8192);
	} else if (argc == 2) {
		if (load_file(argv[1], &o) < 0)
			return 1;
	} else {
		fprintf(stderr, "usage: bench-parse --generate EVENTS [SLOTS] | TRACE\n");
		return 2;
	}
	for (int run = 0; run < 5; run++) {
		struct lw_trace_result res;
		struct lw_model m;
		double t0, t;
		int rc;

		if (lw_model_init(&m) < 0)
			return 1;
		t0 = now();
		rc = lw_trace_read(o.data, o.len, &lw_model_ops, &m, &res);
		t = now() - t0;
		if (rc < 0) {
			fprintf(stderr, "bench-parse: %s\n", res.message);
			return 1;
		}
		events = m.counts.events;
		if (best == 0 || t < best)
			best = t;
		lw_model_fini(&m);
	}
	printf("%llu events, %zu bytes: best of 5 %.3f s, %.1f M events/s, %.0f MB/s\n",
	       (unsigned long long)events, o.len, best,
	       (double)events / best / 1e6, (double)o.len / best / 1e6);
	free(o.data);
	return 0;
}
