/* SPDX-License-Identifier: MIT */
/* Whose code a Python file is: see lw-coderoots.h. */
#include "lw-coderoots.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lw-format.h"

enum root_as {
	AS_TREE,	/* the program's tree: the user's */
	AS_LIBRARY,
	AS_STDLIB,
	AS_NAMED,	/* named by the user: theirs */
};

struct root {
	char *path;		/* normalised, no trailing slash */
	size_t len;
	enum root_as as;
};

struct lw_code_roots {
	struct root *roots;
	size_t count, capacity;
	bool decides;		/* facts or named directories: not the path */
	char *cwd;		/* for relative names; NULL: unknown */
};

char *lw_code_path_normalise(const char *base, const char *path, size_t len)
{
	size_t blen = len && path[0] != '/' && base ? strlen(base) : 0;
	char *joined, *out;
	size_t n = 0;

	if (memchr(path, '\0', len) || (len && path[0] != '/' && !base) ||
	    !(joined = malloc(blen + len + 2)))
		return NULL;
	memcpy(joined, base ? base : "", blen);
	joined[blen] = '/';
	memcpy(joined + blen + 1, path, len);
	joined[blen + len + 1] = '\0';
	out = malloc(blen + len + 2);
	if (!out) {
		free(joined);
		return NULL;
	}
	for (char *p = joined; *p;) {
		char *end = strchr(p, '/');
		size_t part = end ? (size_t)(end - p) : strlen(p);

		if (part == 0 || (part == 1 && p[0] == '.')) {
			/* nothing */
		} else if (part == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;	/* the slash */
		} else {
			out[n++] = '/';
			memcpy(out + n, p, part);
			n += part;
		}
		p += part;
		if (*p == '/')
			p++;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	free(joined);
	return out;
}

/* Whether root (len bytes, normalised) holds path: itself, or below it. */
static bool holds(const char *root, size_t len, const char *path,
		  size_t path_len)
{
	if (len == 1 && root[0] == '/')
		return true;
	return path_len >= len && memcmp(path, root, len) == 0 &&
	       (path_len == len || path[len] == '/');
}

static bool holds_str(const char *root, const char *path)
{
	return root && path && holds(root, strlen(root), path, strlen(path));
}

/* Adds a root: path (normalised), unless it is / or NULL. */
static int add_root(struct lw_code_roots *c, const char *path,
		    enum root_as as)
{
	char *copy;

	if (!path || (path[0] == '/' && path[1] == '\0'))
		return 0;
	if (c->count == c->capacity) {
		size_t next = c->capacity ? c->capacity * 2 : 16;
		struct root *grown = realloc(c->roots, next * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		c->roots = grown;
		c->capacity = next;
	}
	if (!(copy = strdup(path)))
		return -ENOMEM;
	c->roots[c->count++] = (struct root){ copy, strlen(copy), as };
	return 0;
}

static bool library_kind(unsigned kind)
{
	return kind == LW_PYPATH_STDLIB || kind == LW_PYPATH_SITE ||
	       kind == LW_PYPATH_USER_SITE || kind == LW_PYPATH_INSTALLED ||
	       kind == LW_PYPATH_SCRIPTS;
}

/* Directories put on the import path from outside the program: a
 * library's outside its tree. */
static bool path_kind(unsigned kind)
{
	return kind == LW_PYPATH_PYTHONPATH || kind == LW_PYPATH_PTH ||
	       kind == LW_PYPATH_EDITABLE;
}

/* The facts, their paths normalised (absolute ones only). */
struct facts {
	const struct lw_code_fact *items;
	char **paths;		/* NULL where unusable */
	size_t n;
};

static bool under_library(const struct facts *f, const char *path)
{
	for (size_t i = 0; i < f->n; i++)
		if (library_kind(f->items[i].kind) &&
		    holds_str(f->paths[i], path))
			return true;
	return false;
}

/* The first fact of kind (and name, unless NULL); NULL if none. */
static const char *first(const struct facts *f, unsigned kind,
			 const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->items[i].kind == kind && f->paths[i] &&
		    (!name || (f->items[i].name &&
			       strcmp(f->items[i].name, name) == 0)))
			return f->paths[i];
	return NULL;
}

/* The program's tree (see lw-coderoots.h): up to two directories. */
static int program_tree(const struct facts *f, const char *cwd,
			char *trees[2])
{
	const char *script = first(f, LW_PYPATH_SCRIPT, NULL);
	bool launcher = !script || under_library(f, script);
	const char *project =
		first(f, LW_PYPATH_PROJECT, launcher ? "cwd" : "script");
	const char *src = project ? project : launcher ? cwd : script;
	size_t len = src ? strlen(src) : 0;

	if (src && !project && !launcher) {
		/* The script's directory. */
		len = (size_t)(strrchr(script, '/') - script);
		len = len ? len : 1;
	}
	if (src && !(trees[0] = strndup(src, len)))
		return -ENOMEM;
	if (!project && !launcher && holds_str(cwd, script) &&
	    !(trees[1] = strdup(cwd)))
		return -ENOMEM;
	return 0;
}

static int add_facts(struct lw_code_roots *c, const struct facts *f,
		     bool named)
{
	char *trees[2] = { NULL, NULL };
	int rc = 0;

	if (!named)
		rc = program_tree(f, c->cwd, trees);
	for (size_t t = 0; t < 2 && rc == 0; t++)
		rc = add_root(c, trees[t], AS_TREE);
	if (named && rc == 0) {
		const char *script = first(f, LW_PYPATH_SCRIPT, NULL);

		/* The main script is the user's, unless a launcher. */
		if (script && !under_library(f, script))
			rc = add_root(c, script, AS_NAMED);
	}
	for (size_t i = 0; i < f->n && rc == 0; i++) {
		unsigned kind = f->items[i].kind;
		bool inside = false;

		if (!f->paths[i])
			continue;
		for (size_t t = 0; t < 2; t++)
			inside |= holds_str(trees[t], f->paths[i]);
		if (library_kind(kind))
			rc = add_root(c, f->paths[i],
				      kind == LW_PYPATH_STDLIB ? AS_STDLIB
							       : AS_LIBRARY);
		else if ((path_kind(kind) && !inside) ||
			 (kind == LW_PYPATH_SYS_PATH && named))
			rc = add_root(c, f->paths[i], AS_LIBRARY);
	}
	free(trees[0]);
	free(trees[1]);
	return rc;
}

int lw_code_roots_new(const struct lw_code_fact *facts, size_t n,
		      const char *const *named, size_t named_count,
		      const char *cwd, struct lw_code_roots **out)
{
	struct lw_code_roots *c = calloc(1, sizeof(*c));
	struct facts f = { facts, NULL, n };
	int rc = 0;

	*out = NULL;
	if (!c || (n && !(f.paths = calloc(n, sizeof(*f.paths))))) {
		free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const char *p = facts[i].path;

		if (p && p[0] == '/' &&
		    !(f.paths[i] = lw_code_path_normalise(NULL, p, strlen(p))))
			rc = -ENOMEM;
	}
	c->decides = n || named_count;
	/* The working directory: as the facts say, else as given. */
	if (rc == 0 && (first(&f, LW_PYPATH_CWD, NULL) || cwd)) {
		const char *w = first(&f, LW_PYPATH_CWD, NULL);

		c->cwd = w ? strdup(w)
			   : lw_code_path_normalise(NULL, cwd, strlen(cwd));
		if (!c->cwd && (w || cwd[0] == '/'))
			rc = -ENOMEM;
	}
	for (size_t i = 0; i < named_count && rc == 0; i++)
		rc = add_root(c, named[i], AS_NAMED);
	if (rc == 0 && n)
		rc = add_facts(c, &f, named_count > 0);
	for (size_t i = 0; i < n; i++)
		free(f.paths[i]);
	free(f.paths);
	if (rc < 0) {
		lw_code_roots_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void lw_code_roots_free(struct lw_code_roots *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->count; i++)
		free(c->roots[i].path);
	free(c->roots);
	free(c->cwd);
	free(c);
}

enum lw_code_origin lw_code_roots_origin(const struct lw_code_roots *c,
					 const void *file, size_t len)
{
	const char *name = file ? file : "";
	const struct root *best = NULL;
	enum lw_code_origin origin;
	size_t plen;
	char *path;

	if (!c || !c->decides || len == 0 || name[0] == '<' ||
	    !(path = lw_code_path_normalise(c->cwd, name, len)))
		return lw_python_file_origin(name, len);
	plen = strlen(path);
	for (size_t i = 0; i < c->count; i++) {
		const struct root *r = &c->roots[i];

		if (!holds(r->path, r->len, path, plen))
			continue;
		/* The longest wins; of two alike, the user's word, then a
		 * library over the program's tree. */
		if (!best || r->len > best->len ||
		    (r->len == best->len && r->as > best->as))
			best = r;
	}
	if (!best)
		origin = lw_python_file_origin(path, plen);
	else if (best->as == AS_STDLIB)
		origin = LW_CODE_STDLIB;
	else if (best->as == AS_LIBRARY)
		origin = LW_CODE_PACKAGE;
	else	/* A virtual environment inside the user's tree is not. */
		origin = lw_python_file_origin(path + best->len,
					       plen - best->len);
	free(path);
	return origin;
}
