/* SPDX-License-Identifier: MIT */
/*
 * The trace writer: encodes records (common/lw-format.h) into a bounded
 * buffer and writes it to the trace file with write(2). Not thread-safe:
 * the tracker serialises calls under its lock.
 *
 * Once a write fails (disk full, file size limit, I/O error) the writer
 * stops for good and reports it once; the program is not affected.
 *
 * The trace's descriptor is kept at a high number, and before each write
 * the writer makes sure it is still the trace's file (device and inode):
 * a program may close every descriptor it did not open, or dup2() a file
 * of its own over the number. Then the writer opens the trace again by its
 * path (never following a link, only the same file, at the length it
 * wrote), or, if it cannot, stops as after a failed write; it never writes
 * to, or closes, a descriptor that is no longer the trace's.
 */
#ifndef LW_WRITER_H
#define LW_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "lw-format.h"

#define LW_WRITER_BUFFER_SIZE (64 * 1024)

struct lw_writer {
	int fd;              /* -1 when closed */
	int failed;          /* a write failed: nothing more is written */
	int failure_errno;
	/* The descriptor stopped being the trace's and the file could not
	 * be opened again (failed is set too). */
	int descriptor_lost;
	uint64_t dev, ino;   /* the trace's file */
	const char *path;    /* its path (the caller's buffer) */
	size_t used;         /* bytes in buf */
	uint64_t file_offset;
	uint64_t file_limit; /* RLIMIT_FSIZE, or UINT64_MAX */
	uint64_t prev_addr;  /* for delta-coding addresses */
	uint64_t events;
	/* Allocations, frees and steps not written because a write failed
	 * (those in the buffer it was writing, and every one after it): the
	 * events this trace lacks. */
	uint64_t lost;
	uint64_t events_flushed;	/* events before the buffer */
	/* Of events, the allocations and frees that SHORT_LIVED records
	 * stand for (END counts the records alone). */
	uint64_t summed_events;
	uint64_t chain;		/* the last block's checksum (lw-format.h) */
	/* Records, and room for the CHECKSUM record put in front of them
	 * when the buffer is written. */
	uint8_t buf[LW_WRITER_BUFFER_SIZE + LW_CHECKSUM_RECORD_SIZE];
};

/*
 * Creates the trace file at path (mode 0600, never following a symbolic
 * link, never over an existing file) and writes the header. If a file of
 * ours is already there, the next free name path-1.ext, path-2.ext, ... is
 * used and written back to path (path_size bytes). path must outlive the
 * writer's use (it is opened again if the descriptor is lost). Returns 0
 * or -errno.
 */
int lw_writer_open(struct lw_writer *w, char *path, size_t path_size,
		   uint64_t start_ns, uint32_t pid);

/* Writes out the buffer. Returns 0 or -errno (the writer is then failed;
 * -EBADF with descriptor_lost when the descriptor was lost). Async-signal-
 * safe: system calls only. */
int lw_writer_flush(struct lw_writer *w);

/* Flushes and closes. With end_record, first appends the END record. */
void lw_writer_close(struct lw_writer *w, int end_record, uint64_t dropped);

/* Forgets the buffer and the file without writing (a forked child). */
void lw_writer_abandon(struct lw_writer *w);

void lw_writer_alloc(struct lw_writer *w, unsigned kind, uint64_t addr,
		     uint64_t size, uint64_t stack_id);
void lw_writer_free(struct lw_writer *w, uint64_t addr);
/* A record with no fields (STEP, PHASE_END). */
void lw_writer_tag(struct lw_writer *w, uint8_t tag);
/* A hot record with one varint field (TIME, THREAD). */
void lw_writer_tag_u64(struct lw_writer *w, uint8_t tag, uint64_t v);
void lw_writer_context(struct lw_writer *w, unsigned api, int64_t device,
		       uint64_t stream);
/* An extension record with a ready-made payload. */
void lw_writer_ext(struct lw_writer *w, uint8_t tag, const uint8_t *payload,
		   size_t len);
/* A SHORT_LIVED record (its payload), which stands for events allocations
 * and frees: counted as written, or as lost once writing failed. */
void lw_writer_short_lived(struct lw_writer *w, const uint8_t *payload,
			   size_t len, uint64_t events);
void lw_writer_stack(struct lw_writer *w, uint64_t id, const uintptr_t *frames,
		     unsigned depth);
/* STRING, WARNING, PHASE_BEGIN-like records made of varints and strings. */
void lw_writer_string(struct lw_writer *w, uint64_t id, const char *s);

/* The longest INFO value written whole; a longer one is cut there. */
#define LW_WRITER_INFO_MAX (32 * 1024)

void lw_writer_info(struct lw_writer *w, const char *key, const char *value,
		    size_t value_len);
void lw_writer_module(struct lw_writer *w, uint64_t bias, uint64_t start,
		      uint64_t end, const char *path);

#endif
