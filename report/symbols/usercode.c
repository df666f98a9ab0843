/* SPDX-License-Identifier: MIT */
/* Whose code a Python frame is: see usercode.h. */
#include "usercode.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lw-coderoots.h"
#include "lw-format.h"
#include "lw-text.h"
#include "model.h"

/* Code objects whose answer is kept: ids are dense from 1. */
#define CACHE_MAX (1u << 22)

struct lw_user_code {
	struct lw_code_roots *roots;
	uint8_t *cache;		/* by code id: origin + 1; 0: not yet */
	size_t cache_size;
};

int lw_code_dirs_add(struct lw_code_dirs *d, const char *dir)
{
	char cwd[PATH_MAX], *path, **grown;

	if (!dir[0])
		return 0;
	path = lw_code_path_normalise(getcwd(cwd, sizeof(cwd)) ? cwd : "/",
				      dir, strlen(dir));
	if (!path)
		return -ENOMEM;
	grown = realloc(d->dirs, (d->count + 1) * sizeof(*grown));
	if (!grown) {
		free(path);
		return -ENOMEM;
	}
	d->dirs = grown;
	d->dirs[d->count++] = path;
	return 0;
}

static int add_item(const char *item, void *d)
{
	return lw_code_dirs_add(d, item);
}

int lw_code_dirs_add_list(struct lw_code_dirs *d, const char *list)
{
	return lw_text_each_item(list, add_item, d);
}

void lw_code_dirs_fini(struct lw_code_dirs *d)
{
	for (size_t i = 0; i < d->count; i++)
		free(d->dirs[i]);
	free(d->dirs);
	memset(d, 0, sizeof(*d));
}

/* A model string as a C string; NULL when absent or holding a NUL. */
static char *text(const struct lw_model *m, uint64_t id)
{
	const struct lw_string *s = id ? lw_model_string(m, id) : NULL;

	if (!s || memchr(s->text.data, '\0', s->text.len))
		return NULL;
	return strndup((const char *)s->text.data, s->text.len);
}

int lw_user_code_new(const struct lw_model *m, const struct lw_code_dirs *dirs,
		     struct lw_user_code **out)
{
	const struct lw_trace_meta *meta = lw_model_meta(m);
	const struct lw_bytes *info_cwd = lw_model_info(m, "cwd");
	struct lw_user_code *c = calloc(1, sizeof(*c));
	struct lw_code_fact *facts = NULL;
	char *cwd = NULL;
	size_t n = meta->pypath_count;
	int rc = -ENOMEM;

	*out = NULL;
	if (!c || (n && !(facts = calloc(n, sizeof(*facts)))))
		goto out;
	for (size_t i = 0; i < n; i++) {
		facts[i].kind = (unsigned)meta->pypaths[i].kind;
		facts[i].path = text(m, meta->pypaths[i].path);
		facts[i].name = text(m, meta->pypaths[i].name);
	}
	/* For file names that are relative, when the facts do not say. */
	if (info_cwd && !memchr(info_cwd->data, '\0', info_cwd->len) &&
	    !(cwd = strndup((const char *)info_cwd->data, info_cwd->len)))
		goto out;
	rc = lw_code_roots_new(facts, n,
			       dirs ? (const char *const *)dirs->dirs : NULL,
			       dirs ? dirs->count : 0, cwd, &c->roots);
out:
	for (size_t i = 0; facts && i < n; i++) {
		free((char *)facts[i].path);
		free((char *)facts[i].name);
	}
	free(facts);
	free(cwd);
	if (rc < 0) {
		lw_user_code_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void lw_user_code_free(struct lw_user_code *c)
{
	if (!c)
		return;
	lw_code_roots_free(c->roots);
	free(c->cache);
	free(c);
}

enum lw_code_origin lw_user_code_origin(struct lw_user_code *c,
					uint64_t code_id, const void *file,
					size_t len)
{
	enum lw_code_origin origin;

	if (!c)
		return lw_python_file_origin(file, len);
	if (code_id && code_id < c->cache_size && c->cache[code_id])
		return (enum lw_code_origin)(c->cache[code_id] - 1);
	origin = lw_code_roots_origin(c->roots, file, len);
	if (code_id && code_id < CACHE_MAX) {
		if (code_id >= c->cache_size) {
			size_t size = c->cache_size ? c->cache_size : 256;
			uint8_t *grown;

			while (size <= code_id)
				size *= 2;
			grown = realloc(c->cache, size);
			if (!grown)
				return origin;
			memset(grown + c->cache_size, 0, size - c->cache_size);
			c->cache = grown;
			c->cache_size = size;
		}
		c->cache[code_id] = (uint8_t)(origin + 1);
	}
	return origin;
}
