/* SPDX-License-Identifier: MIT */
/* Sizes written by people (lw-size.h): for `leakwatch check --max-growth`
 * and, later, the shim's LEAKWATCH_MAX_GROWTH. */
#include "lw-size.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <strings.h>

static const struct {
	const char *name;
	uint64_t multiplier;
} units[] = {
	{ "", 1 },
	{ "b", 1 },
	{ "k", 1ull << 10 },
	{ "kib", 1ull << 10 },
	{ "kb", 1000ull },
	{ "m", 1ull << 20 },
	{ "mib", 1ull << 20 },
	{ "mb", 1000000ull },
	{ "g", 1ull << 30 },
	{ "gib", 1ull << 30 },
	{ "gb", 1000000000ull },
	{ "t", 1ull << 40 },
	{ "tib", 1ull << 40 },
	{ "tb", 1000000000000ull },
	{ "p", 1ull << 50 },
	{ "pib", 1ull << 50 },
	{ "pb", 1000000000000000ull },
};

/* Fractions beyond this many digits cannot change a 64-bit result by a
 * whole byte for any unit here, and keep the arithmetic within 128 bits. */
#define MAX_FRACTION_DIGITS 19

int lw_parse_size(const char *text, uint64_t *out)
{
	__extension__ typedef unsigned __int128 u128;
	const char *p = text;
	uint64_t whole = 0, fraction = 0, scale = 1, multiplier = 0;
	unsigned fraction_digits = 0;
	bool have_fraction = false;
	u128 total;

	if (!text || *p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (whole > (UINT64_MAX - d) / 10)
			return -EINVAL;
		whole = whole * 10 + d;
	}
	if (*p == '.') {
		p++;
		have_fraction = true;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (fraction_digits == MAX_FRACTION_DIGITS)
				continue; /* too fine to matter */
			fraction = fraction * 10 + (uint64_t)(*p - '0');
			scale *= 10;
			fraction_digits++;
		}
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(p, units[i].name) == 0) {
			multiplier = units[i].multiplier;
			break;
		}
	}
	if (!multiplier)
		return -EINVAL;
	if (have_fraction && multiplier == 1)
		return -EINVAL; /* "1.5" bytes */
	total = (u128)whole * multiplier +
		(u128)fraction * multiplier / scale;
	if (total > UINT64_MAX)
		return -EINVAL;
	*out = (uint64_t)total;
	return 0;
}
