/* SPDX-License-Identifier: MIT */
/* Sizes written by people and for them (lw-size.h): `leakwatch check
 * --max-growth` and the shim's LEAKWATCH_MAX_GROWTH read them; the shim
 * and the reports write them. No libm: the shim links this too. */
#include "lw-size.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
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

const char *lw_format_size(char buf[LW_SIZE_BUF], uint64_t bytes)
{
	static const char *const names[] = {
		"KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
	};
	double value = (double)bytes / 1024;
	size_t unit = 0;

	if (bytes < 1024) {
		snprintf(buf, LW_SIZE_BUF, "%" PRIu64 " B", bytes);
		return buf;
	}
	/* 1023.96 KiB would print as "1024.0 KiB": move up a unit first. */
	while (value >= 1023.95 && unit + 1 < sizeof(names) / sizeof(names[0])) {
		value /= 1024;
		unit++;
	}
	snprintf(buf, LW_SIZE_BUF, "%.1f %s", value, names[unit]);
	return buf;
}

const char *lw_format_rate(char buf[LW_SIZE_BUF], double bytes_per_step)
{
	double magnitude = bytes_per_step < 0 ? -bytes_per_step
					      : bytes_per_step;
	char size[LW_SIZE_BUF];
	size_t n;

	lw_format_size(size, magnitude >= 1.8e19 ? UINT64_MAX
						 : (uint64_t)(magnitude + 0.5));
	/* A size is at most "1023.9 EiB" or 20 digits and " B": room for
	 * the sign, but say so to the compiler. */
	n = strnlen(size, LW_SIZE_BUF - 2);
	buf[0] = bytes_per_step < 0 ? '-' : '+';
	memcpy(buf + 1, size, n);
	buf[n + 1] = '\0';
	return buf;
}
