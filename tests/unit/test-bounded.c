/* SPDX-License-Identifier: MIT */
/*
 * Bounded traces (interpose/record/bounded.h): the same events recorded by the
 * tracker in full and bounded (each in a child process of its own, the
 * shim's core linked directly), then read back by the report's model, must
 * give the same model: counts, every site's totals, lifetimes and collector
 * frees, the step series and its peaks, what lingered at each step's peak,
 * phases, PyTorch's blocks, the out-of-memory report, the program's end.
 * And the bounded trace must be the smaller, its steps summed.
 *
 *   test-bounded [SCENARIO]    (all by default)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arena.h"
#include "lw-test.h"
#include "model.h"
#include "trace-reader.h"
#include "tracker.h"

#define MiB (1024 * 1024ull)

/* ---- recording: each site a function of its own (bounded-sites.c) ---- */

typedef void bounded_record_fn(unsigned site, uint64_t addr, uint64_t size,
			       unsigned kind, unsigned api, uint64_t stream);
void bounded_site(unsigned site, bounded_record_fn *record, uint64_t addr,
		  uint64_t size, unsigned kind, unsigned api, uint64_t stream);

static void record(unsigned site, uint64_t addr, uint64_t size, unsigned kind,
		   unsigned api, uint64_t stream)
{
	(void)site;
	if (!lw_enter())
		return;
	lw_record_alloc_on(api, kind, (void *)addr, size, stream,
			   api == LW_API_TORCH_BLOCK ? 0 : -1);
	lw_leave();
}

/* A device allocation from site s. */
static void alloc(unsigned s, uint64_t addr, uint64_t size)
{
	bounded_site(s, record, addr, size, LW_MEM_DEVICE, LW_API_CUDA_MALLOC,
		     0);
}

static void alloc_as(unsigned s, uint64_t addr, uint64_t size, unsigned kind,
		     unsigned api, uint64_t stream)
{
	bounded_site(s, record, addr, size, kind, api, stream);
}

static void release(uint64_t addr, int succeeds)
{
	struct lw_pending_free pending;

	if (!lw_enter())
		return;
	lw_free_begin((void *)addr, &pending);
	lw_free_end(&pending, succeeds);
	lw_leave();
}

static void release_block(uint64_t addr)
{
	if (!lw_enter())
		return;
	lw_record_block_free((void *)addr);
	lw_leave();
}

static void free_(uint64_t addr)
{
	release(addr, 1);
}

static void step(void)
{
	lw_record_step(LW_STEP_API);
}

/* Block addresses: step t's i-th of a kind. */
static uint64_t at(unsigned kind, unsigned t, unsigned i)
{
	return ((uint64_t)(kind + 1) << 36) + ((uint64_t)(t % 64) << 24) +
	       ((uint64_t)i << 9);
}

/* ---- the scenarios ---- */

/* A training loop: weights, temporaries freed in and out of order from
 * several sites, sizes that change now and then, gradients that live into
 * the next step (freed before and after its peak), a block that lingers
 * two steps, one leaked per step. */
static void scenario_steps(void)
{
	alloc(0, at(0, 0, 0), 64 * MiB);
	for (unsigned t = 0; t < 40; t++) {
		uint64_t big = (t % 7 == 3 ? 3 : 2) * MiB;

		if (t)
			free_(at(1, t - 1, 0)); /* a gradient, before the peak */
		for (unsigned i = 0; i < 6; i++)
			alloc(1 + i % 3, at(2, t, i), 4096 * (i + 1));
		alloc(4, at(3, t, 0), big);
		free_(at(2, t, 5));
		free_(at(2, t, 1));
		free_(at(3, t, 0));
		if (t)
			free_(at(1, t - 1, 1)); /* a gradient, after it */
		for (unsigned i = 0; i < 6; i++)
			if (i != 1 && i != 5)
				free_(at(2, t, i));
		alloc(5, at(1, t, 0), 8192);
		alloc(5, at(1, t, 1), 8192);
		if (t >= 2)
			free_(at(4, t - 2, 0));
		alloc(6, at(4, t, 0), 100000);
		alloc(7, at(5, t, 0), 512); /* the leak */
		step();
	}
}

