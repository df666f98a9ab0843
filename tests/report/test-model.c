/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the trace reader and the model, linked directly:
 *  - the live-allocation hash table against a plain reference, through a
 *    long random mix of allocations, frees, reused addresses and unknown
 *    frees (resizes and backward-shift deletion included);
 *  - every prefix of a valid trace reads as a truncated trace, never as an
 *    error, and reads more events the longer it is;
 *  - random corruption is reported as an error or read, never crashes;
 *  - varint edge cases;
 *  - PyTorch's pool: the memory account of a step, and blocks held back.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lw-test.h"
#include "model.h"
#include "torch.h"
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

/* A SHORT_LIVED record: its figures, then changes of (stack, count,
 * bytes, gc_count, gc_bytes), all device memory from cudaMalloc. */
struct change {
	uint64_t stack, count, bytes, gc_count, gc_bytes;
	unsigned kind;
};

static void rec_short_lived(struct out *o, uint64_t peak, uint64_t after_peak,
			    uint64_t gc_passes, bool summed,
			    const struct change *c, size_t n)
{
	struct out p = { 0 };
	uint64_t prev = 0;

	put_varint(&p, peak);
	put_varint(&p, after_peak);
	put_varint(&p, 0); /* torch_peak */
	put_varint(&p, gc_passes);
	put_varint(&p, summed);
	put_varint(&p, n);
	for (size_t i = 0; i < n; i++) {
		put_zvarint(&p, (int64_t)(c[i].stack - prev));
		prev = c[i].stack;
		put_varint(&p, c[i].kind ? c[i].kind : LW_MEM_DEVICE);
		put_varint(&p, LW_API_CUDA_MALLOC);
		put_zvarint(&p, -1);
		put_varint(&p, 0);
		put_varint(&p, c[i].count);
		put_varint(&p, c[i].bytes);
		put_varint(&p, c[i].gc_count);
		put_varint(&p, c[i].gc_bytes);
	}
	rec_ext(o, LW_REC_SHORT_LIVED, &p);
	free(p.data);
}

/* Up to the first step's end: two stacks, in full. */
static void short_lived_start(struct out *o)
{
	static const uint64_t s1[] = { 0x1000 }, s2[] = { 0x2000 };

	std_header(o);
	rec_stack(o, 1, s1, 1);
	rec_stack(o, 2, s2, 1);
	rec_context(o, LW_API_CUDA_MALLOC, -1, 0);
	rec_alloc(o, LW_MEM_DEVICE, 0xa000, 100, 1);	/* weights */
	rec_alloc(o, LW_MEM_DEVICE, 0xb000, 50, 1);
	rec_free(o, 0xb000);
	rec_alloc(o, LW_MEM_DEVICE, 0xc000, 1000, 2);	/* into step 1 */
	rec_simple(o, LW_REC_STEP);
}

/*
 * SHORT_LIVED read as the specification says (common/lw-format.h): each
 * summed record adds the changes in force per stack, a count of 0 drops
 * one, a record that is not summed adds nothing, the interval's peak and
 * what its later records freed lingered there; bad records are refused.
 */
