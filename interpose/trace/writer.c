/* SPDX-License-Identifier: MIT */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-checksum.h"
#include "lw-format.h"

_Static_assert(LW_WRITER_BUFFER_SIZE <= LW_TRACE_RECORD_MAX,
	       "a block is at most LW_TRACE_RECORD_MAX bytes");

/* Room for the largest record built in place: a string-bearing one is
 * written through lw_writer_ext, which checks its own size. */
#define HOT_RECORD_MAX (1 + 3 * LW_VARINT_MAX)

static int create_trace_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      0600);
	return fd >= 0 ? fd : -errno;
}

/*
 * Whether the existing file at path is a plain file of ours with a single
 * name. In a shared directory someone else's file, or a link planted to
 * make us write where it points, is left alone and nothing is recorded.
 */
static int is_own_file(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return 0;
	return S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       st.st_nlink == 1;
}

/* "dir/run.trace" numbered n: "dir/run-n.trace"; "dir/run": "dir/run-n". */
static int numbered_path(const char *path, unsigned n, char *out,
			 size_t size)
{
	const char *base = strrchr(path, '/');
	const char *dot = strrchr(base ? base + 1 : path, '.');
	size_t stem = dot && dot != (base ? base + 1 : path) ?
			      (size_t)(dot - path) : strlen(path);
	int len = snprintf(out, size, "%.*s-%u%s", (int)stem, path, n,
			   path + stem);
	return len > 0 && (size_t)len < size;
}

/*
 * Creates the trace, never over an existing file: a file of ours already
 * there (the trace of an earlier program this process exec()ed from, which
 * has the same pid, or of an earlier run) is kept, and the next free
 * numbered name is used instead; path is updated to the name used.
 */
static int open_trace_file(char *path, size_t path_size)
{
	char alt[PATH_MAX];
	int fd = create_trace_file(path);

	if (fd >= 0 || fd != -EEXIST)
		return fd;
	if (!is_own_file(path))
		return -EEXIST;
	for (unsigned n = 1; n < 1000; n++) {
		if (!numbered_path(path, n, alt, sizeof(alt)) ||
		    strlen(alt) >= path_size)
			return -ENAMETOOLONG;
		fd = create_trace_file(alt);
		if (fd >= 0) {
			memcpy(path, alt, strlen(alt) + 1);
			return fd;
		}
		if (fd != -EEXIST)
			return fd;
	}
	return -EEXIST;
}

/*
 * Moves fd to a number the program's own open() calls will not take: they
 * take the lowest free one, and the trace's sits near the top of the
 * descriptor limit (at most 1024, so that the kernel's table of the
 * process's descriptors stays small). Keeps fd where no such number is
 * free.
 */
static int move_high(int fd)
{
	struct rlimit rl;
	rlim_t top = 1024;
	int high;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top)
		top = rl.rlim_cur;
	if (top < 128 || (rlim_t)fd >= top - 64)
		return fd;
	high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top - 64));
	if (high < 0)
		return fd;
	close(fd);
	return high;
}

/* Whether fd is the file of device dev and inode ino. */
static int is_file(int fd, uint64_t dev, uint64_t ino)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev &&
	       (uint64_t)st.st_ino == ino;
}

/*
 * The descriptor is no longer the trace's: opens the trace again, only if
 * its path still names the same file, of the length written so far
 * (size), never through a link; O_NONBLOCK so that a FIFO put in its place
 * cannot block (the same file is a regular one, where it changes nothing).
 * The old number is the program's now, or free: it is left alone.
 */
static int reopen(struct lw_writer *w, uint64_t size)
{
	struct stat st;
	int fd = open(w->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NOCTTY |
				       O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_dev != w->dev || (uint64_t)st.st_ino != w->ino ||
	    (uint64_t)st.st_size != size) {
		close(fd);
		return -1;
	}
	w->fd = move_high(fd);
	return 0;
}