/* The peak: reached while a short-lived block is live, then again (the
 * same bytes) with only kept memory live; older memory freed around it. */
static void scenario_peak(void)
{
	for (unsigned t = 0; t < 12; t++) {
		if (t)
			free_(at(1, t - 1, 0));
		alloc(1, at(2, t, 0), 1 * MiB);		/* short-lived */
		free_(at(2, t, 0));			/* live: 0 */
		if (t)
			free_(at(1, t - 1, 1));		/* after the peak */
		alloc(2, at(1, t, 0), 512 * 1024);
		alloc(2, at(1, t, 1), 512 * 1024);	/* 1 MiB kept */
		alloc(3, at(3, t, 0), 4096);
		free_(at(3, t, 0));
		step();
	}
}

/* Passes of the collector: empty ones, short-lived blocks freed inside,
 * an older block freed inside, a pass across a step's end. */
static void scenario_gc(void)
{
	for (unsigned t = 0; t < 10; t++) {
		lw_record_mark(LW_MARK_GC_START);
		lw_record_mark(LW_MARK_GC_STOP);
		alloc(1, at(1, t, 0), 1000);
		alloc(2, at(1, t, 1), 2000);
		alloc(3, at(2, t, 0), 3000);
		lw_record_mark(LW_MARK_GC_START);
		free_(at(1, t, 0));
		if (t % 3 == 0)
			free_(at(1, t, 1));
		if (t)
			free_(at(2, t - 1, 0));
		lw_record_mark(LW_MARK_GC_STOP);
		if (t % 3)
			free_(at(1, t, 1));
		lw_record_mark(LW_MARK_GC_START);
		lw_record_mark(LW_MARK_GC_STOP);
		if (t % 4 == 1)
			lw_record_mark(LW_MARK_GC_START);
		step();
		if (t % 4 == 1)
			lw_record_mark(LW_MARK_GC_STOP);
	}
}

/* Phases inside steps and between them: a block made in a phase and
 * freed after it, in the same step, outlived it. */
static void scenario_phases(void)
{
	for (unsigned t = 0; t < 8; t++) {
		alloc(1, at(1, t, 0), 4096);
		lw_record_phase_begin("forward");
		alloc(2, at(2, t, 0), 8192);
		alloc(3, at(2, t, 1), 100);
		free_(at(2, t, 1));
		lw_record_phase_begin("inner");
		alloc(4, at(2, t, 2), 300);
		lw_record_phase_end();
		free_(at(2, t, 2));
		lw_record_phase_end();
		free_(at(2, t, 0));
		free_(at(1, t, 0));
		if (t % 4 == 3) {
			lw_record_phase_begin("eval");
			alloc(5, at(3, t, 0), 5000);
			alloc(6, at(3, t, 1), 6000);
			free_(at(3, t, 0));
			lw_record_phase_end();
		}
		step();
	}
}

/* What a program does besides: frees of memory never seen, frees that
 * fail (of a block made in the step and of an older one), an address
 * allocated again without a free, one site making two kinds and using two
 * streams, cudaFree(NULL). */