static void test_short_lived(void)
{
	struct out o = { 0 };
	struct lw_trace_result res;
	struct lw_model m;
	const struct lw_site *s1, *s2;
	struct change one = { 1, 3, 300, 1, 100, 0 };
	struct change drop = { 1, 0, 0, 0, 0, 0 };
	struct change two = { 2, 2, 20, 0, 0, 0 };

	for (unsigned after_peak = 0; after_peak < 2; after_peak++) {
		o.len = 0;
		o.prev_addr = o.events = 0;
		short_lived_start(&o);
		/* Step 1: a survivor, the older block freed, three summed. */
		rec_alloc(&o, LW_MEM_DEVICE, 0xd000, 500, 2);
		rec_free(&o, 0xc000);
		rec_short_lived(&o, 5000, after_peak, 2, true, &one, 1);
		rec_simple(&o, LW_REC_STEP);
		/* Step 2: the same three again, no change written. */
		rec_free(&o, 0xd000);
		rec_short_lived(&o, 700, 0, 0, true, NULL, 0);
		rec_simple(&o, LW_REC_STEP);
		/* Step 3: not summed; step 4: stack 1 dropped. */
		rec_short_lived(&o, 100, 0, 0, false, NULL, 0);
		rec_simple(&o, LW_REC_STEP);
		rec_short_lived(&o, 100, 0, 0, true, &drop, 1);
		rec_simple(&o, LW_REC_STEP);
		/* Step 5: a change carried by a record of its own. */
		rec_short_lived(&o, 0, 0, 0, false, &two, 1);
		rec_short_lived(&o, 120, 0, 0, true, NULL, 0);
		rec_simple(&o, LW_REC_STEP);
		for (unsigned t = 0; t < LW_LINGER_STEPS; t++)
			rec_simple(&o, LW_REC_STEP);
		rec_end(&o, 0);

		REQUIRE(read_model(o.data, o.len, &m, &res) == 0 &&
			res.complete);
		REQUIRE(lw_model_finish(&m) == 0);
		REQUIRE(m.sites.count == 2);
		s1 = &m.sites.items[0];
		s2 = &m.sites.items[1];
		REQUIRE(s1->stack_id == 1 && s2->stack_id == 2);
		REQUIRE(s1->totals.allocations == 2 + 3 + 3);
		REQUIRE(s1->totals.bytes_allocated == 150 + 300 + 300);
		REQUIRE(s1->frees == 1 + 3 + 3 && s1->lifetime_total == 0);
		REQUIRE(s1->gc_frees == 2 && s1->gc_freed_bytes == 200);
		REQUIRE(s1->last_birth_step == 2);
		REQUIRE(s1->totals.live_count == 1 &&
			s1->totals.live_bytes == 100);
		REQUIRE(s2->totals.allocations == 2 + 2);
		REQUIRE(s2->frees == 2 + 2 && s2->last_birth_step == 5);
		REQUIRE(s2->totals.live_count == 0);
		REQUIRE(m.counts.allocations == 12 && m.counts.frees == 11);
		REQUIRE(m.counts.events == 12 + 11 + 6 + LW_LINGER_STEPS);
		REQUIRE(m.counts.gc_passes == 2 && m.counts.gc_frees == 2);
		REQUIRE(m.contexts.items[m.contexts.current].totals.allocations
			== 12);
		REQUIRE(m.short_lived.records == 6);
		REQUIRE(m.short_lived.allocations == 8);
		/* Step 1's peak, the run's; the block made in step 0 and
		 * freed in step 1 lingered there when its FREE came after. */
		REQUIRE(m.peak.bytes == 5000 && m.peak.step == 1);
		REQUIRE(m.points.items[0].peak_bytes == 1100);
		REQUIRE(m.points.items[1].peak_bytes == 5000);
		REQUIRE(m.points.items[2].peak_bytes == 700);
		REQUIRE(m.points.items[1].lingering_bytes ==
			(after_peak ? 1000 : 0));
		REQUIRE(m.peak.worst.step == 1 &&
			m.peak.worst.peak_bytes == 5000);
		REQUIRE(m.peak.worst.bytes == (after_peak ? 1000 : 0));
		lw_model_fini(&m);
	}

	/* Refused: an undefined stack, an unknown kind, more frees in the
	 * collector's passes than allocations, more changes than the
	 * record holds, a change cut by the record's end. */
	for (unsigned bad = 0; bad < 5; bad++) {
		struct change c = { 1, 3, 300, 1, 100, 0 };
		size_t at;

		o.len = 0;
		o.prev_addr = o.events = 0;
		short_lived_start(&o);
		if (bad == 0)
			c.stack = 3;
		if (bad == 1)
			c.kind = LW_MEM_KIND_MAX + 1;
		if (bad == 2)
			c.gc_count = 4;
		at = o.len;
		rec_short_lived(&o, 5000, 0, 0, true, &c, 1);
		if (bad == 3)
			o.data[at + 8] = 3; /* the change count */
		if (bad == 4)
			o.data[at + 1] -= 1; /* the payload's length */
		rec_simple(&o, LW_REC_STEP);
		rec_end(&o, 0);
		REQUIRE(read_model(o.data, o.len, &m, &res) == -EBADMSG);
		REQUIRE(strstr(res.message, "corrupt record at offset"));
		REQUIRE(res.error_offset == at);
		/* Nothing of the record was taken. */
		REQUIRE(m.short_lived.count == 0 && m.counts.allocations == 3);
		lw_model_fini(&m);
	}
	free(o.data);
}

/* A SEGMENT record: PyTorch's pool reserved size bytes at key. */
static void rec_segment(struct out *o, uint64_t key, uint64_t size)
{
	struct out p = { 0 };

	put_varint(&p, key);
	put_varint(&p, size);
	put_zvarint(&p, 0);
	rec_ext(o, LW_REC_SEGMENT, &p);
	free(p.data);
}

/*
 * The memory account: a step's peak of PyTorch's blocks, the pool's free
 * bytes then, memory outside the pool (a raw cudaMalloc), the most in use;
 * and stranding: a new segment for a block of a size freed and not reused
 * since is counted, a block reused at its address is not.
 */
