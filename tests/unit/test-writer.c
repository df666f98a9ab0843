/* SPDX-License-Identifier: MIT */
/*
 * The shim's trace writer (interpose/trace/writer.c) against the report's reader
 * (report/read/trace-reader.c): every kind of record it writes reads back as
 * written, addresses delta-coded over many allocations included, the END
 * record counts the events, and each block carries a checksum that catches
 * any bit flipped in it.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-format.h"
#include "lw-test.h"
#include "trace-reader.h"
#include "writer.h"

#define ALLOCS 1000

static struct seen {
	uint32_t pid;
	uint64_t allocs, frees, steps, events_at_end;
	uint64_t addr[ALLOCS], size[ALLOCS];
	uint64_t api;
	int64_t device;
	uint64_t stream;
	uint64_t stack_id, stack_frames[4];
	uint32_t stack_count;
	char string[32];
	uint64_t string_id;
	char info_key[16], info_value[16];
	uint64_t tid;
	bool ended;
} seen;

static void copy(char *out, size_t size, struct lw_bytes b)
{
	size_t n = b.len < size - 1 ? b.len : size - 1;

	memcpy(out, b.data, n);
	out[n] = '\0';
}

static int on_header(void *ctx, const struct lw_trace_header *h)
{
	seen.pid = h->pid;
	return 0;
}

static int on_alloc(void *ctx, unsigned kind, uint64_t addr, uint64_t size,
		    uint64_t stack_id)
{
	if (seen.allocs < ALLOCS) {
		seen.addr[seen.allocs] = addr;
		seen.size[seen.allocs] = size;
	}
	seen.allocs++;
	CHECK(kind == LW_MEM_DEVICE && stack_id == 1);
	return 0;
}

static int on_free(void *ctx, uint64_t addr)
{
	CHECK_EQ_U64(addr, seen.addr[seen.frees]);
	seen.frees++;
	return 0;
}

static int on_step(void *ctx)
{
	seen.steps++;
	return 0;
}

static int on_context(void *ctx, uint64_t api, int64_t device, uint64_t stream)
{
	seen.api = api;
	seen.device = device;
	seen.stream = stream;
	return 0;
}

static int on_stack(void *ctx, uint64_t id, const uint64_t *frames,
		    uint32_t count)
{
	seen.stack_id = id;
	seen.stack_count = count;
	for (uint32_t i = 0; i < count && i < 4; i++)
		seen.stack_frames[i] = frames[i];
	return 0;
}

static int on_string(void *ctx, uint64_t id, struct lw_bytes text)
{
	seen.string_id = id;
	copy(seen.string, sizeof(seen.string), text);
	return 0;
}

static int on_info(void *ctx, struct lw_bytes key, struct lw_bytes value)
{
	copy(seen.info_key, sizeof(seen.info_key), key);
	copy(seen.info_value, sizeof(seen.info_value), value);
	return 0;
}

static int on_thread(void *ctx, uint64_t tid)
{
	seen.tid = tid;
	return 0;
}

static int on_end(void *ctx, uint64_t events, uint64_t dropped)
{
	seen.ended = true;
	seen.events_at_end = events;
	CHECK_EQ_U64(dropped, 0);
	return 0;
}

/*
 * One bit flipped anywhere in the trace is never read as the complete
 * trace: the read fails, stops at the damaged block, or stops short. A
 * trace without checksums reads most flipped bits as complete, with other
 * sizes, addresses or counts.
 */
static void check_every_flip(const uint8_t *trace, size_t len)
{
	static const struct lw_trace_ops none;
	struct lw_trace_result result;
	uint8_t *copy = malloc(len);
	size_t missed = 0;

	REQUIRE(copy);
	for (size_t i = 0; i < len; i++) {
		int rc;

		memcpy(copy, trace, len);
		copy[i] ^= (uint8_t)(1u << (i % 8));
		rc = lw_trace_read(copy, len, &none, NULL, &result);
		if (rc == 0 && result.complete && !result.damaged) {
			if (!missed++)
				lw_test_fail("a bit flipped at offset %zu reads "
					     "as the complete trace", i);
		}
		if (rc == 0 && result.damaged)
			CHECK(result.damaged_block >= 1 && result.message[0]);
	}
	CHECK_EQ_U64(missed, 0);
	free(copy);
}

