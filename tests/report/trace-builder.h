/* SPDX-License-Identifier: MIT */
/*
 * Helpers that write leakwatch traces (common/lw-format.h) into memory, for
 * gen-trace, the unit tests and the benchmark. Deliberately independent of
 * report/: they encode the format from its specification alone.
 */
#ifndef LW_TRACE_BUILDER_H
#define LW_TRACE_BUILDER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lw-checksum.h"
#include "lw-format.h"

#define PID 1234
#define START_NS 1700000000000000000ull
#define MiB (1024ull * 1024)

struct out {
	uint8_t *data;
	size_t len, capacity;
	uint64_t prev_addr;
	uint64_t events;	/* ALLOC, FREE, STEP, PHASE_BEGIN, PHASE_END */
	uint64_t phase_begins;	/* not among the events END counts */
	/* A checksummed trace (checksummed_header()): where the block
	 * being written starts, and the chained hash of the last one. */
	size_t block_start;
	uint64_t chain;
};

static inline void reserve(struct out *o, size_t n)
{
	if (o->len + n <= o->capacity)
		return;
	while (o->len + n > o->capacity)
		o->capacity = o->capacity ? o->capacity * 2 : 4096;
	o->data = realloc(o->data, o->capacity);
	if (!o->data) {
		perror("trace-builder");
		exit(1);
	}
}

static inline void put_u8(struct out *o, uint8_t v)
{
	reserve(o, 1);
	o->data[o->len++] = v;
}

static inline void put_bytes(struct out *o, const void *p, size_t n)
{
	reserve(o, n);
	if (n)
		memcpy(o->data + o->len, p, n);
	o->len += n;
}

static inline void put_varint(struct out *o, uint64_t v)
{
	reserve(o, LW_VARINT_MAX);
	o->len += lw_varint_put(o->data + o->len, v);
}

static inline void put_zvarint(struct out *o, int64_t v)
{
	put_varint(o, lw_zigzag_encode(v));
}

static inline void put_string(struct out *o, const void *p, size_t n)
{
	put_varint(o, n);
	put_bytes(o, p, n);
}

static inline void put_le(struct out *o, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		put_u8(o, (uint8_t)(v >> (8 * i)));
}

static inline void header(struct out *o, const char *magic, uint16_t version,
			  uint16_t size)
{
	put_bytes(o, magic, LW_TRACE_MAGIC_SIZE);
	put_le(o, version, 2);
	put_le(o, size, 2);
	put_le(o, 0, 4);
	put_le(o, START_NS, 8);
	put_le(o, PID, 4);
	put_le(o, 0, 4);
	for (unsigned i = LW_TRACE_HEADER_SIZE; i < size; i++)
		put_u8(o, 0);
}

static inline void std_header(struct out *o)
{
	header(o, LW_TRACE_MAGIC, LW_TRACE_VERSION, LW_TRACE_HEADER_SIZE);
}

/* The header of a trace whose blocks carry checksums: records follow, each
 * block ended by seal_block(), as the shim writes them. */
static inline void checksummed_header(struct out *o)
{
	std_header(o);
	o->data[12] |= LW_TRACE_FLAG_CHECKSUMS;
	o->chain = lw_checksum(0, o->data, LW_TRACE_HEADER_SIZE);
	o->block_start = o->len;
}

/* Puts the CHECKSUM record of the records written since the last block in
 * front of them (lw-format.h). */
static inline void seal_block(struct out *o)
{
	size_t len = o->len - o->block_start;
	uint8_t *block;

	reserve(o, LW_CHECKSUM_RECORD_SIZE);
	block = o->data + o->block_start;
	o->chain = lw_checksum(o->chain, block, len);
	memmove(block + LW_CHECKSUM_RECORD_SIZE, block, len);
	lw_checksum_record(block, (uint32_t)len, o->chain);
	o->len += LW_CHECKSUM_RECORD_SIZE;
	o->block_start = o->len;
}

static inline void rec_alloc(struct out *o, unsigned kind, uint64_t addr,
			     uint64_t size, uint64_t stack)
{
	put_u8(o, (uint8_t)(LW_REC_ALLOC_BASE + kind));
	put_zvarint(o, (int64_t)(addr - o->prev_addr));
	put_varint(o, size);
	put_varint(o, stack);
	o->prev_addr = addr;
	o->events++;
}

static inline void rec_free(struct out *o, uint64_t addr)
{
	put_u8(o, LW_REC_FREE);
	put_zvarint(o, (int64_t)(addr - o->prev_addr));
	o->prev_addr = addr;
	o->events++;
}

static inline void rec_simple(struct out *o, uint8_t tag)
{
	put_u8(o, tag);
	o->events++;
}

static inline void rec_hot1(struct out *o, uint8_t tag, uint64_t v)
{
	put_u8(o, tag);
	put_varint(o, v);
}

static inline void rec_context(struct out *o, uint64_t api, int64_t device,
			       uint64_t stream)
{
	put_u8(o, LW_REC_CONTEXT);
	put_varint(o, api);
	put_zvarint(o, device);
	put_varint(o, stream);
}

/* An extension record around the payload p. */
static inline void rec_ext(struct out *o, uint8_t tag, const struct out *p)
{
	put_u8(o, tag);
	put_varint(o, p->len);
	put_bytes(o, p->data, p->len);
}

static inline void rec_stack(struct out *o, uint64_t id, const uint64_t *frames,
			     unsigned n)
{
	struct out p = { 0 };
	uint64_t prev = 0;

	put_varint(&p, id);
	put_varint(&p, n);
	for (unsigned i = 0; i < n; i++) {
		put_zvarint(&p, (int64_t)(frames[i] - prev));
		prev = frames[i];
	}
	rec_ext(o, LW_REC_STACK, &p);
	free(p.data);
}

