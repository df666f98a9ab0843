/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of lw_parse_size() (common/lw-size.c), of the growth judge on
 * hand-made series (report/analyse/growth.c) and of the model's step series
 * where the traces of gen-trace do not reach: more changing sites than it
 * keeps series for.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "growth.h"
#include "lw-size.h"
#include "lw-test.h"

static void check_size(const char *text, uint64_t expected)
{
	uint64_t got = 12345;
	int rc = lw_parse_size(text, &got);

	if (rc != 0 || got != expected) {
		fprintf(stderr, "'%s': rc %d, %" PRIu64 "; expected %" PRIu64 "\n",
			text, rc, got, expected);
		lw_test_failures++;
	}
}

static void check_bad(const char *text)
{
	uint64_t got = 12345;
	int rc = lw_parse_size(text, &got);

	if (rc != -EINVAL || got != 12345) {
		fprintf(stderr, "'%s': rc %d, %" PRIu64 "; expected -EINVAL, untouched\n",
			text, rc, got);
		lw_test_failures++;
	}
}

static void check_verdict(const char *what, const double *v, size_t n,
			  enum lw_verdict expected)
{
	struct lw_growth g = lw_judge_series(v, n, 1);

	if (g.verdict != expected) {
		fprintf(stderr, "%s: %s, expected %s\n", what,
			lw_verdict_name(g.verdict), lw_verdict_name(expected));
		lw_test_failures++;
	}
}

static void test_series_cap(void)
{
	const struct lw_trace_ops *ops = &lw_model_ops;
	const uint32_t sites = LW_SITE_SERIES_MAX + 76;
	uint64_t frame = 0x401000, addr = 0x7f0000000000;
	struct lw_growth_report g = { 0 };
	struct lw_model m;
	uint32_t growing = 0, unjudged = 0;
	bool ok = true;

	ok &= lw_model_init(&m) == 0;
	for (uint64_t id = 1; id <= sites; id++)
		ok &= ops->stack(&m, id, &frame, 1) == 0;
	/* Every site keeps one more 512-byte block per step. */
	for (unsigned step = 0; step < 30; step++) {
		for (uint64_t id = 1; id <= sites; id++) {
			ok &= ops->alloc(&m, LW_MEM_DEVICE, addr, 512, id) == 0;
			addr += 0x200;
		}
		ok &= ops->step(&m) == 0;
	}
	ok &= m.points.count == 30 && m.points.stride == 1;
	ok &= m.points.series_count == LW_SITE_SERIES_MAX;
	ok &= lw_model_growth(&m, LW_DEFAULT_MIN_STEPS, &g) == 0;
	for (uint32_t i = 0; ok && i < g.site_count; i++) {
		growing += g.sites[i].verdict == LW_VERDICT_GROWING;
		unjudged += g.sites[i].verdict == LW_VERDICT_NOT_ENOUGH_STEPS;
	}
	if (!ok || growing != LW_SITE_SERIES_MAX || unjudged != 76 ||
	    g.run.verdict != LW_VERDICT_GROWING ||
	    g.run.per_step != 512.0 * sites) {
		fprintf(stderr, "series cap: ok %d, %u growing, %u unjudged, run %s %g\n",
			ok, growing, unjudged, lw_verdict_name(g.run.verdict),
			g.run.per_step);
		lw_test_failures++;
	}
	lw_growth_report_fini(&g);
	lw_model_fini(&m);
}

int main(void)
{
	double v[100];

	check_size("0", 0);
	check_size("100", 100);
	check_size("100B", 100);
	check_size("512KiB", 512 * 1024);
	check_size("512kib", 512 * 1024);
	check_size("1MiB", 1 << 20);
	check_size("1M", 1 << 20);
	check_size("1.5GiB", 3ull << 29);
	check_size("10MB", 10000000);
	check_size("10kB", 10000);
	check_size("10KB", 10000);
	check_size("2TiB", 2ull << 40);
	check_size("0.5KiB", 512);
	check_size("0.0001KiB", 0);	/* rounded down */
	check_size("1.99999999999999999999999KiB", 2047);
	check_size("18446744073709551615", UINT64_MAX);
	check_size("15PiB", 15ull << 50);
	check_size("007", 7);

	check_bad("");
	check_bad("-1");
	check_bad("+1");
	check_bad(" 1");
	check_bad("1 ");
	check_bad("1 MiB");
	check_bad("1MiBx");
	check_bad("MiB");
	check_bad(".5MiB");
	check_bad("1.MiB");
	check_bad("1.5");	/* fractional bytes */
	check_bad("1.5B");
	check_bad("1e6");
	check_bad("0x10");
	check_bad("18446744073709551616");	/* 2^64 */
	check_bad("16384PiB");			/* 2^64 */
	check_bad("99999999999999999999999");
	check_bad("1XiB");
	check_bad("1..5MiB");

	/* The judge, on series of one point per step. */
	for (size_t i = 0; i < 100; i++)
		v[i] = 1000 + 10.0 * (double)i;
	check_verdict("line", v, 100, LW_VERDICT_GROWING);
	for (size_t i = 0; i < 100; i++)
		v[i] = 1000;
	check_verdict("flat", v, 100, LW_VERDICT_STABLE);
	v[0] = 0; /* born at step 1: warm-up */
	check_verdict("born at step 1", v, 100, LW_VERDICT_STABLE);
	for (size_t i = 0; i < 100; i++)
		v[i] = 1000 + (double)(i % 10) * 100;
	check_verdict("sawtooth", v, 100, LW_VERDICT_SAWTOOTH_FLAT);
	for (size_t i = 0; i < 100; i++)
		v[i] = 1000 + (double)(i % 10) * 100 + (double)(i / 10) * 10;
	check_verdict("rising sawtooth", v, 100, LW_VERDICT_GROWING);
	for (size_t i = 0; i < 100; i++)
		v[i] = 1000 + (double)(i < 50 ? i : 50) * 10;
	check_verdict("plateau", v, 100, LW_VERDICT_PLATEAU);
	check_verdict("three points", v, 3, LW_VERDICT_NOT_ENOUGH_STEPS);
	check_verdict("no points", v, 0, LW_VERDICT_NOT_ENOUGH_STEPS);

	test_series_cap();

	return lw_test_done("test-size");
}
