/* SPDX-License-Identifier: MIT */
/*
 * The trace parser. The loop over hot records is written for speed (no
 * allocation, one switch, varints decoded inline); extension records, which
 * are rare, go through read_extension().
 *
 * Truncation versus corruption: a record cut off by the end of the buffer is
 * what a killed or still running writer leaves, so it ends the read without
 * an error. A malformed varint, an unknown hot tag, a field that runs past
 * the payload length its extension record declared, a record longer than
 * any writer writes, or an END record whose count of events disagrees with
 * the records read is corruption.
 *
 * A checksummed trace (lw-format.h) is read a block at a time, each block
 * checked before any of its records is passed on: a block that fails is
 * damage, which ends the read with what came before it (result->damaged);
 * a block the file ends inside of is not read (it cannot be checked), and
 * the trace is truncated there.
 */
#include "trace-reader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lw-checksum.h"
#include "lw-format.h"

struct reader {
	const struct lw_trace_ops *ops;
	void *ctx;
	struct lw_trace_result *result;
	const uint8_t *buf, *end;
	uint64_t stacks_defined;
	uint32_t last_stack_frames;	/* frames of STACK stacks_defined */
	uint64_t events;	/* the records END counts */
	uint64_t blocks;	/* CHECKSUM records met */
	uint64_t chain;		/* the hash the next block continues */
	uint64_t frames[LW_TRACE_MAX_FRAMES];
	struct lw_trace_pyframe pyframes[LW_TRACE_MAX_FRAMES];
	uint32_t evals[LW_TRACE_MAX_FRAMES];
};

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

__attribute__((format(printf, 3, 4)))
static int fail(struct lw_trace_result *result, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(result->message, sizeof(result->message), fmt, ap);
	va_end(ap);
	return err;
}

__attribute__((format(printf, 3, 4)))
static int corrupt(struct lw_trace_result *result, size_t offset,
		   const char *fmt, ...)
{
	char what[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	result->error_offset = offset;
	return fail(result, -EBADMSG, "corrupt record at offset %zu: %s",
		    offset, what);
}

static int callback_failed(struct lw_trace_result *result, size_t offset,
			   int err)
{
	result->error_offset = offset;
	return fail(result, err, "cannot process the record at offset %zu: %s",
		    offset, strerror(-err));
}

/* Bytes of zeros checked between two progress callbacks. */
#define ZERO_SCAN_CHUNK (1u << 20)

/*
 * Whether [p, end) holds only zeros. A long run (a sparse or preallocated
 * file) is scanned a chunk at a time with a progress callback after each,
 * so that the caller can give back the pages read: a scan of 4 GiB of
 * zeros does not keep 4 GiB in memory.
 */
static bool all_zero(struct reader *r, const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		size_t n = (size_t)(end - p) < ZERO_SCAN_CHUNK
				   ? (size_t)(end - p) : ZERO_SCAN_CHUNK;

		for (size_t i = 0; i < n; i++) {
			if (p[i])
				return false;
		}
		p += n;
		if (p < end && r->ops->progress)
			r->ops->progress(r->ctx, (size_t)(p - r->buf),
					 (size_t)(r->end - r->buf));
	}
	return true;
}

static int read_header(const uint8_t *buf, size_t len,
		       struct lw_trace_result *result)
{
	struct lw_trace_header *h = &result->header;
	size_t magic_len = len < LW_TRACE_MAGIC_SIZE ? len : LW_TRACE_MAGIC_SIZE;

	if (len == 0)
		return fail(result, -ENODATA, "empty file");
	if (memcmp(buf, LW_TRACE_MAGIC, magic_len) != 0)
		return fail(result, -EINVAL, "not a leakwatch trace (bad magic)");
	if (len < LW_TRACE_HEADER_SIZE)
		return fail(result, -EINVAL,
			    "incomplete trace header (%zu of %d bytes)", len,
			    LW_TRACE_HEADER_SIZE);

	h->version = get_le16(buf + 8);
	h->header_size = get_le16(buf + 10);
	h->flags = get_le32(buf + 12);
	h->start_time_ns = get_le64(buf + 16);
	h->pid = get_le32(buf + 24);

