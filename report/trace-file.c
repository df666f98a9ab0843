/* SPDX-License-Identifier: MIT */
#include "trace-file.h"

#include "growth.h"
#include "infer.h"
#include "diagnose.h"
#include "rules.h"
#include "usercode.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Reads what cannot be mapped (a pipe, /dev/stdin) into memory. */
static int read_all(int fd, struct lw_trace_file *tf)
{
	size_t capacity = 0, len = 0;
	uint8_t *buf = NULL;

	for (;;) {
		ssize_t n;

		if (len == capacity) {
			size_t next = capacity ? capacity * 2 : 65536;
			uint8_t *p = next > capacity ? realloc(buf, next) : NULL;

			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
			capacity = next;
		}
		n = read(fd, buf + len, capacity - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;

			free(buf);
			return err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	tf->data = buf;
	tf->len = len;
	return 0;
}

static int load(int fd, struct lw_trace_file *tf)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return read_all(fd, tf);
	if (st.st_size == 0)
		return 0;
	if ((uint64_t)st.st_size > SIZE_MAX)
		return -EFBIG;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
	tf->data = p;
	tf->len = (size_t)st.st_size;
	tf->mapped = true;
	return 0;
}

/*
 * Progress of a long read on a terminal: "leakwatch: reading PATH: 42%",
 * rewritten in place at most five times a second once the read has taken
 * a second (with LEAKWATCH_PROGRESS=1 at once and at every callback; with
 * LEAKWATCH_PROGRESS=0 never), erased at the end.
 */
static struct {
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
	fputs("\rleakwatch: reading ", stderr);
	lw_put_text_str(stderr, progress.path);
	fprintf(stderr, ": %u%%", (unsigned)(total ? offset * 100 / total : 0));
	fflush(stderr);
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
	memset(tf, 0, sizeof(*tf));
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
