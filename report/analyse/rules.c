/* SPDX-License-Identifier: MIT */
/*
 * Reading diagnosis rules and suppressions (rules.h). Both are line files:
 * a directive and its words, '#' to the end of a line a comment. An error
 * names the line and stops the read; what was read before it is kept.
 */
#include "rules.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-report-config.h"

static const char *const category_names[LW_CATEGORY_COUNT] = {
	[LW_CATEGORY_NONE] = NULL,
	[LW_CATEGORY_RETAINED_LOSS] = "retained-loss",
	[LW_CATEGORY_METRIC_COPY] = "metric-copy",
	[LW_CATEGORY_RETAINED_GRAPH] = "retained-graph",
	[LW_CATEGORY_LINGERING] = "lingering-previous-step",
	[LW_CATEGORY_UNRELEASED_MODULE] = "unreleased-module",
	[LW_CATEGORY_CYCLE_DELAYED] = "cycle-delayed-frees",
	[LW_CATEGORY_GROWTH] = "growth",
	[LW_CATEGORY_NOT_A_LEAK] = "not-a-leak",
	[LW_CATEGORY_CACHE_GROWTH] = "pool-fragmentation",
	[LW_CATEGORY_GROWING_BUFFER] = "growing-buffer",
	[LW_CATEGORY_KEPT_EXCEPTION] = "kept-exception",
	[LW_CATEGORY_UNCOLLECTED_CYCLE] = "uncollected-cycle",
	[LW_CATEGORY_KEPT_ACTIVATIONS] = "kept-activations",
	[LW_CATEGORY_KEPT_OUTPUTS] = "kept-outputs",
	[LW_CATEGORY_UNBOUNDED_CACHE] = "unbounded-cache",
	[LW_CATEGORY_KEPT_INPUTS] = "kept-inputs",
	[LW_CATEGORY_METRIC_STATE] = "metric-state",
};

static const struct {
	const char *name;
	uint32_t tag;
} tag_names[] = {
	{ "forward", LW_TAG_FORWARD },
	{ "loss", LW_TAG_LOSS },
	{ "backward", LW_TAG_BACKWARD },
	{ "copy", LW_TAG_COPY },
	{ "metric", LW_TAG_METRIC },
	{ "load", LW_TAG_LOAD },
	{ "optimizer", LW_TAG_OPTIMIZER },
	{ "workspace", LW_TAG_WORKSPACE },
	{ "cache", LW_TAG_CACHE },
	{ "input", LW_TAG_INPUT },
	{ "hook", LW_TAG_HOOK },
};

const char *lw_category_name(enum lw_category category)
{
	return (unsigned)category < LW_CATEGORY_COUNT
		       ? category_names[category] : NULL;
}

void lw_rules_init(struct lw_rules *r)
{
	memset(r, 0, sizeof(*r));
}

static void free_strings(char **items, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(items[i]);
	free(items);
}

void lw_rules_fini(struct lw_rules *r)
{
	for (size_t i = 0; i < r->tag_count; i++) {
		free(r->tags[i].function);
		free(r->tags[i].file);
	}
	free(r->tags);
	free_strings(r->transient_phases, r->transient_count);
	free_strings(r->suppressions, r->suppression_count);
	free_strings(r->files, r->file_count);
	for (size_t i = 0; i < LW_CATEGORY_COUNT; i++)
		free(r->fixes[i]);
	memset(r, 0, sizeof(*r));
}

/* Makes room for one more element; 0 or -ENOMEM. */
static int reserve(void **array, size_t *capacity, size_t count, size_t size)
{
	size_t n = *capacity ? *capacity * 2 : 8;
	void *p;

	if (count < *capacity)
		return 0;
	if (n > SIZE_MAX / size)
		return -ENOMEM;
	p = realloc(*array, n * size);
	if (!p)
		return -ENOMEM;
	*array = p;
	*capacity = n;
	return 0;
}

static int push_string(char ***items, size_t *count, size_t *capacity,
		       const char *s)
{
	char *copy;
	int rc = reserve((void **)items, capacity, *count, sizeof(**items));

	if (rc < 0)
		return rc;
	if (!(copy = strdup(s)))
		return -ENOMEM;
	(*items)[(*count)++] = copy;
	return 0;
}

/* The next blank-separated word of *p, NUL-terminated in place; NULL: none. */
static char *next_word(char **p)
{
	char *s = *p + strspn(*p, " \t"), *end;

	if (!*s)
		return NULL;
	end = s + strcspn(s, " \t");
	if (*end)
		*end++ = 0;
	*p = end;
	return s;
}

/* The rest of the line, blanks around it trimmed. */
static char *rest_of_line(char *p)
{
	size_t n;

	p += strspn(p, " \t");
	n = strlen(p);
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		p[--n] = 0;
	return p;
}

static int bad_line(char *message, size_t size, unsigned line,
		    const char *what, const char *word)
{
	snprintf(message, size, "line %u: %s%s%s%s", line, what,
		 word ? " '" : "", word ? word : "", word ? "'" : "");
	return -EINVAL;
}