	if (h->version > LW_TRACE_VERSION)
		return fail(result, -EPROTONOSUPPORT,
			    "trace version %u is newer than this leakwatch (%d)",
			    h->version, LW_TRACE_VERSION);
	if (h->version == 0)
		return fail(result, -EPROTONOSUPPORT,
			    "unsupported trace version 0");
	if (h->header_size < LW_TRACE_HEADER_SIZE)
		return fail(result, -EINVAL,
			    "corrupt trace header: header size %u is below %d",
			    h->header_size, LW_TRACE_HEADER_SIZE);
	if (h->header_size > len)
		return fail(result, -EINVAL,
			    "incomplete trace header (%zu of %u bytes)", len,
			    h->header_size);
	return 0;
}

/* A varint inside an extension payload: running out is corruption. */
static int payload_varint(struct reader *r, size_t rec_off,
			  const uint8_t **pp, const uint8_t *end,
			  uint64_t *out)
{
	int rc = lw_varint_get(pp, end, out);

	if (rc == -1)
		return corrupt(r->result, rec_off,
			       "a field runs past the end of the record");
	if (rc < 0)
		return corrupt(r->result, rec_off, "malformed varint");
	return 0;
}

static int payload_string(struct reader *r, size_t rec_off,
			  const uint8_t **pp, const uint8_t *end,
			  struct lw_bytes *out)
{
	uint64_t n = 0;
	int rc = payload_varint(r, rec_off, pp, end, &n);

	if (rc < 0)
		return rc;
	if (n > (uint64_t)(end - *pp))
		return corrupt(r->result, rec_off,
			       "a string runs past the end of the record");
	out->data = *pp;
	out->len = (size_t)n;
	*pp += n;
	return 0;
}

static int read_stack(struct reader *r, size_t rec_off, const uint8_t *p,
		      const uint8_t *end)
{
	uint64_t id = 0, count = 0, frame = 0;
	int rc;

	if ((rc = payload_varint(r, rec_off, &p, end, &id)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &count)) < 0)
		return rc;
	if (id != r->stacks_defined + 1)
		return corrupt(r->result, rec_off,
			       "STACK id %" PRIu64 " is out of order (expected %" PRIu64 ")",
			       id, r->stacks_defined + 1);
	if (count > LW_TRACE_MAX_FRAMES)
		return corrupt(r->result, rec_off,
			       "STACK %" PRIu64 " has %" PRIu64 " frames (the limit is %d)",
			       id, count, LW_TRACE_MAX_FRAMES);
	for (uint64_t i = 0; i < count; i++) {
		uint64_t z = 0;

		if ((rc = payload_varint(r, rec_off, &p, end, &z)) < 0)
			return rc;
		frame += (uint64_t)lw_zigzag_decode(z);
		r->frames[i] = frame;
	}
	r->stacks_defined = id;
	r->last_stack_frames = (uint32_t)count;
	if (r->ops->stack)
		return r->ops->stack(r->ctx, id, r->frames, (uint32_t)count);
	return 0;
}

static int read_pystack(struct reader *r, size_t rec_off, const uint8_t *p,
			const uint8_t *end)
{
	uint64_t id = 0, count = 0, nevals = 0, v = 0;
	int rc;

	if ((rc = payload_varint(r, rec_off, &p, end, &id)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &count)) < 0)
		return rc;
	if (id == 0 || id > r->stacks_defined)
		return corrupt(r->result, rec_off,
			       "PYSTACK for stack %" PRIu64 ", which is not defined",
			       id);
	if (count > LW_TRACE_MAX_FRAMES)
		return corrupt(r->result, rec_off,
			       "PYSTACK %" PRIu64 " has %" PRIu64 " frames (the limit is %d)",
			       id, count, LW_TRACE_MAX_FRAMES);
	for (uint64_t i = 0; i < count; i++) {
		struct lw_trace_pyframe *f = &r->pyframes[i];

		if ((rc = payload_varint(r, rec_off, &p, end, &f->code_id)) < 0 ||
		    (rc = payload_varint(r, rec_off, &p, end, &v)) < 0)
			return rc;
		f->entry = v & 1;
		f->line = (int64_t)(v >> 1) - 1;
	}
	if ((rc = payload_varint(r, rec_off, &p, end, &nevals)) < 0)
		return rc;
	if (nevals > LW_TRACE_MAX_FRAMES)
		return corrupt(r->result, rec_off,
			       "PYSTACK %" PRIu64 " has %" PRIu64 " evaluation frames",
			       id, nevals);
	for (uint64_t i = 0; i < nevals; i++) {
		if ((rc = payload_varint(r, rec_off, &p, end, &v)) < 0)
			return rc;
		/* Indices into the stack's frames, ascending. The frame
		 * count is known for the stack just defined, where the
		 * writer puts its PYSTACK. */
		if ((i && v <= r->evals[i - 1]) || v >= LW_TRACE_MAX_FRAMES ||
		    (id == r->stacks_defined && v >= r->last_stack_frames))
			return corrupt(r->result, rec_off,
				       "PYSTACK %" PRIu64 ": bad evaluation frame index %" PRIu64,
				       id, v);
		r->evals[i] = (uint32_t)v;
	}
	if (!r->ops->pystack)
		return 0;
	return r->ops->pystack(r->ctx, id, r->pyframes, (uint32_t)count,
			       r->evals, (uint32_t)nevals);
}

