/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the trace reader and the model, linked directly:
 *  - the live-allocation hash table against a plain reference, through a
 *    long random mix of allocations, frees, reused addresses and unknown
 *    frees (resizes and backward-shift deletion included);
 *  - every prefix of a valid trace reads as a truncated trace, never as an
 *    error, and reads more events the longer it is;
 *  - random corruption is reported as an error or read, never crashes;
 *  - varint edge cases.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lw-test.h"
#include "model.h"
#include "trace-builder.h"
#include "trace-reader.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
	return lw_test_rng(&rng_state);
}

enum { POOL = 5000, STACKS = 8 };

static void check_totals(const struct lw_model *m, const bool *live,
			 const uint64_t *sizes)
{
	uint64_t bytes = 0, count = 0, site_count = 0, site_bytes = 0;

	for (unsigned i = 0; i < POOL; i++) {
		if (live[i]) {
			bytes += sizes[i];
			count++;
		}
	}
	for (uint32_t i = 0; i < m->sites.count; i++) {
		site_count += m->sites.items[i].totals.live_count;
		site_bytes += m->sites.items[i].totals.live_bytes;
	}
	REQUIRE(m->live.used == count);
	REQUIRE(lw_model_device_live_bytes(m) == bytes);
	REQUIRE(lw_model_device_live_count(m) == count);
	REQUIRE(site_count == count && site_bytes == bytes);
	REQUIRE(m->peak.bytes >= bytes);
}

static void test_live_table(void)
{
	static bool live[POOL];
	static uint64_t sizes[POOL], addrs[POOL];
	const struct lw_trace_ops *ops = &lw_model_ops;
	uint64_t frame = 0x401000, unknown = 0, reused = 0;
	struct lw_model m;

	REQUIRE(lw_model_init(&m) == 0);
	for (uint64_t id = 1; id <= STACKS; id++)
		REQUIRE(ops->stack(&m, id, &frame, 1) == 0);
	for (unsigned i = 0; i < POOL; i++) {
		/* Clustered, aligned addresses, as a CUDA allocator gives;
		 * a few that differ only in high bits. */
		addrs[i] = i % 3 ? 0x7f0000000000 + i * 0x200ull
				 : ((uint64_t)i << 40) + 0x100;
	}
	addrs[7] = 0; /* address 0 is a valid key */
	for (unsigned op = 0; op < 400000; op++) {
		uint64_t r = rng();
		unsigned i = (unsigned)(r % POOL);
		/* Phases of filling and draining, so that the table grows,
		 * then empties with long probe runs to repair. */
		bool filling = (op / 50000) % 2 == 0;
		unsigned kind = r >> 60 & 1 ? LW_MEM_DEVICE : LW_MEM_MANAGED;

		if (!live[i]) {
			if (filling || r >> 32 & 1) {
				sizes[i] = 1 + (r >> 8) % 100000;
				REQUIRE(ops->alloc(&m, kind, addrs[i], sizes[i],
						 1 + (r >> 16) % STACKS) == 0);
				live[i] = true;
			} else {
				REQUIRE(ops->free(&m, addrs[i]) == 0);
				unknown += addrs[i] != 0;
			}
		} else if ((r >> 20) % 50 == 0) {
			sizes[i] = 1 + (r >> 8) % 100000;
			REQUIRE(ops->alloc(&m, kind, addrs[i], sizes[i], 0) == 0);
			reused++;
		} else if (!filling || (r >> 24) % 4 == 0) {
			REQUIRE(ops->free(&m, addrs[i]) == 0);
			live[i] = false;
		}
		if (op % 997 == 0)
			check_totals(&m, live, sizes);
	}
	check_totals(&m, live, sizes);
	REQUIRE(m.counts.unknown_frees == unknown);
	REQUIRE(m.counts.reused_live_addresses == reused);
	for (unsigned i = 0; i < POOL; i++) {
		if (live[i]) {
			REQUIRE(ops->free(&m, addrs[i]) == 0);
			live[i] = false;
		}
	}
	check_totals(&m, live, sizes);
	REQUIRE(m.counts.unknown_frees == unknown);
	REQUIRE(m.live.used == 0);
	lw_model_fini(&m);
}