static void test_pool_account(void)
{
	static const uint64_t s1[] = { 0x1000 }, s2[] = { 0x2000 };
	const uint64_t mib = 1 << 20;
	struct out o = { 0 };
	struct lw_trace_result res;
	struct lw_model m;
	struct lw_pool pool;
	const struct lw_step_point *p;

	std_header(&o);
	rec_stack(&o, 1, s1, 1);
	rec_stack(&o, 2, s2, 1);
	/* Outside the pool: 8 MiB of a library's own cudaMalloc. */
	rec_context(&o, LW_API_CUDA_MALLOC, -1, 0);
	rec_alloc(&o, LW_MEM_DEVICE, 0x900000000, 8 * mib, 2);
	rec_context(&o, LW_API_TORCH_BLOCK, 0, 0);
	/* Step 1: a 20 MiB segment, two blocks of it, both freed. */
	rec_segment(&o, 0x100000000, 20 * mib);
	rec_alloc(&o, LW_MEM_DEVICE, 0x100000000, 4 * mib, 1);
	rec_alloc(&o, LW_MEM_DEVICE, 0x100400000, 6 * mib, 1);
	rec_free(&o, 0x100000000);
	rec_free(&o, 0x100400000);
	rec_simple(&o, LW_REC_STEP);
	/* Step 2: the 4 MiB block reused where it was: no miss. */
	rec_alloc(&o, LW_MEM_DEVICE, 0x100000000, 4 * mib, 1);
	rec_free(&o, 0x100000000);
	rec_simple(&o, LW_REC_STEP);
	/* Steps 3 and 4: a 30 MiB block freed, then a new segment for the
	 * same size while it is not reused, twice: held back. */
	for (uint64_t i = 0; i < 2; i++) {
		uint64_t old = 0x200000000 + i * 0x10000000;

		rec_segment(&o, old, 30 * mib);
		rec_alloc(&o, LW_MEM_DEVICE, old, 30 * mib, 1);
		rec_free(&o, old);
		rec_segment(&o, old + 0x8000000, 30 * mib);
		rec_alloc(&o, LW_MEM_DEVICE, old + 0x8000000, 30 * mib, 1);
		rec_free(&o, old + 0x8000000);
		rec_simple(&o, LW_REC_STEP);
	}
	rec_end(&o, 0);

	REQUIRE(read_model(o.data, o.len, &m, &res) == 0 && res.complete);
	REQUIRE(lw_model_finish(&m) == 0);
	REQUIRE(m.points.count == 4);
	p = &m.points.items[0];
	REQUIRE(p->peak_allocated_bytes == 10 * mib);
	REQUIRE(p->free_at_peak_bytes == 10 * mib);
	REQUIRE(p->outside_bytes == 8 * mib && p->peak_outside_bytes == 8 * mib);
	REQUIRE(p->peak_in_use_bytes == 28 * mib);
	REQUIRE(p->max_request_bytes == 6 * mib);
	p = &m.points.items[1];
	REQUIRE(p->peak_allocated_bytes == 4 * mib &&
		p->free_at_peak_bytes == 16 * mib);
	REQUIRE(p->max_request_bytes == 4 * mib);
	p = &m.points.items[3];
	REQUIRE(p->peak_reserved_bytes == 140 * mib);
	REQUIRE(p->peak_in_use_bytes == 148 * mib);
	/* Every 30 MiB segment after the first was made while a freed
	 * 30 MiB block waited: three misses, 30 MiB each. */
	REQUIRE(m.torch.stranded_misses == 3);
	REQUIRE(m.torch.stranded_bytes == 90 * mib);
	REQUIRE(m.torch.peak_outside_bytes == 8 * mib);
	REQUIRE(m.torch.peak_in_use_bytes == 148 * mib);
	/* The pool's verdict: held back blocks, named so, whatever the run's
	 * tensors do; not when the run's tensors grow. */
	REQUIRE(lw_pool_judge(&m, 1, LW_VERDICT_STABLE, &pool) == 0);
	REQUIRE(pool.seen && pool.fragmented && pool.stranded);
	REQUIRE(pool.pattern == LW_POOL_PATTERN_STRANDED);
	REQUIRE(pool.stranded_misses == 3 && pool.stranded_bytes == 90 * mib);
	REQUIRE(strstr(lw_pool_fix(&pool), "record_stream") &&
		strstr(lw_pool_pattern_text(&pool), "record_stream"));
	REQUIRE(pool.peak_reserved == 140 * mib && pool.max_request == 30 * mib);
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
	test_short_lived();
	test_pool_account();
	printf("ok\n");
	return 0;
}