static int read_pycode(struct reader *r, size_t rec_off, const uint8_t *p,
		       const uint8_t *end)
{
	uint64_t id = 0, file = 0, name = 0, line = 0;
	int rc;

	if ((rc = payload_varint(r, rec_off, &p, end, &id)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &file)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &name)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &line)) < 0)
		return rc;
	if (id == 0)
		return corrupt(r->result, rec_off, "PYCODE id 0");
	return r->ops->pycode ? r->ops->pycode(r->ctx, id, file, name, line) : 0;
}

static int read_module(struct reader *r, size_t rec_off, const uint8_t *p,
		       const uint8_t *end)
{
	struct lw_trace_module m = { 0 };
	int rc;

	if ((rc = payload_varint(r, rec_off, &p, end, &m.load_bias)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &m.start)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &m.end)) < 0 ||
	    (rc = payload_string(r, rec_off, &p, end, &m.path)) < 0)
		return rc;
	if (p < end && (rc = payload_string(r, rec_off, &p, end,
					    &m.build_id)) < 0)
		return rc;
	if (m.start > m.end)
		return corrupt(r->result, rec_off,
			       "MODULE starts at 0x%" PRIx64 ", after its end 0x%" PRIx64,
			       m.start, m.end);
	return r->ops->module ? r->ops->module(r->ctx, &m) : 0;
}

static int read_segment(struct reader *r, size_t rec_off, const uint8_t *p,
			const uint8_t *end)
{
	uint64_t key, size, device;
	int rc;

	if ((rc = payload_varint(r, rec_off, &p, end, &key)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &size)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &device)) < 0)
		return rc;
	return r->ops->segment ? r->ops->segment(r->ctx, key, size,
						 lw_zigzag_decode(device))
			       : 0;
}

static int read_oom(struct reader *r, size_t rec_off, const uint8_t *p,
		    const uint8_t *end)
{
	uint64_t size, allocated, reserved, device;
	int rc;

	if ((rc = payload_varint(r, rec_off, &p, end, &size)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &allocated)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &reserved)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &device)) < 0)
		return rc;
	return r->ops->oom ? r->ops->oom(r->ctx, size, allocated, reserved,
					 lw_zigzag_decode(device))
			   : 0;
}

static int read_holder(struct reader *r, size_t rec_off, const uint8_t *p,
		       const uint8_t *end)
{
	uint64_t v[6];
	int rc;

	for (size_t i = 0; i < 6; i++)
		if ((rc = payload_varint(r, rec_off, &p, end, &v[i])) < 0)
			return rc;
	return r->ops->holder ? r->ops->holder(r->ctx, v[0], v[1], v[2], v[3],
					       v[4], v[5])
			      : 0;
}

/*
 * One change of a SHORT_LIVED record, from *pp; prev_stack is the previous
 * change's stack id. Checks it against what the trace defined.
 */
static int short_lived_change(struct reader *r, size_t rec_off,
			      const uint8_t **pp, const uint8_t *end,
			      uint64_t *prev_stack,
			      struct lw_trace_short_lived_change *c)
{
	uint64_t v[9];
	int rc;

	for (size_t i = 0; i < 9; i++)
		if ((rc = payload_varint(r, rec_off, pp, end, &v[i])) < 0)
			return rc;
	c->stack_id = *prev_stack + (uint64_t)lw_zigzag_decode(v[0]);
	*prev_stack = c->stack_id;
	if (c->stack_id > r->stacks_defined)
		return corrupt(r->result, rec_off,
			       "SHORT_LIVED uses stack %" PRIu64 ", which is not defined",
			       c->stack_id);
	if (v[1] < 1 || v[1] > LW_MEM_KIND_MAX)
		return corrupt(r->result, rec_off,
			       "SHORT_LIVED names memory kind %" PRIu64, v[1]);
	c->kind = (unsigned)v[1];
	c->api = v[2];
	c->device = lw_zigzag_decode(v[3]);
	c->stream = v[4];
	c->count = v[5];
	c->bytes = v[6];
	c->gc_count = v[7];
	c->gc_bytes = v[8];
	if (c->gc_count > c->count || c->gc_bytes > c->bytes)
		return corrupt(r->result, rec_off,
			       "SHORT_LIVED: more freed in the collector's passes than made");
	return 0;
}

