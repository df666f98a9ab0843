/* SPDX-License-Identifier: MIT */
/*
 * A strict parser of leakwatch traces (common/lw-format.h) held in memory.
 *
 * lw_trace_read() is a pure function of its input: it never allocates, never
 * touches files, and reports what it reads through callbacks, so that it can
 * be fuzzed and benchmarked on its own.
 */
#ifndef LW_TRACE_READER_H
#define LW_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most frames a STACK record may hold; more means corruption. */
#define LW_TRACE_MAX_FRAMES 1024

struct lw_trace_header {
	uint16_t version;
	uint16_t header_size;
	uint32_t flags;
	uint64_t start_time_ns;
	uint32_t pid;
};

/* Bytes inside the trace buffer: not NUL-terminated, valid while it is. */
struct lw_bytes {
	const uint8_t *data;
	size_t len;
};

/* One Python frame of a PYSTACK record. */
struct lw_trace_pyframe {
	uint64_t code_id;	/* a PYCODE id */
	int64_t line;		/* -1: unknown */
	bool entry;		/* an evaluation-loop activation began here */
};

struct lw_trace_module {
	uint64_t load_bias;
	uint64_t start;
	uint64_t end;
	struct lw_bytes path;
	struct lw_bytes build_id; /* len 0 when the record has none */
};

/* A SHORT_LIVED record's figures (common/lw-format.h). */
struct lw_trace_short_lived {
	uint64_t peak;
	uint64_t after_peak;
	uint64_t torch_peak;
	uint64_t gc_passes;
	bool summed;	/* the stacks' entries count for this interval */
	uint64_t changes;
};

/* One of its changes: the stack's allocations made and freed in each
 * interval from here on (count 0: none). */
struct lw_trace_short_lived_change {
	uint64_t stack_id;
	unsigned kind;		/* enum lw_mem_kind */
	uint64_t api;
	int64_t device;
	uint64_t stream;
	uint64_t count;
	uint64_t bytes;
	uint64_t gc_count;	/* <= count */
	uint64_t gc_bytes;	/* <= bytes */
};

/*
 * What the reader meets, in trace order. Any member may be NULL. A callback
 * returns 0 to go on, or a negative errno to stop the read, which then
 * returns that value. Addresses are already decoded (not deltas). Pointers
 * passed to callbacks are valid only during the call, except the bytes of
 * struct lw_bytes, which point into the caller's buffer.
 */
struct lw_trace_ops {
	int (*header)(void *ctx, const struct lw_trace_header *header);
	/* kind is an enum lw_mem_kind; stack_id 0 means no stack captured. */
	int (*alloc)(void *ctx, unsigned kind, uint64_t addr, uint64_t size,
		     uint64_t stack_id);
	int (*free)(void *ctx, uint64_t addr);
	int (*step)(void *ctx);
	int (*phase_begin)(void *ctx, uint64_t string_id);
	int (*phase_end)(void *ctx);
	int (*time)(void *ctx, uint64_t delta_ns);
	int (*thread)(void *ctx, uint64_t tid);
	int (*context)(void *ctx, uint64_t api, int64_t device, uint64_t stream);
	/* frames: innermost first, count <= LW_TRACE_MAX_FRAMES. */
	int (*stack)(void *ctx, uint64_t id, const uint64_t *frames,
		     uint32_t count);
	int (*module)(void *ctx, const struct lw_trace_module *module);
	int (*string)(void *ctx, uint64_t id, struct lw_bytes text);
	int (*info)(void *ctx, struct lw_bytes key, struct lw_bytes value);
	int (*warning)(void *ctx, struct lw_bytes text);
	int (*end)(void *ctx, uint64_t events, uint64_t dropped);
	int (*dropped)(void *ctx, uint64_t count);
	int (*pycode)(void *ctx, uint64_t id, uint64_t file_string,
		      uint64_t name_string, uint64_t first_line);
	/*
	 * The Python frames of stack stack_id (innermost first, count <=
	 * LW_TRACE_MAX_FRAMES) and the indices, ascending, of the native
	 * frames of that stack that run the evaluation loop.
	 */
	int (*pystack)(void *ctx, uint64_t stack_id,
		       const struct lw_trace_pyframe *frames, uint32_t count,
		       const uint32_t *evals, uint32_t eval_count);
	/* kind is an enum lw_mark (unknown kinds are passed on too). */
	int (*mark)(void *ctx, uint64_t kind);
	/* An allocation call that failed: enum lw_api, enum lw_mem_kind (as
	 * written, unchecked), the size asked for and the API's error code. */
	int (*alloc_failed)(void *ctx, uint64_t api, uint64_t kind,
			    uint64_t size, uint64_t error);
	/*
	 * Every LW_TRACE_PROGRESS_RECORDS records: bytes read so far, of
	 * total. Everything before offset has been read (its bytes may still
	 * be referenced through struct lw_bytes).
	 */
	int (*progress)(void *ctx, size_t offset, size_t total);
	/* A caching allocator's segment (key: address or handle) reserved,
	 * and given back; device -1 where unknown. */
	int (*segment)(void *ctx, uint64_t key, uint64_t size, int64_t device);
	int (*segment_free)(void *ctx, uint64_t key);
	/* PyTorch's allocator ran out of memory: the request, and its own
	 * allocated and reserved counters then. */
	int (*oom)(void *ctx, uint64_t size, uint64_t allocated,
		   uint64_t reserved, int64_t device);
	/* A holder of the allocation at address (0: none found, the search
	 * was cut): path and root string ids, objects, graph nodes, enum
	 * lw_holder_flags. */
	int (*holder)(void *ctx, uint64_t address, uint64_t path,
		      uint64_t root, uint64_t objects, uint64_t graph,
		      uint64_t flags);
	/*
	 * A SHORT_LIVED record, checked whole first: each of its changes
	 * (stacks defined, kinds known, gc figures within the others), then
	 * the record itself.
	 */
	int (*short_lived_change)(void *ctx,
				  const struct lw_trace_short_lived_change *c);
	int (*short_lived)(void *ctx, const struct lw_trace_short_lived *rec);
	/* Where Python code comes from: enum lw_pypath_kind (as written,
	 * unchecked), path and name string ids (name 0: none). */
	int (*pypath)(void *ctx, uint64_t kind, uint64_t path, uint64_t name);
};