/* The descriptor is not the trace's and the trace cannot be opened again:
 * the writer stops, forgetting the descriptor without closing it. */
static void lose_descriptor(struct lw_writer *w)
{
	w->fd = -1;
	w->failed = 1;
	w->failure_errno = EBADF;
	w->descriptor_lost = 1;
}

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int lw_writer_open(struct lw_writer *w, char *path, size_t path_size,
		   uint64_t start_ns, uint32_t pid)
{
	struct rlimit rl;
	struct stat st;
	int fd = open_trace_file(path, path_size);

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	w->fd = move_high(fd);
	w->dev = (uint64_t)st.st_dev;
	w->ino = (uint64_t)st.st_ino;
	w->path = path;
	w->descriptor_lost = 0;
	w->failed = 0;
	w->failure_errno = 0;
	w->used = 0;
	w->file_offset = 0;
	w->prev_addr = 0;
	w->events = 0;
	w->summed_events = 0;
	w->lost = 0;
	w->events_flushed = 0;
	/* Writing past RLIMIT_FSIZE raises SIGXFSZ, which kills the program
	 * by default: stop short of the limit instead. */
	w->file_limit = UINT64_MAX;
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		w->file_limit = rl.rlim_cur;

	uint8_t *h = w->buf;
	memset(h, 0, LW_TRACE_HEADER_SIZE);
	memcpy(h, LW_TRACE_MAGIC, LW_TRACE_MAGIC_SIZE);
	put_u16(h + 8, LW_TRACE_VERSION);
	put_u16(h + 10, LW_TRACE_HEADER_SIZE);
	put_u32(h + 12, LW_TRACE_FLAG_CHECKSUMS);
	put_u64(h + 16, start_ns);
	put_u32(h + 24, pid);
	w->used = LW_TRACE_HEADER_SIZE;
	w->chain = lw_checksum(0, h, LW_TRACE_HEADER_SIZE);
	return lw_writer_flush(w);
}

/*
 * Finishes the block in the buffer: its CHECKSUM record goes in front of
 * its records (after the header in the file's first bytes), so that a
 * reader checks the block before it reads it. Hashing costs under an
 * instruction per byte, a few per event.
 */
static void seal_block(struct lw_writer *w)
{
	size_t start = w->file_offset == 0 ? LW_TRACE_HEADER_SIZE : 0;
	uint8_t *block = w->buf + start;
	size_t len;

	if (w->used <= start)
		return;
	len = w->used - start;
	w->chain = lw_checksum(w->chain, block, len);
	memmove(block + LW_CHECKSUM_RECORD_SIZE, block, len);
	lw_checksum_record(block, (uint32_t)len, w->chain);
	w->used += LW_CHECKSUM_RECORD_SIZE;
}

int lw_writer_flush(struct lw_writer *w)
{
	size_t done = 0;

	if (w->fd < 0 || w->failed) {
		w->used = 0;
		return w->failed ? -w->failure_errno : 0;
	}
	seal_block(w);
	if (w->file_offset + w->used > w->file_limit) {
		w->failed = 1;
		w->failure_errno = EFBIG;
		w->used = 0;
		w->lost += w->events - w->events_flushed;
		w->events_flushed = w->events;
		return -EFBIG;
	}
	/* Once per buffer written, not per event. */
	if (!is_file(w->fd, w->dev, w->ino) && reopen(w, w->file_offset) < 0)
		lose_descriptor(w);
	while (!w->failed && done < w->used) {
		ssize_t n = write(w->fd, w->buf + done, w->used - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* Closed by another thread of the program since the
			 * check: the same file opened again, or stop. */
			if (errno == EBADF) {
				if (reopen(w, w->file_offset + done) < 0)
					lose_descriptor(w);
				continue;
			}
			w->failed = 1;
			w->failure_errno = errno;
			break;
		}
		if (n == 0) {
			w->failed = 1;
			w->failure_errno = EIO;
			break;
		}
		done += (size_t)n;
	}
	w->file_offset += done;
	w->used = 0;
	if (w->failed)
		w->lost += w->events - w->events_flushed;
	w->events_flushed = w->events;
	return w->failed ? -w->failure_errno : 0;
}