/* SHORT_LIVED: checked whole, then passed on change by change. */
static int read_short_lived(struct reader *r, size_t rec_off,
			    const uint8_t *p, const uint8_t *end)
{
	struct lw_trace_short_lived rec;
	struct lw_trace_short_lived_change c;
	const uint8_t *changes;
	uint64_t prev = 0, summed;
	int rc;

	if ((rc = payload_varint(r, rec_off, &p, end, &rec.peak)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &rec.after_peak)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &rec.torch_peak)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &rec.gc_passes)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &summed)) < 0 ||
	    (rc = payload_varint(r, rec_off, &p, end, &rec.changes)) < 0)
		return rc;
	rec.summed = summed != 0;
	/* Each change takes nine bytes at least. */
	if (rec.changes > (uint64_t)(end - p) / 9)
		return corrupt(r->result, rec_off,
			       "SHORT_LIVED has %" PRIu64 " changes in %zu bytes",
			       rec.changes, (size_t)(end - p));
	changes = p;
	for (uint64_t i = 0; i < rec.changes; i++)
		if ((rc = short_lived_change(r, rec_off, &p, end, &prev,
					     &c)) < 0)
			return rc;
	if (r->ops->short_lived_change) {
		p = changes;
		prev = 0;
		for (uint64_t i = 0; i < rec.changes; i++) {
			short_lived_change(r, rec_off, &p, end, &prev, &c);
			if ((rc = r->ops->short_lived_change(r->ctx, &c)) < 0)
				return rc;
		}
	}
	return r->ops->short_lived ? r->ops->short_lived(r->ctx, &rec) : 0;
}

/*
 * One extension record whose payload [p, end) lies within the buffer. Fields
 * a newer writer appends after the known ones are ignored; unknown tags are
 * skipped whole.
 */
static int read_extension(struct reader *r, uint8_t tag, size_t rec_off,
			  const uint8_t *p, const uint8_t *end)
{
	const struct lw_trace_ops *ops = r->ops;
	struct lw_bytes a = { 0 }, b = { 0 };
	uint64_t x = 0, y = 0;
	int rc;

	switch (tag) {
	case LW_REC_STACK:
		return read_stack(r, rec_off, p, end);
	case LW_REC_MODULE:
		return read_module(r, rec_off, p, end);
	case LW_REC_STRING:
		if ((rc = payload_varint(r, rec_off, &p, end, &x)) < 0)
			return rc;
		if (x == 0)
			return corrupt(r->result, rec_off, "STRING id 0");
		a.data = p;
		a.len = (size_t)(end - p);
		return ops->string ? ops->string(r->ctx, x, a) : 0;
	case LW_REC_PHASE_BEGIN:
		if ((rc = payload_varint(r, rec_off, &p, end, &x)) < 0)
			return rc;
		return ops->phase_begin ? ops->phase_begin(r->ctx, x) : 0;
	case LW_REC_INFO:
		if ((rc = payload_string(r, rec_off, &p, end, &a)) < 0 ||
		    (rc = payload_string(r, rec_off, &p, end, &b)) < 0)
			return rc;
		return ops->info ? ops->info(r->ctx, a, b) : 0;
	case LW_REC_WARNING:
		a.data = p;
		a.len = (size_t)(end - p);
		return ops->warning ? ops->warning(r->ctx, a) : 0;
	case LW_REC_END:
		if ((rc = payload_varint(r, rec_off, &p, end, &x)) < 0 ||
		    (rc = payload_varint(r, rec_off, &p, end, &y)) < 0)
			return rc;
		/* A header or length that skips records, or a record lost
		 * or changed into another, shows here. */
		if (x != r->events)
			return corrupt(r->result, rec_off,
				       "the END record counts %" PRIu64 " events, but %" PRIu64 " were read: records were lost or changed",
				       x, r->events);
		return ops->end ? ops->end(r->ctx, x, y) : 0;
	case LW_REC_DROPPED:
		if ((rc = payload_varint(r, rec_off, &p, end, &x)) < 0)
			return rc;
		return ops->dropped ? ops->dropped(r->ctx, x) : 0;
	case LW_REC_PYCODE:
		return read_pycode(r, rec_off, p, end);
	case LW_REC_PYSTACK:
		return read_pystack(r, rec_off, p, end);
	case LW_REC_MARK:
		if ((rc = payload_varint(r, rec_off, &p, end, &x)) < 0)
			return rc;
		return ops->mark ? ops->mark(r->ctx, x) : 0;
	case LW_REC_ALLOC_FAILED: {
		uint64_t size = 0, error = 0;

		if ((rc = payload_varint(r, rec_off, &p, end, &x)) < 0 ||
		    (rc = payload_varint(r, rec_off, &p, end, &y)) < 0 ||
		    (rc = payload_varint(r, rec_off, &p, end, &size)) < 0 ||
		    (rc = payload_varint(r, rec_off, &p, end, &error)) < 0)
			return rc;
		return ops->alloc_failed
			       ? ops->alloc_failed(r->ctx, x, y, size, error)
			       : 0;
	}
	case LW_REC_SEGMENT:
		return read_segment(r, rec_off, p, end);
	case LW_REC_SEGMENT_FREE:
		if ((rc = payload_varint(r, rec_off, &p, end, &x)) < 0)
			return rc;
		return ops->segment_free ? ops->segment_free(r->ctx, x) : 0;
	case LW_REC_OOM:
		return read_oom(r, rec_off, p, end);
	case LW_REC_HOLDER:
		return read_holder(r, rec_off, p, end);
	case LW_REC_SHORT_LIVED:
		return read_short_lived(r, rec_off, p, end);
	case LW_REC_CHECKSUM:
		/* Read by next_block(), at the start of each block. */
		return corrupt(r->result, rec_off,
			       r->result->checksummed
				       ? "a CHECKSUM record inside a block"
				       : "a CHECKSUM record in a trace that does not begin with one");
	case LW_REC_PYPATH: {
		uint64_t name = 0;

		if ((rc = payload_varint(r, rec_off, &p, end, &x)) < 0 ||
		    (rc = payload_varint(r, rec_off, &p, end, &y)) < 0 ||
		    (rc = payload_varint(r, rec_off, &p, end, &name)) < 0)
			return rc;
		return ops->pypath ? ops->pypath(r->ctx, x, y, name) : 0;
	}
	default:
		return 0;
	}
}