static int add_tag(struct lw_rules *r, char *p, unsigned line, char *message,
		   size_t size)
{
	char *name = next_word(&p), *function = next_word(&p);
	char *file = next_word(&p);
	struct lw_tag_rule *t;
	uint32_t tag = 0;
	int rc;

	if (!name || !function || !file || next_word(&p))
		return bad_line(message, size, line,
				"expected 'tag TAG FUNCTION-GLOB FILE-GLOB'",
				NULL);
	for (size_t i = 0; i < sizeof(tag_names) / sizeof(tag_names[0]); i++)
		if (strcmp(tag_names[i].name, name) == 0)
			tag = tag_names[i].tag;
	if (!tag)
		return bad_line(message, size, line,
				"unknown tag (forward, loss, backward, copy, metric, load, optimizer, workspace, cache, input, hook)",
				name);
	if ((rc = reserve((void **)&r->tags, &r->tag_capacity, r->tag_count,
			  sizeof(*r->tags))) < 0)
		return rc;
	t = &r->tags[r->tag_count];
	t->tag = tag;
	t->function = strdup(function);
	t->file = strdup(file);
	if (!t->function || !t->file) {
		free(t->function);
		free(t->file);
		return -ENOMEM;
	}
	r->tag_count++;
	return 0;
}

static int add_fix(struct lw_rules *r, char *p, unsigned line, char *message,
		   size_t size)
{
	char *name = next_word(&p), *text;
	unsigned c;

	if (!name)
		return bad_line(message, size, line,
				"expected 'fix CATEGORY TEXT'", NULL);
	for (c = 1; c < LW_CATEGORY_COUNT; c++)
		if (strcmp(category_names[c], name) == 0)
			break;
	/* The pool's verdict was named cache-growth before. */
	if (c == LW_CATEGORY_COUNT && strcmp(name, "cache-growth") == 0)
		c = LW_CATEGORY_CACHE_GROWTH;
	if (c == LW_CATEGORY_COUNT)
		return bad_line(message, size, line, "unknown category", name);
	text = rest_of_line(p);
	if (!*text)
		return bad_line(message, size, line, "a fix needs a text", NULL);
	free(r->fixes[c]);
	if (!(r->fixes[c] = strdup(text)))
		return -ENOMEM;
	return 0;
}

static int rules_line(struct lw_rules *r, char *p, unsigned line,
		      char *message, size_t size)
{
	char *directive = next_word(&p), *glob;

	if (!directive)
		return 0;
	if (strcmp(directive, "tag") == 0)
		return add_tag(r, p, line, message, size);
	if (strcmp(directive, "fix") == 0)
		return add_fix(r, p, line, message, size);
	if (strcmp(directive, "transient-phase") == 0) {
		glob = rest_of_line(p);
		if (!*glob)
			return bad_line(message, size, line,
					"expected 'transient-phase GLOB'",
					NULL);
		return push_string(&r->transient_phases, &r->transient_count,
				   &r->transient_capacity, glob);
	}
	return bad_line(message, size, line,
			"unknown directive (tag, transient-phase, fix)",
			directive);
}

static int suppression_line(struct lw_rules *r, char *p, unsigned line,
			    char *message, size_t size)
{
	char *pattern;

	p += strspn(p, " \t");
	if (!*p)
		return 0;
	if (strncmp(p, "leak:", 5) != 0)
		return bad_line(message, size, line,
				"expected 'leak:PATTERN'", NULL);
	pattern = rest_of_line(p + 5);
	if (!*pattern)
		return bad_line(message, size, line, "empty pattern", NULL);
	return push_string(&r->suppressions, &r->suppression_count,
			   &r->suppression_capacity, pattern);
}

/*
 * The bytes of the file at path, read whole into *out (NUL-terminated, to
 * free) up to LW_RULES_FILE_MAX: a device or a stream given by mistake
 * (/dev/zero, a generator's pipe) is refused once that much is read, not
 * read until memory runs out. Returns 0 or a negative errno, with message.
 */
static int read_bounded(const char *path, const char *what, char **out,
			size_t *len, char *message, size_t size)
{
	size_t capacity = 0, used = 0;
	char *buf = NULL;
	struct stat st;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		goto error;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		goto error;
	}
	if (S_ISREG(st.st_mode) && st.st_size > LW_RULES_FILE_MAX) {
		rc = -EFBIG;
		goto error;
	}
	for (;;) {
		ssize_t n;

		if (used == capacity) {
			/* One byte past the bound tells a file of exactly
			 * LW_RULES_FILE_MAX bytes from a longer stream. */
			size_t next = capacity ? 2 * capacity : 64 * 1024;
			char *grown;

			if (capacity > LW_RULES_FILE_MAX) {
				rc = -EFBIG;
				goto error;
			}
			if (next > (size_t)LW_RULES_FILE_MAX + 1)
				next = (size_t)LW_RULES_FILE_MAX + 1;
			if (!(grown = realloc(buf, next + 1))) {
				rc = -ENOMEM;
				goto error;
			}
			buf = grown;
			capacity = next;
		}
		n = read(fd, buf + used, capacity - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto error;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > LW_RULES_FILE_MAX) {
			rc = -EFBIG;
			goto error;
		}
	}
	close(fd);
	buf[used] = 0;
	*out = buf;
	*len = used;
	return 0;

