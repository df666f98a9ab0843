/* SPDX-License-Identifier: MIT */
/* The varint and zigzag codecs of common/lw-format.h. */
#include <stdint.h>
#include <string.h>

#include "lw-format.h"
#include "lw-test.h"

static void roundtrip(uint64_t v)
{
	uint8_t buf[LW_VARINT_MAX];
	unsigned n = lw_varint_put(buf, v);
	const uint8_t *p = buf;
	uint64_t out = ~v;

	CHECK(n >= 1 && n <= LW_VARINT_MAX);
	CHECK(lw_varint_get(&p, buf + n, &out) == 0);
	CHECK_EQ_U64(out, v);
	CHECK(p == buf + n);
	/* Every shorter prefix is an incomplete varint, never a value. */
	for (unsigned cut = 0; cut < n; cut++) {
		p = buf;
		CHECK(lw_varint_get(&p, buf + cut, &out) == -1);
		CHECK(p == buf);
	}
}

int main(void)
{
	static const uint64_t values[] = {
		0, 1, 127, 128, 255, 16383, 16384, 1u << 31, 0xffffffffull,
		1ull << 56, UINT64_MAX - 1, UINT64_MAX,
	};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		roundtrip(values[i]);
	/* Every API the trace can name has a name (reports print it). */
	for (uint64_t api = 1; api <= LW_API_MAX; api++)
		if (strcmp(lw_api_name(api), "?") == 0)
			lw_test_fail("API %llu has no name",
				     (unsigned long long)api);
	CHECK(strcmp(lw_api_name(LW_API_MAX + 1), "?") == 0);

	CHECK_EQ_U64(lw_varint_put((uint8_t[10]){0}, 127), 1);
	CHECK_EQ_U64(lw_varint_put((uint8_t[10]){0}, 128), 2);
	CHECK_EQ_U64(lw_varint_put((uint8_t[10]){0}, UINT64_MAX), 10);

	/* Zigzag keeps small magnitudes small, both signs. */
	static const int64_t deltas[] = { 0, -1, 1, -64, 63, INT64_MIN,
					   INT64_MAX };
	for (size_t i = 0; i < sizeof(deltas) / sizeof(deltas[0]); i++)
		CHECK(lw_zigzag_decode(lw_zigzag_encode(deltas[i])) ==
		      deltas[i]);
	CHECK_EQ_U64(lw_zigzag_encode(-1), 1);
	CHECK_EQ_U64(lw_zigzag_encode(1), 2);

	/* More than 64 bits of payload is rejected, not wrapped. */
	uint8_t overlong[11];
	memset(overlong, 0xff, sizeof(overlong));
	overlong[10] = 0x01;
	const uint8_t *p = overlong;
	uint64_t out;
	CHECK(lw_varint_get(&p, overlong + sizeof(overlong), &out) == -2);
	uint8_t too_big[10];
	memset(too_big, 0xff, 9);
	too_big[9] = 0x02; /* bit 64 set */
	p = too_big;
	CHECK(lw_varint_get(&p, too_big + 10, &out) == -2);

	return lw_test_done("test-format");
}
