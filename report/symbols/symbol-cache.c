/* SPDX-License-Identifier: MIT */
/*
 * The symbol cache (symbol-cache.h). A file holds, little-endian:
 *
 *   "LWSYMS2\n", the build id's length (u32) and its bytes (64, zero
 *   padded), the library file's size (u64) and modification time (u64,
 *   ns), the number of entries (u32), the size of what follows (u64) and
 *   its FNV-1a hash (u64); then each entry: the address (u64), the
 *   number of frames (u32), and each frame's line (u32), function and file
 *   (a u32 length, UINT32_MAX for none, then the bytes).
 *
 * The hash is checked before anything is taken from a file, so that a
 * torn or damaged file is ignored as a whole.
 */
#include "symbol-cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-hash.h"

#define MAGIC "LWSYMS2\n"
#define MAX_BUILD_ID 64
#define STAMP_SIZE (8 + 8)
#define HEADER_SIZE (8 + 4 + MAX_BUILD_ID + STAMP_SIZE + 4 + 8 + 8)
#define COUNT_AT (8 + 4 + MAX_BUILD_ID + STAMP_SIZE)
/* A file larger than this is not read, and writing stops there: the
 * entries this process used come first. */
#define MAX_FILE_SIZE (8u << 20)
#define MAX_FRAMES 1024
#define MAX_STRING (64u << 10)
#define NO_STRING UINT32_MAX

struct entry {
	uint64_t address;
	struct lw_sym_frame *frames;	/* NULL: empty slot */
	uint32_t frame_count;
	bool fresh;		/* found here, not read from the file */
	bool used;		/* looked up by this process */
};