static inline void rec_module(struct out *o, uint64_t bias, uint64_t start,
			      uint64_t end, const char *path)
{
	struct out p = { 0 };

	put_varint(&p, bias);
	put_varint(&p, start);
	put_varint(&p, end);
	put_string(&p, path, strlen(path));
	rec_ext(o, LW_REC_MODULE, &p);
	free(p.data);
}

static inline void rec_string(struct out *o, uint64_t id, const char *text)
{
	struct out p = { 0 };

	put_varint(&p, id);
	put_bytes(&p, text, strlen(text));
	rec_ext(o, LW_REC_STRING, &p);
	free(p.data);
}

static inline void rec_phase_begin(struct out *o, uint64_t string_id)
{
	struct out p = { 0 };

	put_varint(&p, string_id);
	rec_ext(o, LW_REC_PHASE_BEGIN, &p);
	free(p.data);
	o->events++;
	o->phase_begins++;
}

static inline void rec_info(struct out *o, const char *key, const void *value,
			    size_t len)
{
	struct out p = { 0 };

	put_string(&p, key, strlen(key));
	put_string(&p, value, len);
	rec_ext(o, LW_REC_INFO, &p);
	free(p.data);
}

static inline void rec_info_str(struct out *o, const char *key, const char *value)
{
	rec_info(o, key, value, strlen(value));
}

static inline void rec_warning(struct out *o, const char *text)
{
	struct out p = { 0 };

	put_bytes(&p, text, strlen(text));
	rec_ext(o, LW_REC_WARNING, &p);
	free(p.data);
}

static inline void rec_end(struct out *o, uint64_t dropped)
{
	struct out p = { 0 };

	put_varint(&p, o->events - o->phase_begins);
	put_varint(&p, dropped);
	rec_ext(o, LW_REC_END, &p);
	free(p.data);
}

static inline void rec_dropped(struct out *o, uint64_t count)
{
	struct out p = { 0 };

	put_varint(&p, count);
	rec_ext(o, LW_REC_DROPPED, &p);
	free(p.data);
}

static inline void rec_pycode(struct out *o, uint64_t id, uint64_t file,
			      uint64_t name, uint64_t first_line)
{
	struct out p = { 0 };

	put_varint(&p, id);
	put_varint(&p, file);
	put_varint(&p, name);
	put_varint(&p, first_line);
	rec_ext(o, LW_REC_PYCODE, &p);
	free(p.data);
}

/* Python frames: code ids, lines (-1 unknown) and entry flags. */
struct py_frame {
	uint64_t code;
	int64_t line;
	int entry;
};

static inline void rec_pystack(struct out *o, uint64_t stack,
			       const struct py_frame *frames, unsigned n,
			       const unsigned *evals, unsigned nevals)
{
	struct out p = { 0 };

	put_varint(&p, stack);
	put_varint(&p, n);
	for (unsigned i = 0; i < n; i++) {
		put_varint(&p, frames[i].code);
		put_varint(&p, (uint64_t)(frames[i].line + 1) << 1 |
				       (frames[i].entry ? 1 : 0));
	}
	put_varint(&p, nevals);
	for (unsigned i = 0; i < nevals; i++)
		put_varint(&p, evals[i]);
	rec_ext(o, LW_REC_PYSTACK, &p);
	free(p.data);
}

/* PYPATH: a fact of the interpreter (kind, path and name string ids). */
static inline void rec_pypath(struct out *o, uint64_t kind, uint64_t path,
			      uint64_t name)
{
	struct out p = { 0 };

	put_varint(&p, kind);
	put_varint(&p, path);
	put_varint(&p, name);
	rec_ext(o, LW_REC_PYPATH, &p);
	free(p.data);
}

static inline void rec_mark(struct out *o, uint64_t mark)
{
	struct out p = { 0 };

	put_varint(&p, mark);
	rec_ext(o, LW_REC_MARK, &p);
	free(p.data);
}

/*
 * A long, busy trace for the benchmark: a pool of slots (about half of them
 * live at any time) whose buffers are allocated and freed in a
 * pseudo-random order (xorshift), a STEP every 1000 events, 256 stacks of 8
 * to 23 frames.
 */
static inline void trace_build_large(struct out *o, uint64_t events,
				     unsigned slots)
{
	enum { STACKS = 256 };
	uint64_t *slot_addr = calloc(slots ? slots : 1, sizeof(*slot_addr));
	uint64_t frames[32], x = 88172645463325252ull, next = 0x7f0000000000;

	if (!slot_addr) {
		perror("trace-builder");
		exit(1);
	}

	std_header(o);
	for (unsigned s = 1; s <= STACKS; s++) {
		unsigned n = 8 + s % 16;

		for (unsigned f = 0; f < n; f++)
			frames[f] = 0x400000 + s * 0x1000 + f * 0x40;
		rec_stack(o, s, frames, n);
	}
	while (o->events < events) {
		unsigned slot;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		slot = (unsigned)(x % (slots ? slots : 1));
		if (slot_addr[slot]) {
			rec_free(o, slot_addr[slot]);
			slot_addr[slot] = 0;
		} else {
			slot_addr[slot] = next;
			rec_alloc(o, LW_MEM_DEVICE, next, 512 + (x >> 40) % 65536,
				  1 + (x >> 20) % STACKS);
			next += 0x20000;
		}
		if (o->events % 1000 == 0)
			rec_simple(o, LW_REC_STEP);
	}
	rec_end(o, 0);
	free(slot_addr);
}

#endif
