/* SPDX-License-Identifier: MIT */
#include "trace-file.h"

#include "growth.h"
#include "infer.h"
#include "diagnose.h"
#include "lw-format.h"
#include "rules.h"
#include "usercode.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * A mapped trace that shrinks while it is read (its writer truncated it, a
 * copy of it is under way) would kill the command with SIGBUS at the first
 * access past its new end, in the read or in any view that later reads a
 * string of it. So the handler maps zeros over the rest of the mapping, and
 * the access that faulted goes on, reading zeros; the trace file notices
 * (lw_trace_file_shrank()) and the command refuses it with a message. A
 * SIGBUS elsewhere gets the action it had.
 *
 * Reading every trace into memory instead would cost memory in proportion
 * to the file, and a sigsetjmp() around the read would not cover the views
 * that read strings of the mapping afterwards, nor leave the stdio and
 * allocator state sound.
 */
#define GUARDED_MAX 64

static struct guarded {
	uintptr_t start, end;		/* 0: a free slot */
	volatile sig_atomic_t shrank;
} guarded[GUARDED_MAX];
static uintptr_t page_mask;
static struct sigaction sigbus_before;
static bool sigbus_installed;
/* Traces are opened and closed on the pool's threads (trace-pool.h). */
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
	uintptr_t addr = (uintptr_t)info->si_addr;
	int saved_errno = errno;

	(void)context;
	for (size_t i = 0; i < GUARDED_MAX; i++) {
		struct guarded *g = &guarded[i];
		uintptr_t page = addr & ~page_mask;

		if (!g->start || addr < g->start || addr >= g->end)
			continue;
		if (mmap((void *)page, g->end - page, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED)
			break;
		g->shrank = 1;
		errno = saved_errno;
		return;
	}
	/* Not a trace's: returning faults again, with the old action. */
	sigaction(sig, &sigbus_before, NULL);
	errno = saved_errno;
}

/* Guards the mapping [p, p + len); -1 when no slot is free. */
static int guard_locked(const void *p, size_t len);

static int guard(const void *p, size_t len)
{
	int slot;

	pthread_mutex_lock(&guard_lock);
	slot = guard_locked(p, len);
	pthread_mutex_unlock(&guard_lock);
	return slot;
}

static int guard_locked(const void *p, size_t len)
{
	if (!sigbus_installed) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		page_mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
		if (sigaction(SIGBUS, &sa, &sigbus_before) < 0)
			return -1;
		sigbus_installed = true;
	}
	for (int i = 0; i < GUARDED_MAX; i++) {
		if (!guarded[i].start) {
			guarded[i].shrank = 0;
			guarded[i].end = ((uintptr_t)p + len + page_mask) &
					 ~page_mask;
			guarded[i].start = (uintptr_t)p;
			return i;
		}
	}
	return -1;
}

bool lw_trace_file_shrank(const struct lw_trace_file *tf)
{
	return tf->guard >= 0 && guarded[tf->guard].shrank;
}

/* Bytes of a pipe or device looked at before anything more is read. */
#define SNIFF_SIZE LW_TRACE_MAGIC_SIZE

/*
 * A pipe or a device (a trace streamed through `<(...)`, /dev/zero): its
 * first bytes must be a trace's magic, or only they are kept, for the
 * reader to refuse; a trace is copied into an unlinked temporary file,
 * which is mapped as a regular file is, so that memory does not grow with
 * the trace.
 */
static int map_file(int fd, struct lw_trace_file *tf, size_t size);