int main(void)
{
	static struct lw_writer w;
	static const uintptr_t frames[] = { 0x401000, 0x402000, 0x7f0000003000 };
	char dir[] = "/tmp/lw-writer-XXXXXX", path[4096];
	uint64_t addr[ALLOCS];
	struct lw_trace_ops ops = {
		.header = on_header, .alloc = on_alloc, .free = on_free,
		.step = on_step, .context = on_context, .stack = on_stack,
		.string = on_string, .info = on_info, .thread = on_thread,
		.end = on_end,
	};
	struct lw_trace_result result;
	struct stat st;
	uint8_t *buf;
	int fd;

	REQUIRE(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.trace", dir);
	REQUIRE(lw_writer_open(&w, path, sizeof(path), 1, 4242) == 0);
	lw_writer_tag_u64(&w, LW_REC_THREAD, 77);
	lw_writer_info(&w, "exe", "/bin/x", 6);
	lw_writer_string(&w, 5, "epoch");
	lw_writer_stack(&w, 1, frames, 3);
	lw_writer_context(&w, LW_API_CUDA_MALLOC_ASYNC, -1, 0x55);
	/* Addresses up and down, far and near: deltas of both signs. */
	for (unsigned i = 0; i < ALLOCS; i++) {
		addr[i] = (i & 1 ? 0x7f0000000000ull : 0x500000000ull) +
			  (uint64_t)i * 0x1000 + (i % 7) * 0x100000000ull;
		lw_writer_alloc(&w, LW_MEM_DEVICE, addr[i], 256 + i, 1);
		if (i % 100 == 99)
			lw_writer_tag(&w, LW_REC_STEP);
	}
	/* A block of its own: the next one's checksum continues this one's. */
	REQUIRE(lw_writer_flush(&w) == 0);
	for (unsigned i = 0; i < ALLOCS / 2; i++)
		lw_writer_free(&w, addr[i]);
	lw_writer_close(&w, 1, 0);

	REQUIRE((fd = open(path, O_RDONLY)) >= 0);
	REQUIRE(fstat(fd, &st) == 0);
	REQUIRE((buf = malloc((size_t)st.st_size)) != NULL);
	REQUIRE(read(fd, buf, (size_t)st.st_size) == st.st_size);
	close(fd);
	CHECK(lw_trace_read(buf, (size_t)st.st_size, &ops, NULL, &result) == 0);
	CHECK(result.complete && !result.truncated);
	CHECK_EQ_U64(seen.pid, 4242);
	CHECK_EQ_U64(seen.tid, 77);
	CHECK(strcmp(seen.info_key, "exe") == 0);
	CHECK(strcmp(seen.info_value, "/bin/x") == 0);
	CHECK_EQ_U64(seen.string_id, 5);
	CHECK(strcmp(seen.string, "epoch") == 0);
	CHECK_EQ_U64(seen.stack_id, 1);
	CHECK_EQ_U64(seen.stack_count, 3);
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ_U64(seen.stack_frames[i], frames[i]);
	CHECK_EQ_U64(seen.api, LW_API_CUDA_MALLOC_ASYNC);
	CHECK(seen.device == -1);
	CHECK_EQ_U64(seen.stream, 0x55);
	CHECK_EQ_U64(seen.allocs, ALLOCS);
	for (unsigned i = 0; i < ALLOCS; i++) {
		if (seen.addr[i] != addr[i] || seen.size[i] != 256 + i) {
			lw_test_fail("allocation %u: %#llx, %llu bytes read, "
				     "%#llx, %u written", i,
				     (unsigned long long)seen.addr[i],
				     (unsigned long long)seen.size[i],
				     (unsigned long long)addr[i], 256 + i);
			break;
		}
	}
	CHECK_EQ_U64(seen.frees, ALLOCS / 2);
	CHECK_EQ_U64(seen.steps, ALLOCS / 100);
	CHECK(seen.ended);
	CHECK_EQ_U64(seen.events_at_end, ALLOCS + ALLOCS / 2 + ALLOCS / 100);
	/* Every block checked: the writer leads each with its checksum. */
	CHECK(result.checksummed);
	CHECK_EQ_U64(result.blocks_verified, 2);
	CHECK(!result.damaged);
	check_every_flip(buf, (size_t)st.st_size);
	free(buf);
	unlink(path);
	rmdir(dir);
	return lw_test_done("test-writer");
}