void lw_writer_close(struct lw_writer *w, int end_record, uint64_t dropped)
{
	if (w->fd < 0)
		return;
	if (end_record) {
		uint8_t payload[2 * LW_VARINT_MAX];
		size_t n = lw_varint_put(payload, w->events - w->summed_events);
		n += lw_varint_put(payload + n, dropped);
		lw_writer_ext(w, LW_REC_END, payload, n);
	}
	lw_writer_flush(w);
	if (w->fd >= 0 && is_file(w->fd, w->dev, w->ino))
		close(w->fd);
	w->fd = -1;
}

void lw_writer_abandon(struct lw_writer *w)
{
	if (w->fd >= 0 && is_file(w->fd, w->dev, w->ino))
		close(w->fd);
	w->fd = -1;
	w->used = 0;
}

/* Makes room for n bytes; false when nothing can be written any more. */
static inline int reserve(struct lw_writer *w, size_t n)
{
	if (w->fd < 0 || w->failed)
		return 0;
	if (w->used + n > LW_WRITER_BUFFER_SIZE && lw_writer_flush(w) < 0)
		return 0;
	return 1;
}

static inline void put_addr(struct lw_writer *w, uint64_t addr)
{
	int64_t delta = (int64_t)(addr - w->prev_addr);
	w->used += lw_varint_put(w->buf + w->used, lw_zigzag_encode(delta));
	w->prev_addr = addr;
}

void lw_writer_alloc(struct lw_writer *w, unsigned kind, uint64_t addr,
		     uint64_t size, uint64_t stack_id)
{
	if (!reserve(w, HOT_RECORD_MAX)) {
		w->lost += w->failed;
		return;
	}
	w->buf[w->used++] = (uint8_t)(LW_REC_ALLOC_BASE + kind);
	put_addr(w, addr);
	w->used += lw_varint_put(w->buf + w->used, size);
	w->used += lw_varint_put(w->buf + w->used, stack_id);
	w->events++;
}

void lw_writer_free(struct lw_writer *w, uint64_t addr)
{
	if (!reserve(w, HOT_RECORD_MAX)) {
		w->lost += w->failed;
		return;
	}
	w->buf[w->used++] = LW_REC_FREE;
	put_addr(w, addr);
	w->events++;
}

void lw_writer_tag(struct lw_writer *w, uint8_t tag)
{
	if (!reserve(w, 1)) {
		w->lost += w->failed;
		return;
	}
	w->buf[w->used++] = tag;
	w->events++;
}

void lw_writer_tag_u64(struct lw_writer *w, uint8_t tag, uint64_t v)
{
	if (!reserve(w, 1 + LW_VARINT_MAX))
		return;
	w->buf[w->used++] = tag;
	w->used += lw_varint_put(w->buf + w->used, v);
}

void lw_writer_context(struct lw_writer *w, unsigned api, int64_t device,
		       uint64_t stream)
{
	if (!reserve(w, HOT_RECORD_MAX))
		return;
	w->buf[w->used++] = LW_REC_CONTEXT;
	w->used += lw_varint_put(w->buf + w->used, api);
	w->used += lw_varint_put(w->buf + w->used, lw_zigzag_encode(device));
	w->used += lw_varint_put(w->buf + w->used, stream);
}

void lw_writer_ext(struct lw_writer *w, uint8_t tag, const uint8_t *payload,
		   size_t len)
{
	size_t total = 1 + LW_VARINT_MAX + len;

	if (total > LW_WRITER_BUFFER_SIZE) /* never produced by the shim */
		return;
	if (!reserve(w, total))
		return;
	w->buf[w->used++] = tag;
	w->used += lw_varint_put(w->buf + w->used, len);
	memcpy(w->buf + w->used, payload, len);
	w->used += len;
}

