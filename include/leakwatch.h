/* SPDX-License-Identifier: MIT */
/*
 * leakwatch: the C API a program may call to mark training steps and named
 * phases in its trace.
 *
 * These functions live in libleakwatch.so, which is normally loaded with
 * LD_PRELOAD. A program should not link against it: look the functions up
 * at run time, so that it runs unchanged without leakwatch. The inline
 * helpers below do exactly that, once, and are no-ops when the shim is not
 * loaded:
 *
 *     #include <leakwatch.h>
 *     for (step = 0; step < n; step++) {
 *             train_one_step();
 *             leakwatch_mark_step();
 *     }
 */
#ifndef LEAKWATCH_H
#define LEAKWATCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Marks the end of one training step. Thread-safe. Does nothing if no trace
 * can be written.
 */
void leakwatch_step(void);

/*
 * Opens a named phase (model loading, evaluation, ...). Phases nest. The name
 * is copied; NULL is recorded as "(null)".
 */
void leakwatch_phase_begin(const char *name);

/* Closes the innermost open phase. Unbalanced calls are recorded as such. */
void leakwatch_phase_end(void);

/*
 * Device memory (device and managed kinds) this process holds now, as the
 * shim counts it: *bytes and *count (either may be NULL). Returns 0, or -1
 * when the shim is not tracking (disabled, or its trace could not be
 * written). Thread-safe; for test harnesses that judge growth themselves
 * (the pytest plugin).
 */
int leakwatch_device_live(unsigned long long *bytes, unsigned long long *count);

/*
 * What the trace holds now, for leakwatch.snapshot(): flushes the trace,
 * prints the live view's line on stderr ("leakwatch: snapshot: step N:
 * ..."), and stores the trace's path (NUL-terminated, cut to path_size),
 * the steps ended so far, the device memory live (bytes, allocations), and
 * the sites that grow from step to step with the fastest one's bytes per
 * step. Any pointer may be NULL. Returns 0, or -1 when the shim is not
 * tracking. Thread-safe.
 */
int leakwatch_snapshot_info(char *trace_path, size_t path_size,
			    unsigned long long *steps, unsigned long long *bytes,
			    unsigned long long *count, unsigned *growing_sites,
			    double *fastest_growth);

/*
 * Judges a series of device memory values, one per step, as `leakwatch
 * check` and the report judge a step series (common/lw-growth.c): returns
 * the verdict, "growing", "plateau", "sawtooth-flat", "stable" or
 * "not-enough-steps" (a static string), and stores the growth rate in bytes
 * per step in *per_step (may be NULL). Pure; for test harnesses, so that
 * their verdict is the report's (the pytest plugin).
 */
const char *leakwatch_judge_growth(const double *series, unsigned long count,
				   double *per_step);

#ifndef LEAKWATCH_NO_INLINE_HELPERS
#include <dlfcn.h>

/* Calls leakwatch_step() if the shim is loaded. */
static inline void leakwatch_mark_step(void)
{
	static void (*fn)(void);
	static int looked_up;

	if (!looked_up) {
		*(void **)&fn = dlsym(RTLD_DEFAULT, "leakwatch_step");
		looked_up = 1;
	}
	if (fn)
		fn();
}

/* Calls leakwatch_phase_begin(name) if the shim is loaded. */
static inline void leakwatch_mark_phase_begin(const char *name)
{
	static void (*fn)(const char *);
	static int looked_up;

	if (!looked_up) {
		*(void **)&fn = dlsym(RTLD_DEFAULT, "leakwatch_phase_begin");
		looked_up = 1;
	}
	if (fn)
		fn(name);
}

/* Calls leakwatch_phase_end() if the shim is loaded. */
static inline void leakwatch_mark_phase_end(void)
{
	static void (*fn)(void);
	static int looked_up;

	if (!looked_up) {
		*(void **)&fn = dlsym(RTLD_DEFAULT, "leakwatch_phase_end");
		looked_up = 1;
	}
	if (fn)
		fn();
}
#endif

#ifdef __cplusplus
}
#endif

#endif
