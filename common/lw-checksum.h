/* SPDX-License-Identifier: MIT */
/*
 * The checksum of a trace's blocks (LW_REC_CHECKSUM in lw-format.h), shared
 * by the shim's writer and the report's reader.
 *
 * A 64-bit hash read eight bytes at a time in four independent lanes, so
 * that a block costs well under one instruction per byte: the shim hashes
 * every buffer it writes. Each step is a bijection of the lane for a given
 * word and of the word for a given lane, and so is the final mix, so a
 * change within one aligned 8-byte word (a flipped bit, an overwritten
 * byte) always changes the result; other changes go unseen with
 * probability 2^-64.
 * Not a defence against someone who forges traces on purpose: a check that
 * what the writer wrote is what the reader reads.
 */
#ifndef LW_CHECKSUM_H
#define LW_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lw-format.h"

#define LW_CHECKSUM_K1 0x9e3779b97f4a7c15ull
#define LW_CHECKSUM_K2 0xd6e8feb86659fd93ull

static inline uint64_t lw_checksum_rotl(uint64_t x, unsigned r)
{
	return x << r | x >> (64 - r);
}

static inline uint64_t lw_checksum_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint64_t lw_checksum_step(uint64_t lane, uint64_t word)
{
	lane += word * LW_CHECKSUM_K2;
	return lw_checksum_rotl(lane, 31) * LW_CHECKSUM_K1;
}

/* The hash of [p, p + len) continuing from seed (0 for a first hash). */
static inline uint64_t lw_checksum(uint64_t seed, const uint8_t *p, size_t len)
{
	uint64_t a = seed + LW_CHECKSUM_K1, b = seed ^ LW_CHECKSUM_K2;
	uint64_t c = seed - LW_CHECKSUM_K1, d = ~seed;
	uint64_t h;
	size_t n = len;

	for (; n >= 32; n -= 32, p += 32) {
		a = lw_checksum_step(a, lw_checksum_le64(p));
		b = lw_checksum_step(b, lw_checksum_le64(p + 8));
		c = lw_checksum_step(c, lw_checksum_le64(p + 16));
		d = lw_checksum_step(d, lw_checksum_le64(p + 24));
	}
	h = lw_checksum_rotl(a, 1) + lw_checksum_rotl(b, 7) +
	    lw_checksum_rotl(c, 12) + lw_checksum_rotl(d, 18) + (uint64_t)len;
	for (; n >= 8; n -= 8, p += 8)
		h = lw_checksum_step(h, lw_checksum_le64(p));
	for (; n; n--, p++)
		h = lw_checksum_step(h, *p);
	/* The final mix: every bit of h moves every bit of the result. */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* Writes the CHECKSUM record of a block of len bytes whose chained hash
 * is hash at p (LW_CHECKSUM_RECORD_SIZE bytes). */
static inline void lw_checksum_record(uint8_t *p, uint32_t len, uint64_t hash)
{
	p[0] = LW_REC_CHECKSUM;
	p[1] = LW_CHECKSUM_PAYLOAD;
	for (unsigned i = 0; i < 4; i++)
		p[2 + i] = (uint8_t)(len >> (8 * i));
	for (unsigned i = 0; i < 8; i++)
		p[6 + i] = (uint8_t)(hash >> (8 * i));
}

#endif