/*
 * The END record's count of events, found in the records of [p, end) by
 * their lengths alone; false when there is none or they cannot be walked.
 */
static bool skim_for_end(const uint8_t *p, const uint8_t *end,
			 uint64_t *events)
{
	while (p < end) {
		uint8_t tag = *p++;
		unsigned fields;
		uint64_t v;

		switch (tag) {
		case LW_REC_ALLOC_DEVICE:
		case LW_REC_ALLOC_MANAGED:
		case LW_REC_ALLOC_PINNED_HOST:
		case LW_REC_ALLOC_HOST_REGISTERED:
		case LW_REC_CONTEXT:
			fields = 3;
			break;
		case LW_REC_FREE:
		case LW_REC_TIME:
		case LW_REC_THREAD:
			fields = 1;
			break;
		case LW_REC_STEP:
		case LW_REC_PHASE_END:
			fields = 0;
			break;
		default:
			if (tag <= LW_REC_HOT_MAX ||
			    lw_varint_get(&p, end, &v) < 0 ||
			    v > (uint64_t)(end - p))
				return false;
			if (tag == LW_REC_END)
				return lw_varint_get(&p, p + v, events) == 0;
			p += v;
			continue;
		}
		while (fields--) {
			if (lw_varint_get(&p, end, &v) < 0)
				return false;
		}
	}
	return false;
}

/*
 * How many events lie beyond a damaged block whose CHECKSUM record is at
 * p, by the END record of the trace's last block (found by following the
 * blocks' lengths); UINT64_MAX when it cannot be found.
 */
static uint64_t events_beyond(const struct reader *r, const uint8_t *p)
{
	const uint8_t *end = r->end, *last = NULL, *last_end = NULL;
	uint64_t total;

	while ((size_t)(end - p) >= LW_CHECKSUM_RECORD_SIZE &&
	       p[0] == LW_REC_CHECKSUM && p[1] == LW_CHECKSUM_PAYLOAD) {
		uint32_t len = get_le32(p + 2);

		if (len > (size_t)(end - p) - LW_CHECKSUM_RECORD_SIZE)
			return UINT64_MAX;
		last = p + LW_CHECKSUM_RECORD_SIZE;
		last_end = last + len;
		p = last_end;
	}
	if (!last || !skim_for_end(last, last_end, &total) ||
	    total < r->events)
		return UINT64_MAX;
	return total - r->events;
}

