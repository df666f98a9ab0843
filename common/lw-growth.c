/* SPDX-License-Identifier: MIT */
/*
 * Growth verdicts from step series, shared by the report
 * (report/analyse/growth.c) and the shim's bare-mode gate
 * (interpose/summary/gate.c).
 *
 * A memory plot of a healthy training run is noisy: optimizer state appears
 * at the first step, frees deferred to a GC pass or a log interval make a
 * sawtooth, caches fill and stop. A leak is a lower envelope that keeps
 * rising. So, on the points of a series:
 *   1. the first tenth (at least one point) is warm-up and ignored;
 *   2. the rest is cut into WINDOWS windows and each window's minimum (and
 *      where it is) is a floor point: the lower envelope;
 *   3. the growth rate is the Theil-Sen slope (median of pairwise slopes)
 *      of the floor points, per step;
 *   4. "growing": that slope and the slope of the floor points in the last
 *      half are both positive, the last third's floor is above the middle
 *      third's, and the rise over the judged part is more than three times
 *      the floor points' median distance from the fitted line (noise);
 *   5. else "plateau" if the floor rose (last third above the first window)
 *      beyond that noise: growth that stopped; else "sawtooth-flat" if
 *      points stand above their window's floor; else "stable".
 * Per site, bytes and counts are judged alike, so that one 512-byte tensor
 * kept per step grows even where the bytes drown in the run's noise.
 */
#include "lw-growth.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#define WINDOWS 10
#define MIN_JUDGED_POINTS 4

const char *lw_verdict_name(enum lw_verdict verdict)
{
	switch (verdict) {
	case LW_VERDICT_STABLE:
		return "stable";
	case LW_VERDICT_SAWTOOTH_FLAT:
		return "sawtooth-flat";
	case LW_VERDICT_PLATEAU:
		return "plateau";
	case LW_VERDICT_GROWING:
		return "growing";
	case LW_VERDICT_NOT_ENOUGH_STEPS:
		break;
	}
	return "not-enough-steps";
}

/* Median of v[0..n) (reorders v); 0 for n == 0. The arrays here hold at
 * most WINDOWS * (WINDOWS - 1) / 2 values: an insertion sort beats qsort's
 * call per comparison, and a report takes several medians per site. */
static double median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 1; i < n; i++) {
		double x = v[i];
		size_t j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Theil-Sen slope of the points (x[i], y[i]), i in [from, to). */
static double theil_sen(const double *x, const double *y, size_t from,
			size_t to)
{
	double slopes[WINDOWS * (WINDOWS - 1) / 2];
	size_t n = 0;

	for (size_t i = from; i < to; i++) {
		for (size_t j = i + 1; j < to; j++) {
			if (x[j] != x[i])
				slopes[n++] = (y[j] - y[i]) / (x[j] - x[i]);
		}
	}
	return median(slopes, n);
}

static double min_of(const double *v, size_t from, size_t to)
{
	double m = v[from];

	for (size_t i = from + 1; i < to; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

struct lw_growth lw_judge_series(const double *v, size_t n, uint64_t stride)
{
	struct lw_growth g = { LW_VERDICT_NOT_ENOUGH_STEPS, 0 };
	double fx[WINDOWS], fy[WINDOWS], residuals[WINDOWS];
	size_t warmup = n / 10 ? n / 10 : 1, judged, windows;
	double slope, late_slope, intercept, noise, rise, above = 0;
	double mid_floor, last_floor;

	if (n <= warmup || n - warmup < MIN_JUDGED_POINTS)
		return g;
	judged = n - warmup;
	windows = judged < WINDOWS ? judged : WINDOWS;
	for (size_t w = 0; w < windows; w++) {
		size_t from = warmup + w * judged / windows;
		size_t to = warmup + (w + 1) * judged / windows;
		size_t at = from;

		for (size_t i = from; i < to; i++) {
			if (v[i] < v[at])
				at = i;
		}
		fx[w] = (double)at;
		fy[w] = v[at];
		for (size_t i = from; i < to; i++)
			above += v[i] - v[at];
	}
	slope = theil_sen(fx, fy, 0, windows);
	late_slope = theil_sen(fx, fy, windows / 2, windows);
	for (size_t w = 0; w < windows; w++)
		residuals[w] = fy[w] - slope * fx[w];
	intercept = median(residuals, windows);
	for (size_t w = 0; w < windows; w++)
		residuals[w] = fabs(fy[w] - (slope * fx[w] + intercept));
	noise = median(residuals, windows);
	rise = slope * (double)(judged - 1);
	mid_floor = min_of(v, warmup + judged / 3, warmup + 2 * judged / 3);
	last_floor = min_of(v, warmup + 2 * judged / 3, n);

	g.per_step = slope / (double)stride;
	if (slope > 0 && late_slope > 0 && last_floor > mid_floor &&
	    rise > 3 * noise)
		g.verdict = LW_VERDICT_GROWING;
	else if (last_floor > fy[0] && last_floor - fy[0] > 3 * noise)
		g.verdict = LW_VERDICT_PLATEAU;
	else if (above > 0)
		g.verdict = LW_VERDICT_SAWTOOTH_FLAT;
	else
		g.verdict = LW_VERDICT_STABLE;
	return g;
}

