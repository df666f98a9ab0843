/* SPDX-License-Identifier: MIT */
/*
 * The harness of the C tests: CHECK() reports a failed condition and counts
 * it, REQUIRE() ends the test at once (where going on would only crash),
 * lw_test_fail() counts a failure worded by the test, and lw_test_done()
 * turns the count into the exit status (0 passed, 1 failed).
 */
#ifndef LW_TEST_H
#define LW_TEST_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int lw_test_failures;

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n",          \
				__FILE__, __LINE__, #cond);                   \
			lw_test_failures++;                                   \
		}                                                             \
	} while (0)

#define REQUIRE(cond)                                                         \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n",          \
				__FILE__, __LINE__, #cond);                   \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                    \
	do {                                                                  \
		unsigned long long a_ = (unsigned long long)(a);              \
		unsigned long long b_ = (unsigned long long)(b);              \
		if (a_ != b_) {                                               \
			fprintf(stderr, "%s:%d: %s == %llu, expected %s == "  \
				"%llu\n", __FILE__, __LINE__, #a, a_, #b,     \
				b_);                                          \
			lw_test_failures++;                                   \
		}                                                             \
	} while (0)

/* Counts a failure, described as printf() would. */
static inline __attribute__((format(printf, 1, 2), unused)) void
lw_test_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	lw_test_failures++;
}

/*
 * A xorshift64 generator: the same numbers on every run, so that a failure
 * repeats. *state must not be 0.
 */
static inline __attribute__((unused)) uint64_t lw_test_rng(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static inline int lw_test_done(const char *name)
{
	if (lw_test_failures)
		fprintf(stderr, "%s: %d check(s) failed\n", name,
			lw_test_failures);
	return lw_test_failures ? 1 : 0;
}

#endif