static void scenario_oddities(void)
{
	for (unsigned t = 0; t < 10; t++) {
		alloc(1, at(1, t, 0), 4096);
		release(at(7, t, 0), 1);	/* never allocated */
		release(at(1, t, 0), 0);	/* fails: still live */
		free_(at(1, t, 0));
		if (t)
			release(at(2, t - 1, 0), t % 2); /* older; fails */
		if (t && !(t % 2))
			free_(at(2, t - 1, 0));
		alloc(2, at(2, t, 0), 100);
		alloc(3, at(3, t, 0), 200);
		alloc(3, at(3, t, 0), 300);	/* again, not freed */
		free_(at(3, t, 0));
		alloc_as(4, at(4, t, 0), 10, LW_MEM_DEVICE,
			 LW_API_CUDA_MALLOC_ASYNC, 7);
		alloc_as(4, at(4, t, 1), 20, LW_MEM_DEVICE,
			 LW_API_CUDA_MALLOC_ASYNC, 8);
		alloc_as(4, at(4, t, 2), 30, LW_MEM_MANAGED,
			 LW_API_CUDA_MALLOC_ASYNC, 7);
		free_(at(4, t, 0));
		free_(at(4, t, 1));
		free_(at(4, t, 2));
		release(0, 1);
		alloc_as(5, at(5, t, 0), 4096, LW_MEM_PINNED_HOST,
			 LW_API_CUDA_MALLOC_HOST, 0);
		free_(at(5, t, 0));
		step();
	}
}

/* PyTorch's caching allocator: segments, blocks whose peak is not the
 * device's, an out-of-memory report in the middle of a step. */
static void scenario_torch(void)
{
	if (lw_enter()) {
		lw_record_segment((void *)at(6, 0, 0), 20 * MiB, 0);
		lw_leave();
	}
	for (unsigned t = 0; t < 10; t++) {
		alloc_as(1, at(1, t, 0), 4 * MiB, LW_MEM_DEVICE,
			 LW_API_TORCH_BLOCK, 0);
		alloc_as(2, at(1, t, 1), 2 * MiB, LW_MEM_DEVICE,
			 LW_API_TORCH_BLOCK, 0);
		release_block(at(1, t, 0));
		alloc(3, at(2, t, 0), 8 * MiB);	/* the device's peak */
		free_(at(2, t, 0));
		if (t == 6 && lw_enter()) {
			lw_record_oom(32 * MiB, 6 * MiB, 20 * MiB, 0);
			lw_leave();
		}
		release_block(at(1, t, 1));
		alloc_as(4, at(1, t, 2), 1000 * (t + 1), LW_MEM_DEVICE,
			 LW_API_TORCH_BLOCK, 0);
		step();
	}
	if (lw_enter()) {
		lw_record_segment((void *)at(6, 0, 1), 2 * MiB, 0);
		lw_leave();
	}
	release(at(6, 0, 1), 1);
}

/* Many allocations in one step (the list is compacted as it fills), the
 * same steps repeated, then another pattern; the program's end, and the
 * teardown's frees after it. */
static void scenario_many(void)
{
	for (unsigned t = 0; t < 30; t++) {
		unsigned n = t < 20 ? 3000 : 700;

		for (unsigned i = 0; i < n; i++) {
			alloc(1 + i % 4, at(1, t, i), 256 + 64 * (i % 5));
			if (i % 3 == 2) {
				free_(at(1, t, i - 2));
				free_(at(1, t, i));
			}
			if (i == n / 2 && t)
				free_(at(2, t - 1, 0));
		}
		for (unsigned i = 0; i < n; i++)
			if (i % 3 == 1 && (i % 700 || t == 29))
				free_(at(1, t, i));
		alloc(5, at(2, t, 0), 1 * MiB);
		step();
	}
	lw_record_mark(LW_MARK_PROGRAM_END);
	free_(at(2, 29, 0));
	alloc(6, at(3, 0, 0), 100);
	free_(at(3, 0, 0));
}

/* Steps from an optimizer: each is written at the next event, which
 * belongs to the next step. */
static void scenario_optimizer(void)
{
	for (unsigned t = 0; t < 10; t++) {
		alloc(1, at(1, t, 0), 4096);
		if (t)
			free_(at(2, t - 1, 0));
		alloc(2, at(2, t, 0), 8192);
		free_(at(1, t, 0));
		lw_record_step(LW_STEP_OPTIMIZER);
		lw_record_step(LW_STEP_OPTIMIZER);
	}
	alloc(3, at(3, 0, 0), 100);
}

