/* SPDX-License-Identifier: MIT */
/*
 * libpyframes-probe.so: the core's Python frame reader, loaded into real
 * interpreters with ctypes by pyframes_test.py. ctypes.PyDLL calls it with
 * the GIL held, ctypes.CDLL with the GIL released (the case of a CUDA hook).
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pyframes.h"

#define PROBE_EXPORT __attribute__((visibility("default")))
#define PROBE_MAX_FRAMES 256

int probe_status(void);
const char *probe_version(void);
int probe_capture_max(char *out, int size, int max);
int probe_capture(char *out, int size);
int probe_native_thread(void);
int probe_call_in_thread(void (*callback)(void));
double probe_bench_capture(int iterations, int *depth);
double probe_bench_info(int iterations);
int probe_is_eval_address(uintptr_t addr);

PROBE_EXPORT int probe_status(void)
{
	return (int)lw_py_init();
}

PROBE_EXPORT const char *probe_version(void)
{
	return lw_py_version();
}

PROBE_EXPORT int probe_is_eval_address(uintptr_t addr)
{
	return lw_py_is_eval_address(addr);
}

/* Native return addresses of this call that lie in the evaluation loop. */
static unsigned native_eval_frames(void)
{
	void *ips[512];
	int depth = unw_backtrace(ips, 512);
	unsigned count = 0;

	for (int i = 0; i < depth; i++)
		if (lw_py_is_eval_address((uintptr_t)ips[i]))
			count++;
	return count;
}

/*
 * Writes "merge ENTRIES NATIVE_EVALS\n" and then one line per Python frame,
 * innermost first: "FILE\tLINE\tQUALNAME\tENTRY\n", for at most max frames.
 * Returns the number of frames, or -1 if out is too small.
 */
PROBE_EXPORT int probe_capture_max(char *out, int size, int max)
{
	struct lw_py_frame frames[PROBE_MAX_FRAMES];
	unsigned n = lw_py_capture(frames, max < PROBE_MAX_FRAMES ? (unsigned)max
								   : PROBE_MAX_FRAMES);
	unsigned evals = native_eval_frames();
	unsigned entries = 0;
	int used;

	for (unsigned i = 0; i < n; i++)
		entries += frames[i].entry;
	used = snprintf(out, (size_t)size, "merge %u %u\n", entries, evals);
	for (unsigned i = 0; i < n && used >= 0 && used < size; i++) {
		char file[1024], qualname[512];
		int first_line = 0;
		if (lw_py_code_info(frames[i].code, file, sizeof(file), qualname,
				    sizeof(qualname), &first_line) < 0)
			strcpy(file, "?");
		used += snprintf(out + used, (size_t)(size - used), "%s\t%d\t%s\t%d\n",
				 file, (int)frames[i].line, qualname, frames[i].entry);
	}
	return used >= 0 && used < size ? (int)n : -1;
}

PROBE_EXPORT int probe_capture(char *out, int size)
{
	return probe_capture_max(out, size, PROBE_MAX_FRAMES);
}

static void *capture_thread(void *arg)
{
	struct lw_py_frame frames[16];
	*(unsigned *)arg = lw_py_capture(frames, 16);
	return NULL;
}

/* Frames seen by a native thread that never ran Python: must be 0. */
PROBE_EXPORT int probe_native_thread(void)
{
	pthread_t thread;
	unsigned count = 12345;

	if (pthread_create(&thread, NULL, capture_thread, &count) != 0)
		return -1;
	pthread_join(thread, NULL);
	return (int)count;
}

static void *callback_thread(void *arg)
{
	void (**callback)(void) = arg;
	(*callback)();
	return NULL;
}

/* Runs a ctypes callback on a thread created by C (it gets a thread state
 * from PyGILState_Ensure). */
PROBE_EXPORT int probe_call_in_thread(void (*callback)(void))
{
	pthread_t thread;

	if (pthread_create(&thread, NULL, callback_thread, &callback) != 0)
		return -1;
	pthread_join(thread, NULL);
	return 0;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Nanoseconds per lw_py_capture() (frames and their lines); *depth gets the
 * number of frames captured. */
PROBE_EXPORT double probe_bench_capture(int iterations, int *depth)
{
	struct lw_py_frame frames[PROBE_MAX_FRAMES];
	unsigned n = 0;

	lw_py_capture(frames, PROBE_MAX_FRAMES);
	double start = now_ns();
	for (int i = 0; i < iterations; i++) {
		n = lw_py_capture(frames, PROBE_MAX_FRAMES);
		__asm__ volatile("" : : "r"(frames) : "memory");
	}
	double elapsed = now_ns() - start;
	*depth = (int)n;
	return elapsed / iterations;
}

/* Nanoseconds per lw_py_code_info() of the innermost frame's code object
 * (the once-per-code-object cost of interning). */
PROBE_EXPORT double probe_bench_info(int iterations)
{
	struct lw_py_frame frame;
	char file[256], qualname[256];
	int first_line;

	if (lw_py_capture(&frame, 1) != 1)
		return -1;
	double start = now_ns();
	for (int i = 0; i < iterations; i++) {
		lw_py_code_info(frame.code, file, sizeof(file), qualname,
				sizeof(qualname), &first_line);
		__asm__ volatile("" : : "r"(file), "r"(qualname) : "memory");
	}
	return (now_ns() - start) / iterations;
}