static int spool(int fd, struct lw_trace_file *tf)
{
	const char *dir = getenv("TMPDIR");
	uint8_t buf[65536];
	size_t have = 0, total = 0;
	char path[4096];
	int tmp = -1, rc;

	while (have < SNIFF_SIZE) {
		ssize_t n = read(fd, buf + have, SNIFF_SIZE - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		have += (size_t)n;
	}
	if (have < SNIFF_SIZE || memcmp(buf, LW_TRACE_MAGIC, SNIFF_SIZE) != 0) {
		uint8_t *copy = have ? malloc(have) : NULL;

		if (have && !copy)
			return -ENOMEM;
		if (have)
			memcpy(copy, buf, have);
		tf->data = copy;
		tf->len = have;
		return 0;
	}
	if (!dir || !dir[0])
		dir = "/tmp";
	tmp = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (tmp < 0) {
		if (snprintf(path, sizeof(path), "%s/leakwatch-trace-XXXXXX",
			     dir) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		tmp = mkostemp(path, O_CLOEXEC);
		if (tmp < 0)
			return -errno;
		unlink(path);
	}
	for (;;) {
		ssize_t n;

		for (size_t done = 0; done < have;) {
			ssize_t w = write(tmp, buf + done, have - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				rc = w < 0 ? -errno : -EIO;
				goto out;
			}
			done += (size_t)w;
		}
		total += have;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR) {
			have = 0;
			continue;
		}
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		have = (size_t)n;
	}
	rc = map_file(tmp, tf, total);
out:
	close(tmp);
	return rc;
}

static int map_file(int fd, struct lw_trace_file *tf, size_t size)
{
	void *p;

	if (size == 0)
		return 0;
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	madvise(p, size, MADV_SEQUENTIAL);
	tf->data = p;
	tf->len = size;
	tf->mapped = true;
	tf->guard = guard(p, size);
	return 0;
}

static int load(int fd, struct lw_trace_file *tf)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return spool(fd, tf);
	if ((uint64_t)st.st_size > SIZE_MAX)
		return -EFBIG;
	return map_file(fd, tf, (size_t)st.st_size);
}

/*
 * Progress of a long read on a terminal: "leakwatch: reading PATH: 42%",
 * rewritten in place at most five times a second once the read has taken
 * a second (with LEAKWATCH_PROGRESS=1 at once and at every callback; with
 * LEAKWATCH_PROGRESS=0 never), erased at the end. Each thread reading a
 * trace (trace-pool.h) shows its own.
 */
static _Thread_local struct {
	const char *path;
	struct timespec start, last;
	bool shown;
	bool always;
	bool enabled;
} progress;

static double seconds_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static int show_progress(void *ctx, size_t offset, size_t total)
{
	(void)ctx;
	if (!progress.always && seconds_since(&progress.start) < 1.0)
		return 0;
	if (!progress.always && progress.shown &&
	    seconds_since(&progress.last) < 0.2)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &progress.last);
	flockfile(stderr);
	fputs("\rleakwatch: reading ", stderr);
	lw_put_text_str(stderr, progress.path);
	fprintf(stderr, ": %u%%", (unsigned)(total ? offset * 100 / total : 0));
	fflush(stderr);
	funlockfile(stderr);
	progress.shown = true;
	return 0;
}

/* Whether the terminal gets progress lines (see above), for path. */
static void start_progress(const char *path)
{
	const char *setting = getenv("LEAKWATCH_PROGRESS");

	progress.path = path;
	progress.shown = false;
	progress.enabled = !(setting && strcmp(setting, "0") == 0) &&
			   isatty(STDERR_FILENO);
	progress.always = setting && strcmp(setting, "1") == 0;
	clock_gettime(CLOCK_MONOTONIC, &progress.start);
}

static void end_progress(void)
{
	if (progress.shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		progress.shown = false;
	}
}

/*
 * At each progress point of a read: the pages of a mapped trace already
 * read are given back (the model keeps pointers into them, for strings
 * and paths, but the mapping is private and read-only, so a page touched
 * again is read again from the file: the report's memory stays bounded by
 * what the model holds, not by the trace's size), and the terminal hears
 * how far the read is.
 */
static int on_progress(void *ctx, size_t offset, size_t total)
{
	struct lw_trace_file *tf = (struct lw_trace_file *)(
		(char *)ctx - offsetof(struct lw_trace_file, model));

	if (tf->mapped)
		lw_trace_release_read(tf->data, &tf->dropped, offset);
	if (progress.enabled)
		show_progress(ctx, offset, total);
	return 0;
}

/*
 * A trace without STEP records gets a step ending before each iteration of
 * the loop its allocations repeat, if there is one. The look ends at the
 * first STEP record, so it costs a trace that has them next to nothing.
 * A trace that cannot be read is left to the model's read, which says why.
 */
static void infer_steps(struct lw_trace_file *tf)
{
	struct lw_inferred_steps inferred;
	int rc = lw_infer_steps(tf->data, tf->len, on_progress, &tf->model,
				&inferred);

	/* Its pages are read again by the model's read. */
	tf->dropped = 0;
	if (rc == 0)
		tf->model.points.void_steps = inferred.void_steps;
	if (rc < 0 || inferred.anchor == 0)
		return;
	tf->model.points.anchor = inferred.anchor;
	tf->model.points.inferred = true;
}