void lw_writer_short_lived(struct lw_writer *w, const uint8_t *payload,
			   size_t len, uint64_t events)
{
	size_t total = 1 + LW_VARINT_MAX + len;

	if (total > LW_WRITER_BUFFER_SIZE) /* never produced by the shim */
		return;
	if (!reserve(w, total)) {
		w->lost += w->failed ? events : 0;
		return;
	}
	w->buf[w->used++] = LW_REC_SHORT_LIVED;
	w->used += lw_varint_put(w->buf + w->used, len);
	memcpy(w->buf + w->used, payload, len);
	w->used += len;
	w->events += events;
	w->summed_events += events;
}

void lw_writer_stack(struct lw_writer *w, uint64_t id, const uintptr_t *frames,
		     unsigned depth)
{
	uint8_t payload[(2 + 256) * LW_VARINT_MAX];
	uint64_t prev = 0;
	size_t n;

	if (depth > 256)
		depth = 256;
	n = lw_varint_put(payload, id);
	n += lw_varint_put(payload + n, depth);
	for (unsigned i = 0; i < depth; i++) {
		int64_t delta = (int64_t)(frames[i] - prev);
		n += lw_varint_put(payload + n, lw_zigzag_encode(delta));
		prev = frames[i];
	}
	lw_writer_ext(w, LW_REC_STACK, payload, n);
}

/* Appends a length-prefixed string, cut at limit bytes. */
static size_t put_string(uint8_t *p, const char *s, size_t len, size_t limit)
{
	if (len > limit)
		len = limit;
	size_t n = lw_varint_put(p, len);
	memcpy(p + n, s, len);
	return n + len;
}

#define STRING_LIMIT 4096

void lw_writer_string(struct lw_writer *w, uint64_t id, const char *s)
{
	uint8_t payload[LW_VARINT_MAX + STRING_LIMIT];
	size_t len = strlen(s);
	size_t n = lw_varint_put(payload, id);

	if (len > STRING_LIMIT)
		len = STRING_LIMIT;
	memcpy(payload + n, s, len);
	lw_writer_ext(w, LW_REC_STRING, payload, n + len);
}

static size_t varint_size(uint64_t v)
{
	uint8_t scratch[LW_VARINT_MAX];

	return lw_varint_put(scratch, v);
}

/* Built in the buffer itself: a value may be as long as the command line
 * (LW_WRITER_INFO_MAX), which no stack should hold twice. */
void lw_writer_info(struct lw_writer *w, const char *key, const char *value,
		    size_t value_len)
{
	size_t key_len = strlen(key);

	if (key_len > 64)
		key_len = 64;
	if (value_len > LW_WRITER_INFO_MAX)
		value_len = LW_WRITER_INFO_MAX;
	size_t len = varint_size(key_len) + key_len + varint_size(value_len) +
		     value_len;
	if (!reserve(w, 1 + LW_VARINT_MAX + len))
		return;
	w->buf[w->used++] = LW_REC_INFO;
	w->used += lw_varint_put(w->buf + w->used, len);
	w->used += put_string(w->buf + w->used, key, key_len, key_len);
	w->used += put_string(w->buf + w->used, value, value_len, value_len);
}

void lw_writer_module(struct lw_writer *w, uint64_t bias, uint64_t start,
		      uint64_t end, const char *path)
{
	uint8_t payload[4 * LW_VARINT_MAX + STRING_LIMIT];
	size_t n = lw_varint_put(payload, bias);

	n += lw_varint_put(payload + n, start);
	n += lw_varint_put(payload + n, end);
	n += put_string(payload + n, path, strlen(path), STRING_LIMIT);
	lw_writer_ext(w, LW_REC_MODULE, payload, n);
}
