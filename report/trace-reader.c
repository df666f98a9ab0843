/* SPDX-License-Identifier: MIT */
/*
 * The trace parser. The loop over hot records is written for speed (no
 * allocation, one switch, varints decoded inline); extension records, which
 * are rare, go through read_extension().
 *
 * Truncation versus corruption: a record cut off by the end of the buffer is
 * what a killed or still running writer leaves, so it ends the read without
 * an error. A malformed varint, an unknown hot tag, or a field that runs past
 * the payload length its extension record declared is corruption.
 */
#include "trace-reader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lw-format.h"

struct reader {
	const struct lw_trace_ops *ops;
	void *ctx;
	struct lw_trace_result *result;
	uint64_t stacks_defined;
	uint32_t last_stack_frames;	/* frames of STACK stacks_defined */
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

static bool all_zero(const uint8_t *p, const uint8_t *end)
{
	for (; p < end; p++) {
		if (*p)
			return false;
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

/* Reads one varint of a hot record into v; a short read ends the trace. */
#define HOT_VARINT(v)                                                    \
	do {                                                             \
		int rc_ = lw_varint_get(&p, end, &(v));                  \
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
	const uint8_t *p, *end = buf + len, *rec = buf;
	uint64_t prev_addr = 0;
	int rc;

	memset(result, 0, sizeof(*result));
	if (!ops)
		ops = &no_ops;
	rc = read_header(buf, len, result);
	if (rc < 0)
		return rc;
	CALL(header, &result->header);

	r.ops = ops;
	r.ctx = ctx;
	r.result = result;
	r.stacks_defined = 0;
	r.last_stack_frames = 0;

	p = buf + result->header.header_size;
	while (p < end) {
		uint64_t a = 0, b = 0, c = 0;
		uint8_t tag;

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
			CALL(alloc, tag - LW_REC_ALLOC_BASE, prev_addr, b, c);
			break;
		case LW_REC_FREE:
			HOT_VARINT(a);
			prev_addr += (uint64_t)lw_zigzag_decode(a);
			CALL(free, prev_addr);
			break;
		case LW_REC_STEP:
			if (ops->step && (rc = ops->step(ctx)) < 0)
				return callback_failed(result,
						       (size_t)(rec - buf), rc);
			break;
		case LW_REC_PHASE_END:
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
				if (tag == 0 && all_zero(p, end)) {
					result->zero_tail = (size_t)(end - rec);
					goto cut_off;
				}
				return corrupt(result, (size_t)(rec - buf),
					       "unknown tag 0x%02x", tag);
			}
			HOT_VARINT(a);
			if (a > (uint64_t)(end - p))
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
				if (!all_zero(p, end))
					return corrupt(result,
						       (size_t)(p - buf),
						       "data after the END record");
				result->zero_tail = (size_t)(end - p);
				return 0;
			}
			break;
		}
		/* A mask test per record: cheap enough to leave in. */
		if ((++result->records & (LW_TRACE_PROGRESS_RECORDS - 1)) == 0 &&
		    ops->progress)
			CALL(progress, (size_t)(p - buf), len);
	}
	rec = p;

cut_off:
	result->truncated = true;
	result->end_offset = (size_t)(rec - buf);
	return 0;
}