/* A checksummed trace's damage at p (the start of block r->blocks + 1):
 * the read stops there, with what came before. Returns 1. */
__attribute__((format(printf, 3, 4)))
static int damaged(struct reader *r, const uint8_t *p, const char *fmt, ...)
{
	struct lw_trace_result *result = r->result;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(result->message, sizeof(result->message), fmt, ap);
	va_end(ap);
	result->damaged = true;
	result->truncated = true;
	result->damaged_block = r->blocks + 1;
	result->end_offset = (size_t)(p - r->buf);
	result->error_offset = result->end_offset;
	result->events_not_read = events_beyond(r, p);
	return 1;
}

/* Whether the block that fails its check at [q, q + len) is space that was
 * never written: zeros from inside it (at least the last 16 bytes) to the
 * end of the file, as a crash before the data reached the disk leaves. */
static bool never_written(struct reader *r, const uint8_t *q, uint32_t len,
			  size_t *zeros)
{
	const uint8_t *z = q + len;

	if (len < 16 || !all_zero(r, z, r->end))
		return false;
	while (z > q && !z[-1])
		z--;
	if (z > q + len - 16)
		return false;
	*zeros = (size_t)(r->end - z);
	return true;
}

/*
 * At p, the start of a block of a checksummed trace: reads its CHECKSUM
 * record and checks the block, which then runs from *pp to *limit.
 * Returns 0 to read it; 1 when the read ends here (the file ends inside
 * the block, zeros that were never written, or damage: result says which).
 */
static int next_block(struct reader *r, const uint8_t **pp,
		      const uint8_t **limit)
{
	struct lw_trace_result *result = r->result;
	const uint8_t *p = *pp, *q, *end = r->end;
	size_t left = (size_t)(end - p);
	uint64_t hash;
	uint32_t len;
	size_t zeros;

	result->end_offset = (size_t)(p - r->buf);
	if (p[0] == 0 && all_zero(r, p, end)) {
		result->zero_tail = left;
		result->truncated = true;
		result->cut = LW_TRACE_CUT_BETWEEN;
		return 1;
	}
	if (p[0] != LW_REC_CHECKSUM)
		return damaged(r, p, "block %" PRIu64 " at offset %zu has no CHECKSUM record",
			       r->blocks + 1, (size_t)(p - r->buf));
	if (left < LW_CHECKSUM_RECORD_SIZE) {
		result->truncated = true;
		result->cut = LW_TRACE_CUT_RECORD;
		result->cut_declared = LW_CHECKSUM_RECORD_SIZE;
		result->cut_present = left;
		return 1;
	}
	if (p[1] != LW_CHECKSUM_PAYLOAD)
		return damaged(r, p, "block %" PRIu64 " at offset %zu has a CHECKSUM record of %u bytes",
			       r->blocks + 1, (size_t)(p - r->buf), p[1]);
	len = get_le32(p + 2);
	hash = get_le64(p + 6);
	q = p + LW_CHECKSUM_RECORD_SIZE;
	if (len > LW_TRACE_RECORD_MAX)
		return damaged(r, p, "block %" PRIu64 " at offset %zu declares %" PRIu32 " bytes, more than a block holds",
			       r->blocks + 1, (size_t)(p - r->buf), len);
	if (len > left - LW_CHECKSUM_RECORD_SIZE) {
		result->truncated = true;
		result->cut = LW_TRACE_CUT_BLOCK;
		result->cut_declared = len;
		result->cut_present = left - LW_CHECKSUM_RECORD_SIZE;
		return 1;
	}
	if (lw_checksum(r->chain, q, len) != hash) {
		if (never_written(r, q, len, &zeros)) {
			result->zero_tail = zeros;
			result->truncated = true;
			result->cut = LW_TRACE_CUT_BLOCK;
			result->cut_declared = len;
			result->cut_present = (size_t)(end - q) - zeros;
			return 1;
		}
		return damaged(r, p, "block %" PRIu64 " at offset %zu fails its checksum",
			       r->blocks + 1, (size_t)(p - r->buf));
	}
	r->blocks++;
	r->chain = hash;
	result->blocks_verified++;
	result->records++;
	*pp = q;
	*limit = q + len;
	return 0;
}

/* Whether the trace is made of checksummed blocks: its header says so, or
 * its first record is a CHECKSUM record (a flag lost to damage). */