static void build_sample(struct out *o)
{
	static const uint64_t frames[] = { 0x401000, 0x7f0000001000, 0x10 };
	static const char cmdline[] = "prog\0arg";
	static const struct py_frame py[] = { { 1, 7, 0 }, { 1, -1, 1 } };
	static const unsigned evals[] = { 1 };

	std_header(o);
	rec_info(o, "cmdline", cmdline, sizeof(cmdline) - 1);
	rec_module(o, 0x7f0000000000, 0x7f0000000000, 0x7f0000100000,
		   "/lib/x.so");
	rec_string(o, 1, "train");
	rec_pycode(o, 1, 1, 1, 3);
	rec_stack(o, 1, frames, 3);
	rec_pystack(o, 1, py, 2, evals, 1);
	rec_stack(o, 2, frames + 1, 2);
	rec_hot1(o, LW_REC_THREAD, 99);
	rec_context(o, LW_API_CUDA_MALLOC_ASYNC, 0, 0xdeadbeef);
	for (unsigned i = 0; i < 20; i++) {
		rec_phase_begin(o, 1);
		rec_alloc(o, LW_MEM_DEVICE, 0x7f0000000000 + i * 0x10000ull,
			  1000000 + i, 1 + i % 2);
		rec_alloc(o, LW_MEM_PINNED_HOST, 0x600000 + i * 0x100ull, 300, 0);
		if (i % 3)
			rec_free(o, 0x7f0000000000 + i * 0x10000ull);
		rec_hot1(o, LW_REC_TIME, 123456789);
		rec_simple(o, LW_REC_PHASE_END);
		rec_simple(o, LW_REC_STEP);
	}
	rec_mark(o, LW_MARK_PROGRAM_END);
	rec_free(o, 0x600000);
	rec_warning(o, "w");
	rec_dropped(o, 1);
	rec_end(o, 1);
}

static int read_model(const uint8_t *buf, size_t len, struct lw_model *m,
		      struct lw_trace_result *res)
{
	REQUIRE(lw_model_init(m) == 0);
	return lw_trace_read(buf, len, &lw_model_ops, m, res);
}

static void test_prefixes(void)
{
	struct out o = { 0 };
	struct lw_trace_result res;
	struct lw_model m;
	uint64_t last_events = 0;

	build_sample(&o);
	REQUIRE(read_model(o.data, 0, &m, &res) == -ENODATA);
	lw_model_fini(&m);
	for (size_t len = 1; len < LW_TRACE_HEADER_SIZE; len++) {
		REQUIRE(read_model(o.data, len, &m, &res) == -EINVAL);
		REQUIRE(res.message[0]);
		lw_model_fini(&m);
	}
	for (size_t len = LW_TRACE_HEADER_SIZE; len <= o.len; len++) {
		int rc = read_model(o.data, len, &m, &res);

		if (rc != 0)
			fprintf(stderr, "prefix %zu: %s\n", len, res.message);
		REQUIRE(rc == 0);
		REQUIRE(res.truncated == (len < o.len));
		REQUIRE(res.complete == (len == o.len));
		REQUIRE(res.end_offset <= len);
		REQUIRE(m.counts.events >= last_events);
		last_events = m.counts.events;
		lw_model_fini(&m);
	}
	REQUIRE(last_events == o.events);
	free(o.data);
}

static void test_corruption(void)
{
	struct out o = { 0 };
	struct lw_trace_result res;
	struct lw_model m;
	uint8_t *copy;
	unsigned errors = 0, readable = 0;

	build_sample(&o);
	copy = malloc(o.len);
	REQUIRE(copy);
	for (unsigned iter = 0; iter < 20000; iter++) {
		unsigned flips = 1 + (unsigned)(rng() % 3);
		int rc;

		memcpy(copy, o.data, o.len);
		for (unsigned f = 0; f < flips; f++)
			copy[rng() % o.len] ^= (uint8_t)(1u << (rng() % 8));
		rc = read_model(copy, o.len - (size_t)(rng() % 4), &m, &res);
		REQUIRE(rc == 0 || rc == -EINVAL || rc == -EBADMSG ||
		      rc == -EPROTONOSUPPORT);
		REQUIRE(rc == 0 || res.message[0]);
		if (rc == 0)
			readable++;
		else
			errors++;
		lw_model_fini(&m);
	}
	REQUIRE(errors > 0 && readable > 0);
	free(copy);
	free(o.data);
}