error:
	if (rc == -EFBIG)
		snprintf(message, size, "more than %u MiB, the most a %s may hold",
			 LW_RULES_FILE_MAX >> 20, what);
	else
		snprintf(message, size, "%s", strerror(-rc));
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

static int read_file(struct lw_rules *r, const char *path, const char *what,
		     int (*fn)(struct lw_rules *, char *, unsigned, char *,
			       size_t),
		     char *message, size_t size)
{
	char *data = NULL, *line, *next;
	unsigned number = 0;
	size_t len = 0;
	int rc;

	if ((rc = read_bounded(path, what, &data, &len, message, size)) < 0)
		return rc;
	for (line = data; rc == 0 && line < data + len; line = next) {
		char *newline = memchr(line, '\n', (size_t)(data + len - line));

		next = newline ? newline + 1 : data + len;
		if (newline)
			*newline = 0;
		number++;
		if (strlen(line) != (size_t)((newline ? newline : data + len) -
					     line)) {
			rc = bad_line(message, size, number,
				      "a NUL byte in the line", NULL);
			break;
		}
		line[strcspn(line, "#\r")] = 0;
		rc = fn(r, line, number, message, size);
	}
	if (rc == -ENOMEM)
		snprintf(message, size, "%s", strerror(ENOMEM));
	free(data);
	if (rc == 0)
		rc = push_string(&r->files, &r->file_count, &r->file_capacity,
				 path);
	return rc;
}

int lw_rules_add_file(struct lw_rules *r, const char *path, char *message,
		      size_t message_size)
{
	int rc = read_file(r, path, "rules file", rules_line, message,
			   message_size);

	if (rc == 0)
		r->first_suppression_file = r->file_count;
	return rc;
}

int lw_rules_add_suppressions(struct lw_rules *r, const char *path,
			      char *message, size_t message_size)
{
	return read_file(r, path, "suppressions file", suppression_line,
			 message, message_size);
}

const char *lw_rules_default_path(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n > 0) {
		exe[n] = 0;
		if ((slash = strrchr(exe, '/'))) {
			*slash = 0;
			/* Beside the command in the build tree; then the
			 * installation, relative to the command. */
			snprintf(path, sizeof(path), "%.*s/rules.conf",
				 (int)(sizeof(path) - 12), exe);
			if (access(path, R_OK) == 0)
				return path;
			if (LW_RULES_FROM_BINDIR[0] &&
			    snprintf(path, sizeof(path), "%s/%s/rules.conf", exe,
				     LW_RULES_FROM_BINDIR) < (int)sizeof(path) &&
			    access(path, R_OK) == 0)
				return path;
		}
	}
	if (access(LW_RULES_PATH, R_OK) == 0)
		return LW_RULES_PATH;
	return NULL;
}

/* The last component of a qualified name: after the last '.' or "::". */
static const char *last_component(const char *name)
{
	const char *dot = strrchr(name, '.'), *colons = strrchr(name, ':');
	const char *last = dot > colons ? dot : colons;

	return last ? last + 1 : name;
}

static bool match_function(const char *glob, const char *function)
{
	if (strcmp(glob, "*") == 0)
		return true;
	if (!function)
		return false;
	return fnmatch(glob, function, 0) == 0 ||
	       fnmatch(glob, last_component(function), 0) == 0;
}

static bool match_file(const char *glob, const char *file, const char *module)
{
	if (strcmp(glob, "*") == 0)
		return true;
	return (file && fnmatch(glob, file, 0) == 0) ||
	       (module && fnmatch(glob, module, 0) == 0);
}

uint32_t lw_rules_frame_tags(const struct lw_rules *r, const char *function,
			     const char *file, const char *module)
{
	uint32_t tags = 0;

	for (size_t i = 0; r && i < r->tag_count; i++) {
		const struct lw_tag_rule *t = &r->tags[i];

		if (!(tags & t->tag) && match_function(t->function, function) &&
		    match_file(t->file, file, module))
			tags |= t->tag;
	}
	return tags;
}

/* A LeakSanitizer-style pattern: a glob found anywhere in s. */
static bool contains(const char *pattern, const char *s)
{
	char glob[512];

	if (!s)
		return false;
	snprintf(glob, sizeof(glob), "*%s*", pattern);
	return fnmatch(glob, s, 0) == 0;
}

bool lw_rules_frame_suppressed(const struct lw_rules *r, const char *function,
			       const char *file, const char *module)
{
	for (size_t i = 0; r && i < r->suppression_count; i++) {
		const char *p = r->suppressions[i];

		if (contains(p, function) || contains(p, file) ||
		    contains(p, module))
			return true;
	}
	return false;
}

bool lw_rules_transient_phase(const struct lw_rules *r, const char *name)
{
	for (size_t i = 0; r && i < r->transient_count; i++)
		if (fnmatch(r->transient_phases[i], name, FNM_CASEFOLD) == 0)
			return true;
	return false;
}