/* A long run of one step's pattern: the shim's memory stays the same from
 * the first hundred steps on, and the trace grows by a few bytes a step. */
static uint64_t arena_at_100, arena_at_end;

static void scenario_long(void)
{
	for (unsigned t = 0; t < 3000; t++) {
		for (unsigned i = 0; i < 400; i++) {
			alloc(1 + i % 6, at(1, t, i), 512 + 128 * (i % 9));
			if (i % 2)
				free_(at(1, t, i));
		}
		for (unsigned i = 0; i < 400; i += 2)
			free_(at(1, t, i));
		if (t)
			free_(at(2, t - 1, 0));
		alloc(7, at(2, t, 0), 1 * MiB);
		step();
		if (t == 100)
			arena_at_100 = lw_arena_mapped_bytes();
	}
	arena_at_end = lw_arena_mapped_bytes();
}

/* smaller: the bounded trace is the smaller (not where a few events lie
 * between many boundaries, each with its own SHORT_LIVED record). */
static const struct {
	const char *name;
	void (*run)(void);
	bool smaller;
} scenarios[] = {
	{ "steps", scenario_steps, true },
	{ "peak", scenario_peak, true },
	{ "gc", scenario_gc, true },
	{ "phases", scenario_phases, false },
	{ "oddities", scenario_oddities, false },
	{ "torch", scenario_torch, true },
	{ "many", scenario_many, true },
	{ "optimizer", scenario_optimizer, true },
	{ "long", scenario_long, true },
};
#define SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

/* ---- reading back and comparing ---- */

static uint8_t *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *buf;

	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) < 0 ||
	    !(buf = malloc((size_t)st.st_size + 1))) {
		fclose(f);
		return NULL;
	}
	*len = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	return buf;
}

/* The trace in dir whose name starts with prefix. */
static int find_trace(const char *dir, const char *prefix, char *out,
		      size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
			snprintf(out, size, "%s/%s", dir, e->d_name);
			found = 1;
		}
	closedir(d);
	return found;
}

struct read {
	struct lw_model model;
	uint8_t *buf;
	size_t len;
};

static int read_trace(const char *path, struct read *r)
{
	struct lw_trace_result res;

	r->buf = read_all(path, &r->len);
	if (!r->buf || lw_model_init(&r->model) < 0)
		return -1;
	if (lw_trace_read(r->buf, r->len, &lw_model_ops, &r->model, &res) <
		    0 ||
	    !res.complete || lw_model_finish(&r->model) < 0) {
		fprintf(stderr, "%s: %s\n", path, res.message);
		return -1;
	}
	return 0;
}

static const char *scenario_name;