int lw_trace_file_open(struct lw_trace_file *tf, const char *path,
		       char *message, size_t message_size)
{
	static const uint8_t empty[1];
	struct lw_trace_ops ops;
	int fd, rc;

	memset(tf, 0, sizeof(*tf));
	tf->guard = -1;
	rc = lw_model_init(&tf->model);
	if (rc < 0)
		goto error;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto error;
	}
	rc = load(fd, tf);
	close(fd);
	if (rc < 0)
		goto error;
	start_progress(path);
	if (tf->data)
		infer_steps(tf);
	ops = lw_model_ops;
	ops.progress = on_progress;
	rc = lw_trace_read(tf->data ? tf->data : empty, tf->len, &ops,
			   &tf->model, &tf->result);
	end_progress();
	if (lw_trace_file_shrank(tf)) {
		snprintf(message, message_size, "%s", LW_TRACE_SHRANK_MESSAGE);
		return -EIO;
	}
	if (rc < 0) {
		snprintf(message, message_size, "%s", tf->result.message);
		return rc;
	}
	if ((rc = lw_model_finish(&tf->model)) < 0)
		goto error;
	tf->symbolizer = lw_symbolizer_new(&tf->model);
	if (!tf->symbolizer) {
		rc = -ENOMEM;
		goto error;
	}
	tf->report.path = path;
	tf->report.model = &tf->model;
	tf->report.result = &tf->result;
	tf->report.symbolizer = tf->symbolizer;
	if ((rc = lw_trace_file_set_user_code(tf, NULL)) < 0 ||
	    (rc = lw_locations_init(&tf->locations, &tf->report)) < 0)
		goto error;
	tf->report.locations = &tf->locations;
	tf->report.min_steps = LW_DEFAULT_MIN_STEPS;
	tf->report.data = tf->data ? tf->data : empty;
	tf->report.len = tf->len;
	tf->report.data_mapped = tf->mapped;
	return 0;

error:
	if (rc == -EISDIR)
		/* A run's directory: name what to pass instead. */
		snprintf(message, message_size,
			 "%s; pass the trace files in it (%s/*.trace)",
			 strerror(-rc), path);
	else
		snprintf(message, message_size, "%s", strerror(-rc));
	return rc;
}

void lw_trace_file_damage(const struct lw_trace_file *tf, char *message,
			  size_t size)
{
	char what[256];

	lw_trace_describe_damage(&tf->result, what, sizeof(what));
	snprintf(message, size, "damaged: %s", what);
}

int lw_trace_file_set_user_code(struct lw_trace_file *tf,
				const struct lw_code_dirs *dirs)
{
	struct lw_user_code *code;
	int rc = lw_user_code_new(&tf->model, dirs, &code);

	if (rc < 0)
		return rc;
	lw_user_code_free(tf->report.code);
	tf->report.code = code;
	return 0;
}

int lw_trace_file_analyse(struct lw_trace_file *tf)
{
	return lw_analyse(&tf->report, &tf->analysis);
}

void lw_trace_file_close(struct lw_trace_file *tf)
{
	lw_analysis_fini(&tf->analysis);
	lw_locations_fini(&tf->locations);
	lw_user_code_free(tf->report.code);
	lw_symbolizer_free(tf->symbolizer);
	lw_model_fini(&tf->model);
	if (tf->mapped)
		munmap((void *)tf->data, tf->len);
	else
		free((void *)tf->data);
	if (tf->guard >= 0) {
		pthread_mutex_lock(&guard_lock);
		guarded[tf->guard].start = 0;
		pthread_mutex_unlock(&guard_lock);
	}
	memset(tf, 0, sizeof(*tf));
	tf->guard = -1;
}

int lw_trace_file_set_rules(struct lw_trace_file *tf,
			    const struct lw_rules *rules)
{
	struct lw_model *m = &tf->model;

	tf->report.rules = rules;
	if (!rules || !rules->suppression_count || !m->sites.count ||
	    m->sites.suppressed)
		return 0;
	m->sites.suppressed = calloc(m->sites.count, sizeof(bool));
	if (!m->sites.suppressed)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->sites.count; i++) {
		int rc = lw_site_suppressed(&tf->report, i,
					    &m->sites.suppressed[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}