static bool has_blocks(const uint8_t *buf, size_t len,
		       const struct lw_trace_header *h)
{
	return (h->flags & LW_TRACE_FLAG_CHECKSUMS) ||
	       (len > h->header_size && buf[h->header_size] == LW_REC_CHECKSUM);
}

/* Reads one varint of a hot record into v; a short read ends the trace. */
#define HOT_VARINT(v)                                                    \
	do {                                                             \
		int rc_ = lw_varint_get(&p, limit, &(v));                \
		if (rc_ == -1)                                           \
			goto cut_off;                                    \
		if (rc_ < 0)                                             \
			return corrupt(result, (size_t)(rec - buf),      \
				       "malformed varint");              \
	} while (0)

/* Calls an optional callback; its failure stops the read. */
#define CALL(cb, ...)                                                    \
	do {                                                             \
		if (ops->cb) {                                           \
			int rc_ = ops->cb(ctx, __VA_ARGS__);             \
			if (rc_ < 0)                                     \
				return callback_failed(                  \
					result, (size_t)(rec - buf), rc_); \
		}                                                        \
	} while (0)

int lw_trace_read(const uint8_t *buf, size_t len,
		  const struct lw_trace_ops *ops, void *ctx,
		  struct lw_trace_result *result)
{
	static const struct lw_trace_ops no_ops;
	struct reader r;
	const uint8_t *p, *end = buf + len, *rec = buf, *limit;
	uint64_t prev_addr = 0, declared = 0;
	int rc;

	memset(result, 0, sizeof(*result));
	if (!ops)
		ops = &no_ops;
	rc = read_header(buf, len, result);
	if (rc < 0)
		return rc;
	CALL(header, &result->header);

	memset(&r, 0, offsetof(struct reader, frames));
	r.ops = ops;
	r.ctx = ctx;
	r.result = result;
	r.buf = buf;
	r.end = end;

	p = buf + result->header.header_size;
	/* Without blocks the records run to the end of the buffer; with
	 * them, to the end of the block checked last. */
	limit = end;
	if (has_blocks(buf, len, &result->header)) {
		result->checksummed = true;
		r.chain = lw_checksum(0, buf, result->header.header_size);
		limit = p;
	}
	while (p < end) {
		uint64_t a = 0, b = 0, c = 0;
		uint8_t tag;

		if (p == limit) {
			/* The end of a checksummed block: the next one,
			 * checked before it is read. */
			rc = next_block(&r, &p, &limit);
			if (rc != 0)
				return rc < 0 ? rc : 0;
			continue;
		}
		rec = p;
		tag = *p++;
		switch (tag) {
		case LW_REC_ALLOC_DEVICE:
		case LW_REC_ALLOC_MANAGED:
		case LW_REC_ALLOC_PINNED_HOST:
		case LW_REC_ALLOC_HOST_REGISTERED:
			HOT_VARINT(a);
			HOT_VARINT(b);
			HOT_VARINT(c);
			if (c > r.stacks_defined)
				return corrupt(result, (size_t)(rec - buf),
					       "ALLOC uses stack %" PRIu64 ", which is not defined",
					       c);
			prev_addr += (uint64_t)lw_zigzag_decode(a);
			r.events++;
			CALL(alloc, tag - LW_REC_ALLOC_BASE, prev_addr, b, c);
			break;
		case LW_REC_FREE:
			HOT_VARINT(a);
			prev_addr += (uint64_t)lw_zigzag_decode(a);
			r.events++;
			CALL(free, prev_addr);
			break;
		case LW_REC_STEP:
			r.events++;
			if (ops->step && (rc = ops->step(ctx)) < 0)
				return callback_failed(result,
						       (size_t)(rec - buf), rc);
			break;
		case LW_REC_PHASE_END:
			r.events++;
			if (ops->phase_end && (rc = ops->phase_end(ctx)) < 0)
				return callback_failed(result,
						       (size_t)(rec - buf), rc);
			break;
		case LW_REC_TIME:
			HOT_VARINT(a);
			CALL(time, a);
			break;
		case LW_REC_THREAD:
			HOT_VARINT(a);
			CALL(thread, a);
			break;
		case LW_REC_CONTEXT:
			HOT_VARINT(a);
			HOT_VARINT(b);
			HOT_VARINT(c);
			CALL(context, a, lw_zigzag_decode(b), c);
			break;
		default:
			if (tag <= LW_REC_HOT_MAX) {
				/* Zeros to the end: space that was never
				 * written, not a record. */
				if (tag == 0 && !result->checksummed &&
				    all_zero(&r, p, end)) {
					result->zero_tail = (size_t)(end - rec);
					goto cut_between;
				}
				return corrupt(result, (size_t)(rec - buf),
					       "unknown tag 0x%02x", tag);
			}
			HOT_VARINT(a);
			declared = a + (uint64_t)(p - rec);
			if (a > LW_TRACE_RECORD_MAX)
				return corrupt(result, (size_t)(rec - buf),
					       "a record of %" PRIu64 " bytes, longer than any writer writes (%d)",
					       a, LW_TRACE_RECORD_MAX);
			if (a > (uint64_t)(limit - p))
				goto cut_off;
			rc = read_extension(&r, tag, (size_t)(rec - buf), p,
					    p + a);
			if (rc < 0) {
				if (result->message[0]) /* corrupt() said why */
					return rc;
				return callback_failed(result,
						       (size_t)(rec - buf), rc);
			}
			p += a;
			if (tag == LW_REC_END) {
				result->records++;
				result->complete = true;
				result->end_offset = (size_t)(p - buf);
				if (p == end)
					return 0;
				if (!all_zero(&r, p, end))
					return corrupt(result,
						       (size_t)(p - buf),
						       "data after the END record");
				result->zero_tail = (size_t)(end - p);
				return 0;
			}
			break;
		}
		declared = 0;
		/* A mask test per record: cheap enough to leave in. */
		if ((++result->records & (LW_TRACE_PROGRESS_RECORDS - 1)) == 0 &&
		    ops->progress)
			CALL(progress, (size_t)(p - buf), len);
	}
	rec = p;

cut_between:
	result->truncated = true;
	result->cut = LW_TRACE_CUT_BETWEEN;
	result->end_offset = (size_t)(rec - buf);
	return 0;

cut_off:
	/* A record runs past the end of what was read: the end of the file
	 * cuts it, or, in a checked block, it does not fit in its block. */
	if (result->checksummed)
		return corrupt(result, (size_t)(rec - buf),
			       "a record runs past the end of its block");
	result->truncated = true;
	result->cut = LW_TRACE_CUT_RECORD;
	result->cut_declared = declared;
	result->cut_present = (size_t)(end - rec);
	result->end_offset = (size_t)(rec - buf);
	return 0;
}