struct lw_symcache {
	struct lw_symcache *next;
	unsigned refs;
	uint8_t build_id[MAX_BUILD_ID];
	size_t build_id_len;
	struct lw_symcache_stamp stamp;
	struct entry *slots;
	size_t capacity;	/* a power of two */
	size_t count;
	size_t fresh;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Kept from the first symbolizer that asks to the end of the process:
 * the traces of a command that are read one after the other share them. */
static struct lw_symcache *caches;
static bool freed_at_exit;
static unsigned temp_serial;

static bool turned_off(const char *setting)
{
	return strcmp(setting, "0") == 0 || strcmp(setting, "no") == 0 ||
	       strcmp(setting, "off") == 0 || strcmp(setting, "false") == 0;
}

/* The words that turn it on: on, in the default directory, as when the
 * variable is not set (not a directory of that name in the current one). */
static bool turned_on(const char *setting)
{
	return strcmp(setting, "1") == 0 || strcmp(setting, "yes") == 0 ||
	       strcmp(setting, "on") == 0 || strcmp(setting, "true") == 0;
}

int lw_symcache_dir(char **out)
{
	const char *setting = getenv("LEAKWATCH_SYMBOL_CACHE");
	const char *base = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n;

	*out = NULL;
	if (setting && setting[0] && !turned_on(setting)) {
		if (turned_off(setting))
			return 0;
		*out = strdup(setting);
		return *out ? 0 : -ENOMEM;
	}
	/* The XDG base directory specification: relative paths are
	 * invalid and ignored. */
	if (base && base[0] == '/')
		n = asprintf(out, "%s/leakwatch/symbols", base);
	else if (home && home[0] == '/')
		n = asprintf(out, "%s/.cache/leakwatch/symbols", home);
	else
		return 0;
	if (n < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void free_frames(struct lw_sym_frame *frames, uint32_t count)
{
	for (uint32_t i = 0; frames && i < count; i++) {
		free((char *)frames[i].function);
		free((char *)frames[i].file);
	}
	free(frames);
}

static size_t slot_of(const struct lw_symcache *c, uint64_t address)
{
	return (size_t)(lw_hash_mix(address) >> 32) & (c->capacity - 1);
}

static struct entry *find_entry(const struct lw_symcache *c, uint64_t address)
{
	for (size_t i = slot_of(c, address); c->slots[i].frames;
	     i = (i + 1) & (c->capacity - 1)) {
		if (c->slots[i].address == address)
			return &c->slots[i];
	}
	return NULL;
}

static int grow(struct lw_symcache *c)
{
	size_t capacity = c->capacity * 2;
	struct entry *old = c->slots, *slots = calloc(capacity, sizeof(*slots));
	size_t old_capacity = c->capacity;

	if (!slots)
		return -ENOMEM;
	c->slots = slots;
	c->capacity = capacity;
	for (size_t i = 0; i < old_capacity; i++) {
		size_t j;

		if (!old[i].frames)
			continue;
		for (j = slot_of(c, old[i].address); slots[j].frames;
		     j = (j + 1) & (capacity - 1))
			;
		slots[j] = old[i];
	}
	free(old);
	return 0;
}

/* Takes frames (owned from then on, freed on failure). */
static int insert(struct lw_symcache *c, uint64_t address,
		  struct lw_sym_frame *frames, uint32_t count, bool fresh)
{
	size_t i;

	if ((c->count + 1) * 2 > c->capacity && grow(c) < 0) {
		free_frames(frames, count);
		return -ENOMEM;
	}
	for (i = slot_of(c, address); c->slots[i].frames;
	     i = (i + 1) & (c->capacity - 1))
		;
	c->slots[i] = (struct entry){ .address = address, .frames = frames,
				      .frame_count = count, .fresh = fresh };
	c->count++;
	c->fresh += fresh;
	return 0;
}

static char *file_path(const char *dir, const struct lw_symcache *c)
{
	char hex[2 * MAX_BUILD_ID + 1];
	char *path;

	for (size_t i = 0; i < c->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", c->build_id[i]);
	hex[2 * c->build_id_len] = '\0';
	if (asprintf(&path, "%s/%s", dir, hex) < 0)
		return NULL;
	return path;
}

/* A reader of a file's bytes that fails once past the end. */
struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

static const uint8_t *take(struct cursor *cur, size_t len)
{
	const uint8_t *at = cur->p;

	if (cur->bad || (size_t)(cur->end - cur->p) < len) {
		cur->bad = true;
		return NULL;
	}
	cur->p += len;
	return at;
}

static uint32_t take_u32(struct cursor *cur)
{
	const uint8_t *p = take(cur, 4);
	uint32_t v;

	if (!p)
		return 0;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t take_u64(struct cursor *cur)
{
	const uint8_t *p = take(cur, 8);
	uint64_t v;

	if (!p)
		return 0;
	memcpy(&v, p, 8);
	return v;
}

/* A string of the file: NULL with *ok true for none. */
static char *take_string(struct cursor *cur, bool *ok)
{
	uint32_t len = take_u32(cur);
	const uint8_t *bytes;
	char *s;

	*ok = false;
	if (cur->bad)
		return NULL;
	if (len == NO_STRING) {
		*ok = true;
		return NULL;
	}
	if (len > MAX_STRING || !(bytes = take(cur, len)) ||
	    memchr(bytes, '\0', len)) {
		cur->bad = true;
		return NULL;
	}
	s = strndup((const char *)bytes, len);
	*ok = s != NULL;
	return s;
}

/* The entries of a file's payload that c does not hold yet. A damaged
 * entry stops the read (the hash was right: the file is not ours). */
static int merge_payload(struct lw_symcache *c, struct cursor *cur,
			 uint32_t entries)
{
	for (uint32_t e = 0; e < entries && !cur->bad; e++) {
		uint64_t address = take_u64(cur);
		uint32_t count = take_u32(cur);
		struct lw_sym_frame *frames;
		int rc;

		if (cur->bad || count == 0 || count > MAX_FRAMES)
			return 0;
		frames = calloc(count, sizeof(*frames));
		if (!frames)
			return -ENOMEM;
		for (uint32_t i = 0; i < count; i++) {
			bool ok_function, ok_file;

			frames[i].line = take_u32(cur);
			frames[i].function = take_string(cur, &ok_function);
			frames[i].file = ok_function ? take_string(cur, &ok_file)
						     : NULL;
			if (!ok_function || !ok_file) {
				free_frames(frames, count);
				return cur->bad ? 0 : -ENOMEM;
			}
		}
		if (find_entry(c, address)) {
			free_frames(frames, count);
			continue;
		}
		if ((rc = insert(c, address, frames, count, false)) < 0)
			return rc;
	}
	return 0;
}

/* Reads the whole of a regular file of ours, up to MAX_FILE_SIZE. */
static uint8_t *read_file(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t got = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || st.st_size < HEADER_SIZE ||
	    st.st_size > MAX_FILE_SIZE ||
	    !(buf = malloc((size_t)st.st_size)))
		goto fail;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return buf;

fail:
	free(buf);
	close(fd);
	return NULL;
}

/* Adds the entries of c's file that c does not hold. Returns 0 (also for
 * a file that is missing, not ours or damaged) or -ENOMEM. */
static int load(struct lw_symcache *c, const char *dir)
{
	struct cursor cur;
	uint8_t *buf;
	size_t len;
	char *path;
	uint32_t id_len, entries;
	uint64_t payload, hash;
	int rc = 0;

	if (!(path = file_path(dir, c)))
		return -ENOMEM;
	buf = read_file(path, &len);
	free(path);
	if (!buf)
		return 0;
	/* read_file() read HEADER_SIZE bytes at least. */
	cur = (struct cursor){ .p = buf, .end = buf + len };
	if (memcmp(take(&cur, 8), MAGIC, 8) != 0)
		goto out;
	id_len = take_u32(&cur);
	if (id_len != c->build_id_len ||
	    memcmp(take(&cur, MAX_BUILD_ID), c->build_id, id_len) != 0)
		goto out;
	/* The same build id, another file: a library rebuilt under a build
	 * id given by hand (-Wl,--build-id=0x...) keeps it, its names move. */
	if (take_u64(&cur) != c->stamp.size ||
	    take_u64(&cur) != c->stamp.mtime_ns)
		goto out;
	entries = take_u32(&cur);
	payload = take_u64(&cur);
	hash = take_u64(&cur);
	if (payload != (uint64_t)(cur.end - cur.p) ||
	    lw_fnv1a(LW_FNV1A_BASIS, cur.p, (size_t)payload) != hash)
		goto out;
	rc = merge_payload(c, &cur, entries);
out:
	free(buf);
	return rc;
}

/* At exit: every cache, saved already, is let go. */
static void free_all(void)
{
	pthread_mutex_lock(&lock);
	while (caches) {
		struct lw_symcache *c = caches;

		caches = c->next;
		for (size_t i = 0; i < c->capacity; i++)
			free_frames(c->slots[i].frames, c->slots[i].frame_count);
		free(c->slots);
		free(c);
	}
	pthread_mutex_unlock(&lock);
}

struct lw_symcache *lw_symcache_get(const uint8_t *build_id, size_t len,
				    const struct lw_symcache_stamp *stamp)
{
	struct lw_symcache *c;
	char *dir = NULL;

	if (len == 0 || len > MAX_BUILD_ID)
		return NULL;
	pthread_mutex_lock(&lock);
	for (c = caches; c; c = c->next) {
		if (c->build_id_len == len &&
		    memcmp(c->build_id, build_id, len) == 0 &&
		    c->stamp.size == stamp->size &&
		    c->stamp.mtime_ns == stamp->mtime_ns) {
			c->refs++;
			goto out;
		}
	}
	if (lw_symcache_dir(&dir) < 0 || !dir)
		goto out;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out;
	memcpy(c->build_id, build_id, len);
	c->build_id_len = len;
	c->stamp = *stamp;
	c->capacity = 64;
	c->slots = calloc(c->capacity, sizeof(*c->slots));
	if (!c->slots || load(c, dir) < 0) {
		free(c->slots);
		free(c);
		c = NULL;
		goto out;
	}
	c->refs = 1;
	c->next = caches;
	if (!caches && !freed_at_exit)
		freed_at_exit = atexit(free_all) == 0;
	caches = c;
out:
	pthread_mutex_unlock(&lock);
	free(dir);
	return c;
}

int lw_symcache_find(struct lw_symcache *c, uint64_t address,
		     struct lw_symbol *sym)
{
	struct lw_sym_frame *frames = NULL;
	struct entry *e;
	int rc = 0;

	pthread_mutex_lock(&lock);
	e = find_entry(c, address);
	if (!e)
		goto out;
	e->used = true;
	frames = calloc(e->frame_count, sizeof(*frames));
	if (!frames) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < e->frame_count; i++) {
		const struct lw_sym_frame *f = &e->frames[i];

		frames[i].line = f->line;
		frames[i].function = f->function ? strdup(f->function) : NULL;
		frames[i].file = f->file ? strdup(f->file) : NULL;
		if ((f->function && !frames[i].function) ||
		    (f->file && !frames[i].file)) {
			free_frames(frames, i + 1);
			rc = -ENOMEM;
			goto out;
		}
	}
	sym->frames = frames;
	sym->frame_count = e->frame_count;
	rc = 1;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

int lw_symcache_add(struct lw_symcache *c, uint64_t address,
		    const struct lw_symbol *sym)
{
	struct lw_sym_frame *frames;
	int rc = 0;

	if (sym->frame_count == 0 || sym->frame_count > MAX_FRAMES)
		return 0;
	for (unsigned i = 0; i < sym->frame_count; i++) {
		const struct lw_sym_frame *f = &sym->frames[i];

		/* Not kept: the file could not say it. */
		if ((f->function && strlen(f->function) > MAX_STRING) ||
		    (f->file && strlen(f->file) > MAX_STRING))
			return 0;
	}
	frames = calloc(sym->frame_count, sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	for (unsigned i = 0; i < sym->frame_count; i++) {
		const struct lw_sym_frame *f = &sym->frames[i];

		frames[i].line = f->line;
		frames[i].function = f->function ? strdup(f->function) : NULL;
		frames[i].file = f->file ? strdup(f->file) : NULL;
		if ((f->function && !frames[i].function) ||
		    (f->file && !frames[i].file)) {
			free_frames(frames, sym->frame_count);
			return -ENOMEM;
		}
	}
	pthread_mutex_lock(&lock);
	if (find_entry(c, address)) {
		free_frames(frames, sym->frame_count);
	} else {
		rc = insert(c, address, frames, sym->frame_count, true);
		if (rc == 0)
			find_entry(c, address)->used = true;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

/* A growable byte buffer that stops at MAX_FILE_SIZE. */
struct out {
	uint8_t *data;
	size_t len, capacity;
};

static bool put(struct out *o, const void *p, size_t len)
{
	if (len > MAX_FILE_SIZE - o->len)
		return false;
	if (o->len + len > o->capacity) {
		size_t capacity = o->capacity ? o->capacity : 65536;
		uint8_t *data;

		while (capacity < o->len + len)
			capacity *= 2;
		if (!(data = realloc(o->data, capacity)))
			return false;
		o->data = data;
		o->capacity = capacity;
	}
	memcpy(o->data + o->len, p, len);
	o->len += len;
	return true;
}

static bool put_u32(struct out *o, uint32_t v)
{
	return put(o, &v, 4);
}

static bool put_string(struct out *o, const char *s)
{
	size_t len = s ? strlen(s) : 0;

	if (!s)
		return put_u32(o, NO_STRING);
	return put_u32(o, (uint32_t)len) && put(o, s, len);
}

/* One entry, or nothing when the file would be too large. */
static bool put_entry(struct out *o, const struct entry *e)
{
	size_t mark = o->len;

	if (put(o, &e->address, 8) && put_u32(o, e->frame_count)) {
		uint32_t i;

		for (i = 0; i < e->frame_count; i++) {
			const struct lw_sym_frame *f = &e->frames[i];

			if (!put_u32(o, f->line) || !put_string(o, f->function) ||
			    !put_string(o, f->file))
				break;
		}
		if (i == e->frame_count)
			return true;
	}
	o->len = mark;
	return false;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Each missing directory of path, made 0700. */
static int make_dirs(const char *path)
{
	char *copy = strdup(path);
	struct stat st;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (char *p = copy + 1; rc == 0; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		/* 0700 whatever the umask. */
		if (mkdir(copy, 0700) == 0)
			chmod(copy, 0700);
		else if (errno != EEXIST)
			rc = -errno;
		*p = c;
		if (c == '\0')
			break;
	}
	free(copy);
	if (rc == 0 && (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)))
		rc = -ENOTDIR;
	return rc;
}

/* Writes c's file anew: the entries used here first, then the others,
 * up to MAX_FILE_SIZE. */
static void save(struct lw_symcache *c)
{
	struct out o = { 0 };
	static const uint8_t zeros[4 + 8 + 8];
	uint8_t id[MAX_BUILD_ID] = { 0 };
	uint32_t id_len = (uint32_t)c->build_id_len, entries = 0;
	uint64_t payload, hash;
	char *dir = NULL, *path = NULL, *temp = NULL;
	bool written;
	int fd;

	if (lw_symcache_dir(&dir) < 0 || !dir || make_dirs(dir) < 0)
		goto out;
	/* What other processes added since it was read. */
	if (load(c, dir) < 0)
		goto out;
	memcpy(id, c->build_id, c->build_id_len);
	/* The count, size and hash are filled in below. */
	if (!put(&o, MAGIC, 8) || !put_u32(&o, id_len) ||
	    !put(&o, id, sizeof(id)) || !put(&o, &c->stamp.size, 8) ||
	    !put(&o, &c->stamp.mtime_ns, 8) || !put(&o, zeros, 4 + 8 + 8))
		goto out;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < c->capacity; i++) {
			const struct entry *e = &c->slots[i];

			if (e->frames && e->used == (pass == 0) &&
			    put_entry(&o, e))
				entries++;
		}
	}
	payload = o.len - HEADER_SIZE;
	hash = lw_fnv1a(LW_FNV1A_BASIS, o.data + HEADER_SIZE,
			(size_t)payload);
	memcpy(o.data + COUNT_AT, &entries, 4);
	memcpy(o.data + COUNT_AT + 4, &payload, 8);
	memcpy(o.data + COUNT_AT + 12, &hash, 8);
	if (!(path = file_path(dir, c)) ||
	    asprintf(&temp, "%s.%ld.%u.tmp", path, (long)getpid(),
		     temp_serial++) < 0) {
		temp = NULL;
		goto out;
	}
	fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		goto out;
	/* 0600 whatever the umask. */
	written = fchmod(fd, 0600) == 0 && write_all(fd, o.data, o.len) == 0;
	if (close(fd) < 0)
		written = false;
	if (!written || rename(temp, path) < 0)
		unlink(temp);
out:
	free(o.data);
	free(dir);
	free(path);
	free(temp);
}

void lw_symcache_put(struct lw_symcache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&lock);
	if (--c->refs == 0 && c->fresh) {
		save(c);
		for (size_t i = 0; i < c->capacity; i++)
			c->slots[i].fresh = false;
		c->fresh = 0;
	}
	pthread_mutex_unlock(&lock);
}