#define SAME(field)                                                          \
	do {                                                                 \
		unsigned long long x_ = (unsigned long long)(a->field);      \
		unsigned long long y_ = (unsigned long long)(b->field);      \
		if (x_ != y_)                                                \
			lw_test_fail("%s: %s: full %llu, bounded %llu",      \
				     scenario_name, #field, x_, y_);         \
	} while (0)

static void same_shares(const struct lw_shares *a, const struct lw_shares *b,
			const char *what)
{
	if (a->count != b->count) {
		lw_test_fail("%s: %s: %zu sites in full, %zu bounded",
			     scenario_name, what, a->count, b->count);
		return;
	}
	for (size_t i = 0; i < a->count; i++)
		if (a->items[i].site != b->items[i].site ||
		    a->items[i].bytes != b->items[i].bytes ||
		    a->items[i].count != b->items[i].count)
			lw_test_fail("%s: %s: share %zu differs", scenario_name,
				     what, i);
}

static void same_lingering(const struct lw_lingering *a,
			   const struct lw_lingering *b, const char *what)
{
	SAME(step);
	SAME(peak_bytes);
	SAME(bytes);
	same_shares(&a->sites, &b->sites, what);
}

static void same_totals(const struct lw_totals *a, const struct lw_totals *b)
{
	SAME(live_bytes);
	SAME(live_count);
	SAME(allocations);
	SAME(bytes_allocated);
}

static void same_site(const struct lw_model *fm, const struct lw_model *bm,
		      uint32_t i)
{
	const struct lw_site *a = &fm->sites.items[i], *b = &bm->sites.items[i];

	SAME(stack_id);
	SAME(kind);
	same_totals(&a->totals, &b->totals);
	SAME(torch_block);
	SAME(frees);
	SAME(lifetime_total);
	SAME(lifetime_max);
	SAME(long_frees);
	SAME(gc_frees);
	SAME(gc_freed_bytes);
	SAME(tail_step);
	SAME(tail_frees);
	SAME(tail_long_frees);
	SAME(tail_gc_frees);
	SAME(first_birth_step);
	SAME(last_birth_step);
	SAME(lingering_steps);
	SAME(lingering_max);
	SAME(lingering_total);
	for (size_t p = 0; p < fm->points.count && p < bm->points.count; p++) {
		struct lw_live_count x, y;
		bool kx = lw_model_site_at_point(fm, i, p, &x);
		bool ky = lw_model_site_at_point(bm, i, p, &y);

		if (kx != ky || x.live_bytes != y.live_bytes ||
		    x.live_count != y.live_count)
			lw_test_fail("%s: site %u at step point %zu differs",
				     scenario_name, i, p);
	}
}

static void same_models(const struct lw_model *fm, const struct lw_model *bm)
{
	const struct lw_model *a = fm, *b = bm;

	SAME(counts.events);
	SAME(counts.allocations);
	SAME(counts.frees);
	SAME(counts.unknown_frees);
	SAME(counts.reused_live_addresses);
	SAME(counts.steps);
	SAME(counts.live_device_bytes);
	SAME(counts.gc_passes);
	SAME(counts.gc_frees);
	for (unsigned k = 1; k <= LW_MEM_KIND_MAX; k++)
		same_totals(&a->kinds[k], &b->kinds[k]);
	SAME(contexts.count);
	for (size_t i = 0; i < a->contexts.count && i < b->contexts.count; i++) {
		SAME(contexts.items[i].api);
		SAME(contexts.items[i].device);
		SAME(contexts.items[i].stream);
		same_totals(&a->contexts.items[i].totals,
			    &b->contexts.items[i].totals);
		SAME(contexts.items[i].program_end.live_bytes);
	}
	SAME(sites.count);
	for (uint32_t i = 0; i < a->sites.count && i < b->sites.count; i++)
		same_site(fm, bm, i);
	SAME(points.count);
	SAME(points.stride);
	for (size_t i = 0; i < a->points.count && i < b->points.count; i++) {
		SAME(points.items[i].step);
		SAME(points.items[i].live_bytes);
		SAME(points.items[i].live_count);
		SAME(points.items[i].peak_bytes);
		SAME(points.items[i].lingering_bytes);
		SAME(points.items[i].phase);
		SAME(points.items[i].allocated_bytes);
		SAME(points.items[i].reserved_bytes);
		SAME(points.items[i].peak_reserved_bytes);
	}
	SAME(peak.bytes);
	SAME(peak.step);
	SAME(peak.lingering_steps);
	SAME(peak.have_worst);
	same_lingering(&a->peak.worst, &b->peak.worst, "worst peak");
	same_lingering(&a->peak.most, &b->peak.most, "most lingering");
	SAME(phases.count);
	SAME(phases.begins);
	for (size_t i = 0; i < a->phases.count && i < b->phases.count; i++) {
		SAME(phases.items[i].instances);
		SAME(phases.items[i].surviving_bytes);
		SAME(phases.items[i].surviving_count);
		same_shares(&a->phases.items[i].sites,
			    &b->phases.items[i].sites, "phase");
	}
	SAME(torch.blocks);
	SAME(torch.segments);
	SAME(torch.allocated_bytes);
	SAME(torch.reserved_bytes);
	SAME(torch.peak_allocated_bytes);
	SAME(torch.peak_reserved_bytes);
	SAME(oom.seen);
	SAME(oom.steps);
	SAME(oom.live_device_bytes);
	SAME(oom.live_device_count);
	SAME(oom.tracked_allocated);
	same_shares(&a->oom.live, &b->oom.live, "out of memory: live");
	same_shares(&a->oom.grew, &b->oom.grew, "out of memory: grew");
	SAME(have_program_end);
	SAME(program_end_steps);
	for (unsigned k = 1; k <= LW_MEM_KIND_MAX; k++)
		SAME(program_end_kinds[k].live_bytes);
}

/* Records scenario s in a child process with the trace detail given. */
static int record_in_child(unsigned s, const char *detail, const char *dir)
{
	char pattern[512];
	int status;
	pid_t pid;

	snprintf(pattern, sizeof(pattern), "%s/%s-%%p.trace", dir, detail);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setenv("LEAKWATCH_OUT", pattern, 1);
		setenv("LEAKWATCH_TRACE_DETAIL", detail, 1);
		setenv("LEAKWATCH_QUIET", "1", 1);
		unsetenv("LEAKWATCH_MANIFEST");
		lw_init();
		scenarios[s].run();
		lw_shutdown();
		if (scenarios[s].run == scenario_long &&
		    strcmp(detail, "bounded") == 0 &&
		    arena_at_end > arena_at_100) {
			fprintf(stderr, "long: the shim's memory grew from %llu "
				"bytes at step 100 to %llu at step 3000\n",
				(unsigned long long)arena_at_100,
				(unsigned long long)arena_at_end);
			_exit(1);
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void run_scenario(unsigned s)
{
	char dir[] = "/tmp/lw-test-bounded-XXXXXX", path[600];
	struct read full = { 0 }, bounded = { 0 };

	scenario_name = scenarios[s].name;
	REQUIRE(mkdtemp(dir) != NULL);
	if (record_in_child(s, "full", dir) < 0 ||
	    record_in_child(s, "bounded", dir) < 0) {
		lw_test_fail("%s: recording failed", scenario_name);
		return;
	}
	REQUIRE(find_trace(dir, "full-", path, sizeof(path)));
	REQUIRE(read_trace(path, &full) == 0);
	unlink(path);
	REQUIRE(find_trace(dir, "bounded-", path, sizeof(path)));
	REQUIRE(read_trace(path, &bounded) == 0);
	unlink(path);
	rmdir(dir);

	same_models(&full.model, &bounded.model);
	if (full.model.short_lived.records)
		lw_test_fail("%s: SHORT_LIVED records in a full trace",
			     scenario_name);
	if (!bounded.model.short_lived.records ||
	    (scenarios[s].smaller && bounded.len >= full.len))
		lw_test_fail("%s: the bounded trace (%zu bytes, %llu "
			     "SHORT_LIVED records) is no smaller than the full "
			     "one (%zu bytes)", scenario_name, bounded.len,
			     (unsigned long long)bounded.model.short_lived.records,
			     full.len);
	if (scenarios[s].run == scenario_long &&
	    bounded.len > full.len / 50)
		lw_test_fail("long: %zu bytes bounded, %zu in full",
			     bounded.len, full.len);
	printf("%-10s full %8zu bytes, bounded %7zu bytes (%llu of %llu "
	       "allocations summed)\n", scenario_name, full.len, bounded.len,
	       (unsigned long long)bounded.model.short_lived.allocations,
	       (unsigned long long)bounded.model.counts.allocations);
	lw_model_fini(&full.model);
	lw_model_fini(&bounded.model);
	free(full.buf);
	free(bounded.buf);
}

int main(int argc, char **argv)
{
	unsigned ran = 0;

	for (unsigned s = 0; s < SCENARIOS; s++) {
		if (argc > 1 && strcmp(argv[1], scenarios[s].name) != 0)
			continue;
		run_scenario(s);
		ran++;
	}
	CHECK(ran > 0);
	return lw_test_done("test-bounded");
}
