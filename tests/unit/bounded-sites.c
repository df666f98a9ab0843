/* SPDX-License-Identifier: MIT */
/*
 * The allocation sites of test-bounded: a library of its own, so that the
 * shim's walk (which skips the leading frames of the module it is linked
 * into, here the test program) starts at one of these, and each is a call
 * stack of its own.
 */
#include <stdint.h>

typedef void bounded_record_fn(unsigned site, uint64_t addr, uint64_t size,
			       unsigned kind, unsigned api, uint64_t stream);

void bounded_site(unsigned site, bounded_record_fn *record, uint64_t addr,
		  uint64_t size, unsigned kind, unsigned api, uint64_t stream);

#define SITE(n)                                                              \
	static __attribute__((noinline)) void site##n(                       \
		bounded_record_fn *record, uint64_t addr, uint64_t size,    \
		unsigned kind, unsigned api, uint64_t stream)               \
	{                                                                    \
		record(n, addr, size, kind, api, stream);                    \
		__asm__ volatile("" ::: "memory"); /* not a tail call */     \
	}
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)

void bounded_site(unsigned site, bounded_record_fn *record, uint64_t addr,
		  uint64_t size, unsigned kind, unsigned api, uint64_t stream)
{
	static void (*const sites[])(bounded_record_fn *, uint64_t, uint64_t,
				     unsigned, unsigned, uint64_t) = {
		site0, site1, site2, site3, site4, site5, site6, site7,
	};

	sites[site % 8](record, addr, size, kind, api, stream);
	__asm__ volatile("" ::: "memory");
}
