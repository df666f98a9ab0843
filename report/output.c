/* SPDX-License-Identifier: MIT */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "render.h"

/* The input that path names (the same file: a hard or symbolic link, or
 * another spelling of the path), or NULL. */
static const char *input_at(const char *path, const char *const *inputs,
			    size_t count)
{
	struct stat out, in;

	if (stat(path, &out) < 0)
		return NULL;
	for (size_t i = 0; i < count; i++) {
		if (stat(inputs[i], &in) == 0 && in.st_dev == out.st_dev &&
		    in.st_ino == out.st_ino)
			return inputs[i];
	}
	return NULL;
}

static int refuse_input(const char *path, const char *input)
{
	fflush(stdout);
	fputs("leakwatch: ", stderr);
	lw_put_text_str(stderr, path);
	fputs(": is the trace ", stderr);
	lw_put_text_str(stderr, input);
	fputs(", which the report reads: not written over it\n", stderr);
	return -1;
}

static int fail(const char *path, int err)
{
	fflush(stdout);
	fputs("leakwatch: ", stderr);
	lw_put_text_str(stderr, path);
	fprintf(stderr, ": %s\n", strerror(err));
	return -1;
}

/* "dir/.name.XXXXXX" for "dir/name": beside it, hidden. */
static char *temporary_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
	size_t len = strlen(path);
	char *name = malloc(len + sizeof(".XXXXXX") + 1);

	if (!name)
		return NULL;
	memcpy(name, path, dir);
	name[dir] = '.';
	memcpy(name + dir + 1, path + dir, len - dir);
	memcpy(name + len + 1, ".XXXXXX", sizeof(".XXXXXX"));
	return name;
}

int lw_output_open(struct lw_output *o, const char *path,
		   const char *const *inputs, size_t count)
{
	const char *input = input_at(path, inputs, count);
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	o->path = path;
	if (input)
		return refuse_input(path, input);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return fail(path, EISDIR);
	/* /dev/stdout, /dev/fd/1, /proc/self/fd/1 name the descriptor
	 * (whatever it is: a terminal, a pipe, a file it was redirected
	 * to), and nothing there is to be replaced. */
	if (strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0 ||
	    (stat(path, &st) == 0 && !S_ISREG(st.st_mode))) {
		/* A terminal, a pipe, /dev/null: written as it is. */
		if (stat(path, &st) == 0 && S_ISBLK(st.st_mode))
			return fail(path, ENOTSUP);
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0 || !(o->file = fdopen(fd, "w"))) {
			int err = errno;

			if (fd >= 0)
				close(fd);
			return fail(path, err);
		}
		return 0;
	}
	if (path[0] == 0 || path[strlen(path) - 1] == '/')
		return fail(path, path[0] ? EISDIR : ENOENT);
	o->temporary = temporary_name(path);
	if (!o->temporary)
		return fail(path, ENOMEM);
	/* mkostemp: a new file, mode 0600, never through a link. */
	fd = mkostemp(o->temporary, O_CLOEXEC);
	if (fd < 0 || !(o->file = fdopen(fd, "w"))) {
		int err = errno;

		if (fd >= 0) {
			close(fd);
			unlink(o->temporary);
		}
		free(o->temporary);
		o->temporary = NULL;
		return fail(path, err);
	}
	return 0;
}

int lw_output_close(struct lw_output *o, bool ok, const char *const *inputs,
		    size_t count)
{
	const char *input;
	int rc = 0, err = 0;

	if (!o->file)
		return 0;
	errno = 0;
	if (fflush(o->file) != 0 || ferror(o->file))
		err = errno ? errno : EIO;
	if (fclose(o->file) != 0 && !err)
		err = errno;
	o->file = NULL;
	if (err && ok)
		rc = fail(o->path, err);
	if (o->temporary) {
		input = rc == 0 && ok ? input_at(o->path, inputs, count) : NULL;
		if (input)
			rc = refuse_input(o->path, input);
		else if (rc == 0 && ok && rename(o->temporary, o->path) < 0)
			rc = fail(o->path, errno);
		if (rc < 0 || !ok)
			unlink(o->temporary);
		free(o->temporary);
		o->temporary = NULL;
	}
	return rc;
}
