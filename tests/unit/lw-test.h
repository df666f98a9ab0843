/* SPDX-License-Identifier: MIT */
/* A minimal harness for the unit tests: CHECK() reports and counts failures,
 * and lw_test_done() turns them into the exit status. */
#ifndef LW_TEST_H
#define LW_TEST_H

#include <stdio.h>

static int lw_test_failures;

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n",          \
				__FILE__, __LINE__, #cond);                   \
			lw_test_failures++;                                   \
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

static inline int lw_test_done(const char *name)
{
	if (lw_test_failures)
		fprintf(stderr, "%s: %d check(s) failed\n", name,
			lw_test_failures);
	return lw_test_failures ? 1 : 0;
}

#endif