/* Records between two progress callbacks (a power of two). */
#define LW_TRACE_PROGRESS_RECORDS (1u << 18)

/* Where a trace that stops early stops (struct lw_trace_result). */
enum lw_trace_cut {
	LW_TRACE_CUT_NONE,
	/* Between two records, or two blocks: the process was killed,
	 * replaced by an exec, or is still running. */
	LW_TRACE_CUT_BETWEEN,
	/* Inside a record (a trace without checksums): a write that stopped
	 * part-way, or a copy cut short. */
	LW_TRACE_CUT_RECORD,
	/* Inside a block its CHECKSUM record announced: a write that stopped
	 * part-way (a full disk, a file size limit) or is still under way.
	 * That block's records were read, but could not be checked. */
	LW_TRACE_CUT_BLOCK,
};

struct lw_trace_result {
	struct lw_trace_header header;
	/* An END record was read: the writer closed the trace cleanly. */
	bool complete;
	/* The trace stops early (no END record, or a record cut off by the
	 * end of the buffer): everything up to end_offset was read. */
	bool truncated;
	enum lw_trace_cut cut;	/* where, when truncated */
	/* LW_TRACE_CUT_RECORD, _BLOCK: the bytes the record or block
	 * declared, and those of it the file holds. */
	uint64_t cut_declared;
	size_t cut_present;
	uint64_t records;	/* complete records read */
	size_t end_offset;	/* just past the last complete record */
	/* Zero bytes at the end taken as space that was never written (a
	 * preallocated file, or a crash before the data reached the disk). */
	size_t zero_tail;
	/* The trace's blocks carry checksums (lw-format.h), and how many of
	 * them were checked and found sound. */
	bool checksummed;
	uint64_t blocks_verified;
	/*
	 * A block failed its checksum: the read stopped before it, at
	 * end_offset (truncated is set too); what came before is sound.
	 * damaged_block counts from
	 * 1; events_not_read is what the trace's END record says it holds
	 * beyond what was read, or UINT64_MAX when that cannot be known.
	 * message says it in words.
	 */
	bool damaged;
	uint64_t damaged_block;
	uint64_t events_not_read;
	/* When the read fails: where and why, as one line of text. */
	size_t error_offset;
	char message[192];
};

/*
 * Gives back the whole pages of a mapped trace's data before offset that
 * were not given back yet (*dropped: up to where they were). Touched again,
 * a page is read again from the file.
 */
void lw_trace_release_read(const uint8_t *data, size_t *dropped,
			   size_t offset);

/*
 * Why a usable trace is not complete, in words that follow "trace: " (e.g.
 * "TRUNCATED: ..."), into out; "" for a complete trace.
 */
void lw_trace_describe_end(const struct lw_trace_result *result, char *out,
			   size_t size);
/* A damaged trace's damage, in words: which block, what is not read. */
void lw_trace_describe_damage(const struct lw_trace_result *result,
			      char *out, size_t size);

/*
 * Reads the trace in [buf, buf + len), calling ops with ctx for each record.
 *
 * Returns 0 for a usable trace, complete, truncated or damaged after a
 * sound part (see result). Returns
 * -ENODATA for an empty buffer, -EINVAL when it is not a leakwatch trace or
 * its header is incomplete, -EPROTONOSUPPORT for a newer format version,
 * -EBADMSG for corruption, or the negative errno a callback returned; in
 * each case result->message says what is wrong in words (for the messages
 * of the reader itself, in the form the CLI prints after "path: ").
 */
int lw_trace_read(const uint8_t *buf, size_t len,
		  const struct lw_trace_ops *ops, void *ctx,
		  struct lw_trace_result *result);

#endif