static void test_varints(void)
{
	struct out o = { 0 };
	struct lw_trace_result res;
	struct lw_model m;
	size_t cut;

	/* The largest size there is: a ten-byte varint. */
	std_header(&o);
	rec_alloc(&o, LW_MEM_DEVICE, UINT64_MAX, UINT64_MAX, 0);
	rec_free(&o, 0);
	rec_free(&o, UINT64_MAX);
	rec_end(&o, 0);
	REQUIRE(read_model(o.data, o.len, &m, &res) == 0);
	REQUIRE(res.complete && !res.truncated);
	REQUIRE(m.kinds[LW_MEM_DEVICE].bytes_allocated == UINT64_MAX);
	REQUIRE(m.live.used == 0 && m.counts.unknown_frees == 0);
	lw_model_fini(&m);

	/* An eleventh byte is malformed, not truncated. */
	o.len = LW_TRACE_HEADER_SIZE;
	put_u8(&o, LW_REC_FREE);
	for (unsigned i = 0; i < 10; i++)
		put_u8(&o, 0xff);
	put_u8(&o, 0x01);
	REQUIRE(read_model(o.data, o.len, &m, &res) == -EBADMSG);
	REQUIRE(strstr(res.message, "offset 32: malformed varint"));
	lw_model_fini(&m);
	/* Bits above 64 in the tenth byte too. */
	o.len = LW_TRACE_HEADER_SIZE + 1 + 9;
	put_u8(&o, 0x02);
	REQUIRE(read_model(o.data, o.len, &m, &res) == -EBADMSG);
	lw_model_fini(&m);
	/* But a varint cut by the end of the file is truncation. */
	cut = LW_TRACE_HEADER_SIZE + 1 + 5;
	REQUIRE(read_model(o.data, cut, &m, &res) == 0);
	REQUIRE(res.truncated && res.end_offset == LW_TRACE_HEADER_SIZE);
	lw_model_fini(&m);
	free(o.data);
}

static void test_python_merge(void)
{
	static const uint64_t native[] = { 0x10, 0x20, 0x30, 0x40 };
	static const struct py_frame py[] = {
		{ 1, 1, 1 }, { 2, 2, 0 }, { 3, 3, 1 },
	};
	static const unsigned evals[] = { 1, 2 }, bad_evals[] = { 3 };
	struct lw_trace_result res;
	struct out o = { 0 };
	struct lw_frame *f;
	struct lw_model m;
	size_t n;

	std_header(&o);
	rec_stack(&o, 1, native, 4);
	rec_pystack(&o, 1, py, 3, evals, 2);
	rec_stack(&o, 2, native, 4);
	rec_pystack(&o, 2, py, 3, bad_evals, 1);
	rec_end(&o, 0);
	REQUIRE(read_model(o.data, o.len, &m, &res) == 0);

	/* 0x10, py1 (for the eval frame 0x20), py2 py3 (for 0x30), 0x40 */
	REQUIRE(lw_model_stack(&m, 1, &f, &n) == 0 && n == 5);
	REQUIRE(!f[0].python && f[0].address == 0x10);
	REQUIRE(f[1].python && f[1].py->code_id == 1);
	REQUIRE(f[2].python && f[2].py->code_id == 2 && f[2].py->line == 2);
	REQUIRE(f[3].python && f[3].py->code_id == 3);
	REQUIRE(!f[4].python && f[4].address == 0x40);
	free(f);
	/* Two activations, one evaluation frame: Python innermost. */
	REQUIRE(lw_model_stack(&m, 2, &f, &n) == 0 && n == 7);
	REQUIRE(f[0].python && f[1].python && f[2].python && !f[3].python);
	REQUIRE(f[3].address == 0x10 && f[6].address == 0x40);
	free(f);
	REQUIRE(lw_model_stack(&m, 0, &f, &n) == 0 && n == 0 && !f);
	lw_model_fini(&m);
	free(o.data);
}

int main(void)
{
	test_live_table();
	test_prefixes();
	test_corruption();
	test_varints();
	test_python_merge();
	printf("ok\n");
	return 0;
}
