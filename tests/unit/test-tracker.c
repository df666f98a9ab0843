/* SPDX-License-Identifier: MIT */
/*
 * The tracker and writer, linked directly: record a known sequence of
 * events, then decode the trace file and check every hot record, in order.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-format.h"
#include "lw-test.h"
#include "tracker.h"

struct event {
	uint8_t tag;
	uint64_t addr, size;
	char text[64];
};

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;

	if (!f)
		return NULL;
	buf = malloc(1 << 20);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/* Decodes the records we care about; returns how many, or -1 if malformed. */
static int decode(const uint8_t *p, const uint8_t *end, struct event *out,
		  int max)
{
	uint64_t prev = 0, v, len;
	char strings[8][64] = { { 0 } };
	int n = 0;

	while (p < end && n < max) {
		uint8_t tag = *p++;
		struct event *e = &out[n];
		memset(e, 0, sizeof(*e));
		e->tag = tag;
		if (tag >= LW_REC_ALLOC_DEVICE && tag <= LW_REC_ALLOC_HOST_REGISTERED) {
			if (lw_varint_get(&p, end, &v) < 0)
				return -1;
			prev += (uint64_t)lw_zigzag_decode(v);
			e->addr = prev;
			if (lw_varint_get(&p, end, &e->size) < 0 ||
			    lw_varint_get(&p, end, &v) < 0)
				return -1;
			n++;
		} else if (tag == LW_REC_FREE) {
			if (lw_varint_get(&p, end, &v) < 0)
				return -1;
			prev += (uint64_t)lw_zigzag_decode(v);
			e->addr = prev;
			n++;
		} else if (tag == LW_REC_STEP || tag == LW_REC_PHASE_END) {
			n++;
		} else if (tag == LW_REC_TIME || tag == LW_REC_THREAD) {
			if (lw_varint_get(&p, end, &v) < 0)
				return -1;
		} else if (tag == LW_REC_CONTEXT) {
			for (int i = 0; i < 3; i++)
				if (lw_varint_get(&p, end, &v) < 0)
					return -1;
		} else if (tag >= LW_REC_EXT_MIN) {
			if (lw_varint_get(&p, end, &len) < 0 ||
			    len > (uint64_t)(end - p))
				return -1;
			const uint8_t *q = p, *qend = p + len;
			if (tag == LW_REC_STRING) {
				if (lw_varint_get(&q, qend, &v) < 0 || v >= 8)
					return -1;
				snprintf(strings[v], sizeof(strings[v]), "%.*s",
					 (int)(qend - q), (const char *)q);
			} else if (tag == LW_REC_PHASE_BEGIN) {
				if (lw_varint_get(&q, qend, &v) < 0 || v >= 8)
					return -1;
				snprintf(e->text, sizeof(e->text), "%s",
					 strings[v]);
				n++;
			} else if (tag == LW_REC_END) {
				if (lw_varint_get(&q, qend, &e->size) < 0)
					return -1;
				n++;
			}
			p += len;
		} else {
			return -1;
		}
	}
	return n;
}

static void record_alloc(uintptr_t addr, uint64_t size, enum lw_mem_kind kind)
{
	CHECK(lw_enter());
	lw_record_alloc(LW_API_CUDA_MALLOC, kind, (void *)addr, size, 0);
	lw_leave();
}

static void record_free(uintptr_t addr, int succeeds)
{
	struct lw_pending_free pending;

	CHECK(lw_enter());
	lw_free_begin((void *)addr, &pending);
	lw_free_end(&pending, succeeds);
	lw_leave();
}

int main(void)
{
	char dir[] = "/tmp/lw-test-tracker-XXXXXX", pattern[PATH_MAX],
	     path[PATH_MAX];
	struct event ev[32];
	struct stat st;
	size_t len;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(pattern, sizeof(pattern), "%s/t-%%p.trace", dir);
	snprintf(path, sizeof(path), "%s/t-%d.trace", dir, (int)getpid());
	setenv("LEAKWATCH_OUT", pattern, 1);
	setenv("LEAKWATCH_QUIET", "1", 1);
	unsetenv("LEAKWATCH_MANIFEST");

	lw_init();
	CHECK(lw_state == LW_STATE_ACTIVE);
	/* Nothing recorded yet: no file. */
	CHECK(access(path, F_OK) != 0);

	record_alloc(0x10000, 4096, LW_MEM_DEVICE);
	record_alloc(0x20000, 100, LW_MEM_MANAGED);
	/* A nested call (the runtime calling itself) is not recorded. */
	CHECK(lw_enter());
	CHECK(!lw_enter());
	lw_leave();
	record_free(0x10000, 1);
	record_free(0x20000, 0); /* fails: the allocation stays live */
	record_free(0x30000, 1); /* unknown, succeeds: recorded */
	record_free(0x40000, 0); /* unknown, fails: not recorded */
	lw_record_step(LW_STEP_API);
	/* Once the program marks steps itself, optimizer steps are ignored. */
	lw_record_step(LW_STEP_OPTIMIZER);
	lw_record_phase_begin("load");
	lw_record_phase_end();
	lw_shutdown();
	CHECK(lw_state == LW_STATE_CLOSED);
	CHECK(!lw_enter()); /* after exit, hooks pass through */

	CHECK(stat(path, &st) == 0);
	CHECK((st.st_mode & 0777) == 0600);
	uint8_t *buf = read_file(path, &len);
	CHECK(buf != NULL);
	if (!buf)
		return lw_test_done("test-tracker");
	CHECK(len > LW_TRACE_HEADER_SIZE);
	CHECK(memcmp(buf, LW_TRACE_MAGIC, LW_TRACE_MAGIC_SIZE) == 0);
	CHECK(buf[8] == LW_TRACE_VERSION && buf[9] == 0);
	CHECK(buf[10] == LW_TRACE_HEADER_SIZE);
	uint32_t pid = buf[24] | buf[25] << 8 | buf[26] << 16 |
		       (uint32_t)buf[27] << 24;
	CHECK(pid == (uint32_t)getpid());

	int n = decode(buf + LW_TRACE_HEADER_SIZE, buf + len, ev, 32);
	static const struct event expected[] = {
		{ LW_REC_ALLOC_DEVICE, 0x10000, 4096, "" },
		{ LW_REC_ALLOC_MANAGED, 0x20000, 100, "" },
		{ LW_REC_FREE, 0x10000, 0, "" },
		{ LW_REC_FREE, 0x20000, 0, "" },
		{ LW_REC_ALLOC_MANAGED, 0x20000, 100, "" }, /* put back */
		{ LW_REC_FREE, 0x30000, 0, "" },
		{ LW_REC_STEP, 0, 0, "" },
		{ LW_REC_PHASE_BEGIN, 0, 0, "load" },
		{ LW_REC_PHASE_END, 0, 0, "" },
		{ LW_REC_END, 0, 8, "" }, /* hot records written */
	};
	int nexpected = (int)(sizeof(expected) / sizeof(expected[0]));
	CHECK_EQ_U64(n, nexpected);
	for (int i = 0; i < n && i < nexpected; i++) {
		CHECK_EQ_U64(ev[i].tag, expected[i].tag);
		CHECK_EQ_U64(ev[i].addr, expected[i].addr);
		CHECK_EQ_U64(ev[i].size, expected[i].size);
		CHECK(strcmp(ev[i].text, expected[i].text) == 0);
	}
	free(buf);
	unlink(path);
	rmdir(dir);
	return lw_test_done("test-tracker");
}