void lw_trace_describe_damage(const struct lw_trace_result *result,
			      char *out, size_t size)
{
	uint64_t lost = result->events_not_read;

	if (lost == UINT64_MAX)
		snprintf(out, size, "%s; what follows it is not read",
			 result->message);
	else
		snprintf(out, size, "%s; %" PRIu64 " event%s after it %s not read",
			 result->message, lost, lost == 1 ? "" : "s",
			 lost == 1 ? "is" : "are");
}

void lw_trace_describe_end(const struct lw_trace_result *result, char *out,
			   size_t size)
{
	char declared[48] = "";

	if (result->damaged) {
		char what[256];

		lw_trace_describe_damage(result, what, sizeof(what));
		snprintf(out, size, "DAMAGED: %s", what);
		return;
	}
	if (!result->truncated) {
		snprintf(out, size, "%s", "");
		return;
	}
	switch (result->cut) {
	case LW_TRACE_CUT_RECORD:
		if (result->cut_declared)
			snprintf(declared, sizeof(declared), " of its %" PRIu64 " bytes",
				 result->cut_declared);
		else
			snprintf(declared, sizeof(declared), " bytes of it");
		snprintf(out, size, "TRUNCATED: the file ends inside a record (%zu%s, at offset %zu): a write that stopped part-way (disk full, file size limit) or a copy cut short",
			 result->cut_present, declared, result->end_offset);
		return;
	case LW_TRACE_CUT_BLOCK:
		snprintf(out, size, "TRUNCATED: the file ends inside a block (%zu of its %" PRIu64 " bytes, at offset %zu; not read, as it cannot be checked): a write that stopped part-way (disk full, file size limit) or is still under way",
			 result->cut_present, result->cut_declared,
			 result->end_offset);
		return;
	default:
		snprintf(out, size, "TRUNCATED: the trace ends early (process killed, replaced by an exec, or still running)");
		return;
	}
}

void lw_trace_release_read(const uint8_t *data, size_t *dropped,
			   size_t offset)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t end = offset / page * page;

	if (end > *dropped) {
		madvise((void *)(data + *dropped), end - *dropped,
			MADV_DONTNEED);
		*dropped = end;
	}
}
