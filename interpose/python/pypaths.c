/* SPDX-License-Identifier: MIT */
/*
 * Where the program's Python code comes from (pypaths.h), read from the
 * interpreter's objects as they are and laid out as CPython and site.py lay
 * them out on posix, without asking either:
 *
 *   stdlib     the directory of os.py (os.__file__); sysconfig's stdlib and
 *              platstdlib, {sys.base_prefix}/{platlibdir}/pythonX.Y and
 *              {sys.exec_prefix}/{platlibdir}/pythonX.Y; the sys.path
 *              entries inside them, and pythonXY.zip;
 *   site       site.getsitepackages() of site.PREFIXES (sys.prefix and
 *              sys.exec_prefix without site): {prefix}/{platlibdir}/
 *              pythonX.Y/site-packages, and {prefix}/lib/... too when
 *              platlibdir is not lib; sysconfig's purelib and platlib, the
 *              same directories of sys.prefix and sys.exec_prefix; and the
 *              sys.path entries named site-packages or dist-packages under a
 *              prefix (Debian's site.py adds its dist-packages);
 *   user_site  with site imported: site.USER_SITE, else {site.USER_BASE,
 *              $PYTHONUSERBASE or ~/.local}/lib/pythonX.Y/site-packages;
 *   scripts    sysconfig's scripts, {sys.prefix}/bin; the interpreter's
 *              directory; the bin beside the lib of each site directory
 *              (Debian's /usr/local/bin, ~/.local/bin) that is a directory;
 *   pth, editable  the directories that the site directories' .pth files
 *              add (setuptools' __editable__*.pth: editable), read as
 *              site.py reads them, their import lines left alone; the
 *              MAPPING of each __editable___*_finder module in sys.modules;
 *   pythonpath, installed, sys_path  each other sys.path entry: one of
 *              $PYTHONPATH (unless -E), one holding *.dist-info, any other;
 *   script, cwd, project  __main__.__file__, the working directory, and the
 *              version-controlled tree (.git, .hg, .svn) holding either.
 *
 * Every fact is given again with its symbolic links resolved when that
 * differs. Objects are taken as the program left them: modules from
 * sys.modules (PyImport_GetModuleDict()), never imported; a module's globals
 * from its own dictionary; only objects of exactly the type expected (a
 * str, a list, a dict), so that no method of the program's can answer.
 * Files are read with the C library, never through the program's os
 * module; each directory is read to a bound (MAX_LISTED entries), and one
 * is read only where no stat() answers the question: the site
 * directories' names for their .pth files, a sys.path entry's for a
 * *.dist-info. A fact that cannot be read is left out.
 *
 * The Python C API is pyapi.h's: the shim does not link against Python.
 */
#include "coderules.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lw-coderoots.h"
#include "lw-format.h"
#include "pyapi.h"
#include "pyframes.h"

/* What one reading looks at, at most. */
#define MAX_PTH_FILES 256
#define MAX_PTH_BYTES 65536
#define MAX_LISTED 4096		/* entries of one directory */
#define MAX_FINDER_ENTRIES 4096	/* of one editable finder's MAPPING */
#define MAX_ENTRIES 4096	/* of sys.path, site.PREFIXES, PYTHONPATH */
/* A module's or a global's name, as compared. */
#define NAME_SIZE 256

struct py_object;

static const struct lw_pyapi *py;

/* 0 unknown, 1 usable, -1 not. With the GIL. */
static int api_state;

static int load_api(void)
{
	py = lw_pyapi();
	return py->Py_IsInitialized && py->PyImport_GetModuleDict &&
	       py->PyDict_Next && py->PyType_IsSubtype && py->PyList_Size &&
	       py->PyList_GetItem && py->PyTuple_Size && py->PyTuple_GetItem &&
	       py->PyLong_AsLongAndOverflow && py->PyDict_Type &&
	       py->PyModule_Type && py->PyList_Type && py->PyTuple_Type &&
	       py->PyLong_Type && py->PyBool_Type ? 0 : -1;
}

/* ---- the interpreter's objects ---- */

/* ob_type, right after the reference count in every build read
 * (pyframes.h: no debug or free-threaded build). */
static const void *type_of(const struct py_object *o)
{
	const void *type;

	memcpy(&type, (const char *)o + sizeof(ptrdiff_t), sizeof(type));
	return type;
}

static bool is_a(const struct py_object *o, const void *type)
{
	return o && type_of(o) == type;
}

/* A module's dictionary: o's type is ModuleType or a subclass, by its
 * real type (never a __class__ that o computes); NULL otherwise. Read from
 * PyModuleObject, whose md_dict follows the object's head in every
 * version, so that nothing is called that could make one. */
static struct py_object *module_dict(struct py_object *o)
{
	struct py_object *dict;

	if (!o || (type_of(o) != py->PyModule_Type &&
		   !py->PyType_IsSubtype(type_of(o), py->PyModule_Type)))
		return NULL;
	memcpy(&dict, (const char *)o + sizeof(ptrdiff_t) + sizeof(void *),
	       sizeof(dict));
	return is_a(dict, py->PyDict_Type) ? dict : NULL;
}

/* An exact str's text (UTF-8, file names' undecodable bytes as they were);
 * -1 when o is not one or its text may not have fit. (lw_py_str() ends a
 * text at a NUL in it, which no path the interpreter uses holds.) */
static int text(const struct py_object *o, char *out, size_t size)
{
	if (!o || lw_py_str(o, out, size) < 0)
		return -1;
	return strlen(out) + 4 < size ? 0 : -1;
}

/* The values of names (n of them) in an exact dict, in one pass over it;
 * NULL for those absent. */
static void find_all(struct py_object *dict, const char *const *names,
		     struct py_object **values, size_t n)
{
	void *key, *value;
	char name[NAME_SIZE];
	ptrdiff_t pos = 0;

	memset(values, 0, n * sizeof(*values));
	if (!is_a(dict, py->PyDict_Type))
		return;
	while (py->PyDict_Next(dict, &pos, &key, &value)) {
		if (text(key, name, sizeof(name)) < 0)
			continue;
		for (size_t i = 0; i < n; i++)
			if (!values[i] && strcmp(name, names[i]) == 0)
				values[i] = value;
	}
}

static struct py_object *find(struct py_object *dict, const char *name)
{
	struct py_object *value;

	find_all(dict, &name, &value, 1);
	return value;
}

/* ---- paths ---- */

/* A list of paths, each once. */
struct paths {
	char **v;
	size_t n, capacity;
};

static bool paths_has(const struct paths *p, const char *path)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->v[i], path) == 0)
			return true;
	return false;
}

/* Whether path is one of p's or lies under one. */
static bool paths_hold(const struct paths *p, const char *path)
{
	for (size_t i = 0; i < p->n; i++) {
		size_t len = strlen(p->v[i]);

		if (strncmp(path, p->v[i], len) == 0 &&
		    (path[len] == '\0' || path[len] == '/' ||
		     (len == 1 && p->v[i][0] == '/')))
			return true;
	}
	return false;
}

/* Adds a copy of path; 0, or -ENOMEM. */
static int paths_add(struct paths *p, const char *path)
{
	char **grown;

	if (paths_has(p, path) || p->n >= MAX_ENTRIES)
		return 0;
	if (p->n == p->capacity) {
		size_t next = p->capacity ? 2 * p->capacity : 16;

		if (!(grown = realloc(p->v, next * sizeof(*grown))))
			return -ENOMEM;
		p->v = grown;
		p->capacity = next;
	}
	if (!(p->v[p->n] = strdup(path)))
		return -ENOMEM;
	p->n++;
	return 0;
}

static void paths_free(struct paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool ends_with(const char *s, const char *end)
{
	size_t len = strlen(s), elen = strlen(end);

	return len >= elen && strcmp(s + len - elen, end) == 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/*
 * Calls fn(name, ctx) for each of the first MAX_LISTED entries of dir, in
 * the order the directory gives them, until fn returns true. 0, or -1 when
 * dir is no directory that can be read. Opened with O_DIRECTORY (by
 * opendir()): a FIFO or device is not opened.
 */
static int list_dir(const char *dir, bool (*fn)(const char *name, void *ctx),
		    void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return -1;
	for (unsigned n = 0; n < MAX_LISTED && (e = readdir(d)); n++)
		if (fn(e->d_name, ctx))
			break;
	closedir(d);
	return 0;
}

/* ---- a reading ---- */

struct reading {
	void (*fn)(unsigned kind, const char *path, const char *name,
		   void *ctx);
	void *ctx;
	int rc;			/* the first failure */
	char cwd[PATH_MAX];
	char version[16];	/* "3.11" */
	/* sys.*, absolute, normalised; NULL where absent. */
	char *prefix, *exec_prefix, *base_prefix, *executable;
	char platlibdir[NAME_SIZE];
	bool ignore_environment;
	struct py_object *path;	/* sys.path, an exact list, or NULL */
	struct py_object *modules;	/* sys.modules */
	/* The modules' dictionaries; NULL where not imported. */
	struct py_object *sys, *os, *site, *main;
	struct paths prefixes, stdlib, sites, pth;
	char buf[PATH_MAX];
};

static void failed(struct reading *r, int rc)
{
	if (!r->rc)
		r->rc = rc;
}

/*
 * path (relative: to dir, the working directory when NULL) made absolute
 * and normalised, as os.path.normpath(os.path.join(dir, path)); malloc'ed,
 * NULL without memory.
 */
static char *absolute(struct reading *r, const char *dir, const char *path)
{
	char *p;

	if (!path[0])
		path = ".";	/* sys.path's "": the working directory */
	p = lw_code_path_normalise(dir ? dir : r->cwd, path, strlen(path));
	if (!p)
		failed(r, -ENOMEM);
	return p;
}

/* Gives a fact (path absolute and normalised), and again with its symbolic
 * links resolved when that differs (os.path.realpath). */
static void give(struct reading *r, unsigned kind, const char *path,
		 const char *name)
{
	char real[PATH_MAX];

	r->fn(kind, path, name, r->ctx);
	if (realpath(path, real) && strcmp(real, path) != 0)
		r->fn(kind, real, name, r->ctx);
}

/* dir/path: given as kind, and added to list when list is not NULL. */
static void give_in(struct reading *r, unsigned kind, const char *dir,
		    const char *path, struct paths *list)
{
	char *p = absolute(r, dir, path);

	if (!p)
		return;
	give(r, kind, p, "");
	if (list && paths_add(list, p) < 0)
		failed(r, -ENOMEM);
	free(p);
}

/* An exact str as an absolute path; NULL when it is none. */
static char *path_of(struct reading *r, const struct py_object *o)
{
	return text(o, r->buf, sizeof(r->buf)) == 0 ? absolute(r, NULL, r->buf)
						    : NULL;
}

/* The modules read, from sys.modules; -1 when it is no dictionary, or
 * sys is not in it. */
static int find_modules(struct reading *r)
{
	static const char *const names[] = { "sys", "os", "site", "__main__" };
	struct py_object *found[4];

	r->modules = py->PyImport_GetModuleDict();
	find_all(r->modules, names, found, 4);
	r->os = module_dict(found[1]);
	r->site = module_dict(found[2]);
	r->main = module_dict(found[3]);
	r->sys = module_dict(found[0]);
	return r->sys ? 0 : -1;
}

/* sys.flags.ignore_environment (-E): a structseq, a tuple's subclass,
 * whose eighth field it is from 3.9 to 3.13. */
static bool ignores_environment(struct py_object *flags)
{
	struct py_object *item;
	int overflow = 0;

	if (!flags || !py->PyType_IsSubtype(type_of(flags), py->PyTuple_Type) ||
	    py->PyTuple_Size(flags) <= 7)
		return false;
	item = py->PyTuple_GetItem(flags, 7);
	if (!is_a(item, py->PyLong_Type) && !is_a(item, py->PyBool_Type))
		return false;
	return py->PyLong_AsLongAndOverflow(item, &overflow) != 0 || overflow;
}

static int read_sys(struct reading *r)
{
	static const char *const names[] = {
		"prefix", "exec_prefix", "base_prefix", "executable",
		"platlibdir", "path", "flags",
	};
	struct py_object *v[7];
	const char *version = lw_py_version();
	const char *dot = strchr(version, '.');
	size_t len = dot ? strcspn(dot + 1, ".") + (size_t)(dot + 1 - version)
			 : 0;

	if (!len || len >= sizeof(r->version))
		return -1;
	memcpy(r->version, version, len);
	r->version[len] = '\0';
	find_all(r->sys, names, v, 7);
	r->prefix = path_of(r, v[0]);
	r->exec_prefix = path_of(r, v[1]);
	r->base_prefix = path_of(r, v[2]);
	r->executable = path_of(r, v[3]);
	if (text(v[4], r->platlibdir, sizeof(r->platlibdir)) < 0 ||
	    !r->platlibdir[0] || strchr(r->platlibdir, '/'))
		strcpy(r->platlibdir, "lib");
	r->path = is_a(v[5], py->PyList_Type) ? v[5] : NULL;
	r->ignore_environment = ignores_environment(v[6]);
	return 0;
}

/* ---- the standard library, site and scripts directories ---- */

/* {prefix}/{libdir}/pythonX.Y[/leaf], given as kind into list. */
static void give_lib(struct reading *r, unsigned kind, const char *prefix,
		     const char *libdir, const char *leaf, struct paths *list)
{
	char dir[PATH_MAX];
	int n;

	if (!prefix)
		return;
	n = snprintf(dir, sizeof(dir), "%s/%s/python%s%s%s", prefix, libdir,
		     r->version, leaf ? "/" : "", leaf ? leaf : "");
	if (n > 0 && (size_t)n < sizeof(dir))
		give_in(r, kind, NULL, dir, list);
}

/* site.PREFIXES, else sys.prefix and sys.exec_prefix (as site.py sets them
 * before a virtual environment changes them). */
static void find_prefixes(struct reading *r)
{
	struct py_object *list = find(r->site, "PREFIXES");
	ptrdiff_t n = is_a(list, py->PyList_Type) ? py->PyList_Size(list) : 0;

	for (ptrdiff_t i = 0; i < n && i < MAX_ENTRIES; i++) {
		char *p = path_of(r, py->PyList_GetItem(list, i));

		if (p && paths_add(&r->prefixes, p) < 0)
			failed(r, -ENOMEM);
		free(p);
	}
	if (r->site && is_a(list, py->PyList_Type))
		return;
	if ((r->prefix && paths_add(&r->prefixes, r->prefix) < 0) ||
	    (r->exec_prefix && paths_add(&r->prefixes, r->exec_prefix) < 0))
		failed(r, -ENOMEM);
}

/* The user's site-packages, as site.getusersitepackages() makes it. */
static void user_site(struct reading *r)
{
	struct py_object *v[2];
	static const char *const names[] = { "USER_SITE", "USER_BASE" };
	const char *base = getenv("PYTHONUSERBASE"), *home = getenv("HOME");
	char dir[PATH_MAX];
	int n = -1;

	if (!r->site)
		return;
	find_all(r->site, names, v, 2);
	if (text(v[0], dir, sizeof(dir)) == 0) {
		give_in(r, LW_PYPATH_USER_SITE, NULL, dir, &r->sites);
		return;
	}
	if (text(v[1], r->buf, sizeof(r->buf)) == 0)
		base = r->buf;
	if (base && base[0])
		n = snprintf(dir, sizeof(dir), "%s/lib/python%s/site-packages",
			     base, r->version);
	else if (home && home[0])
		n = snprintf(dir, sizeof(dir),
			     "%s/.local/lib/python%s/site-packages", home,
			     r->version);
	if (n > 0 && (size_t)n < sizeof(dir))
		give_in(r, LW_PYPATH_USER_SITE, NULL, dir, &r->sites);
}

/* Whether path is a site directory by its name: .../site-packages or
 * .../dist-packages. */
static bool site_named(const char *path)
{
	const char *name = base_name(path);

	return strcmp(name, "site-packages") == 0 ||
	       strcmp(name, "dist-packages") == 0;
}

/* The scripts directory beside a site directory's lib, when it is one:
 * {root}/lib/pythonX[.Y]/site-packages gives {root}/bin. */
static void scripts_beside(struct reading *r, const char *site)
{
	char dir[PATH_MAX];
	char *cut;
	size_t len = strlen(site);

	if (!site_named(site) || len >= sizeof(dir))
		return;
	memcpy(dir, site, len + 1);
	*strrchr(dir, '/') = '\0';	/* pythonX.Y */
	cut = strrchr(dir, '/');
	if (!cut || strncmp(cut + 1, "python", 6) != 0)
		return;
	*cut = '\0';			/* lib */
	cut = strrchr(dir, '/');
	if (!cut || (strcmp(cut + 1, "lib") != 0 &&
		     strcmp(cut + 1, r->platlibdir) != 0) ||
	    (size_t)(cut - dir) + sizeof("/bin") > sizeof(dir))
		return;
	strcpy(cut, "/bin");
	if (dir[0] && is_dir(dir))
		give_in(r, LW_PYPATH_SCRIPTS, NULL, dir, NULL);
}

static void stdlib_and_site(struct reading *r)
{
	struct py_object *os_file = find(r->os, "__file__");
	ptrdiff_t n = r->path ? py->PyList_Size(r->path) : 0;

	if (text(os_file, r->buf, sizeof(r->buf)) == 0 && strchr(r->buf, '/')) {
		*strrchr(r->buf, '/') = '\0';
		give_in(r, LW_PYPATH_STDLIB, NULL, r->buf[0] ? r->buf : "/",
			&r->stdlib);
	}
	/* sysconfig's posix_prefix (and venv) scheme. */
	give_lib(r, LW_PYPATH_STDLIB, r->base_prefix, r->platlibdir, NULL,
		 &r->stdlib);
	give_lib(r, LW_PYPATH_STDLIB, r->exec_prefix, r->platlibdir, NULL,
		 &r->stdlib);
	give_lib(r, LW_PYPATH_SITE, r->prefix, "lib", "site-packages",
		 &r->sites);
	give_lib(r, LW_PYPATH_SITE, r->exec_prefix, r->platlibdir,
		 "site-packages", &r->sites);
	if (r->prefix && (size_t)snprintf(r->buf, sizeof(r->buf), "%s/bin",
					  r->prefix) < sizeof(r->buf))
		give_in(r, LW_PYPATH_SCRIPTS, NULL, r->buf, NULL);
	/* site.getsitepackages(). */
	find_prefixes(r);
	for (size_t i = 0; i < r->prefixes.n; i++) {
		give_lib(r, LW_PYPATH_SITE, r->prefixes.v[i], r->platlibdir,
			 "site-packages", &r->sites);
		if (strcmp(r->platlibdir, "lib") != 0)
			give_lib(r, LW_PYPATH_SITE, r->prefixes.v[i], "lib",
				 "site-packages", &r->sites);
	}
	/* What a distribution's site.py adds of its own under a prefix. */
	for (ptrdiff_t i = 0; i < n && i < MAX_ENTRIES; i++) {
		char *p = path_of(r, py->PyList_GetItem(r->path, i));

		if (p && site_named(p) && paths_hold(&r->prefixes, p))
			give_in(r, LW_PYPATH_SITE, NULL, p, &r->sites);
		free(p);
	}
	user_site(r);
	if (r->executable && strchr(r->executable, '/')) {
		*strrchr(r->executable, '/') = '\0';
		give_in(r, LW_PYPATH_SCRIPTS, NULL,
			r->executable[0] ? r->executable : "/", NULL);
	}
	for (size_t i = 0; i < r->sites.n; i++)
		scripts_beside(r, r->sites.v[i]);
}

/* ---- .pth files ---- */

struct pth_names {
	struct paths names;
	int rc;
};

static bool is_pth(const char *name, void *ctx)
{
	struct pth_names *p = ctx;

	if (ends_with(name, ".pth") && paths_add(&p->names, name) < 0)
		p->rc = -ENOMEM;
	return false;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Up to size bytes of a regular file; -1 when it cannot be read. Opened
 * without blocking: a FIFO named .pth does not hold the program. */
static ptrdiff_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	size_t got = 0;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return (ptrdiff_t)got;
}

/* One .pth file's directories, as site.addpackage() reads it: a line per
 * entry, comments and import lines skipped, a directory kept when it is
 * one. */
static void pth_file(struct reading *r, const char *site, const char *name,
		     char *text_buf)
{
	unsigned kind = strncmp(name, "__editable__", 12) == 0
				? LW_PYPATH_EDITABLE : LW_PYPATH_PTH;
	ptrdiff_t len;
	char *line, *end;

	if (snprintf(r->buf, sizeof(r->buf), "%s/%s", site, name) >=
	    (int)sizeof(r->buf))
		return;
	len = read_file(r->buf, text_buf, MAX_PTH_BYTES);
	if (len < 0)
		return;
	text_buf[len] = '\0';
	for (line = text_buf; line < text_buf + len; line = end + 1) {
		size_t n;
		char *p;

		end = line + strcspn(line, "\r\n");
		*end = '\0';
		n = strlen(line);
		while (n && strchr(" \t\f\v", line[n - 1]))
			line[--n] = '\0';
		if (!n || line[0] == '#' || strncmp(line, "import ", 7) == 0 ||
		    strncmp(line, "import\t", 7) == 0)
			continue;
		if (!(p = absolute(r, site, line)))
			return;
		if (is_dir(p)) {
			give(r, kind, p, name);
			if (paths_add(&r->pth, p) < 0)
				failed(r, -ENOMEM);
		}
		free(p);
	}
}

/* The directories the site directories' .pth files add, each site's files
 * by name, MAX_PTH_FILES of them in all. */
static void pth(struct reading *r)
{
	char *text_buf = malloc(MAX_PTH_BYTES + 1);
	unsigned files = 0;

	if (!text_buf) {
		failed(r, -ENOMEM);
		return;
	}
	for (size_t i = 0; i < r->sites.n && files < MAX_PTH_FILES; i++) {
		struct pth_names p = { { NULL, 0, 0 }, 0 };

		if (list_dir(r->sites.v[i], is_pth, &p) == 0) {
			if (p.rc)
				failed(r, p.rc);
			if (p.names.n)
				qsort(p.names.v, p.names.n, sizeof(char *),
				      by_name);
			for (size_t j = 0; j < p.names.n &&
					   files < MAX_PTH_FILES; j++, files++)
				pth_file(r, r->sites.v[i], p.names.v[j],
					 text_buf);
		}
		paths_free(&p.names);
	}
	free(text_buf);
}

/* ---- editable finders ---- */

/* The packages that setuptools' editable finders map to their sources: the
 * MAPPING of each __editable___*_finder module in sys.modules. */
static void editable_finders(struct reading *r)
{
	void *key, *value, *package, *where;
	struct py_object *mapping;
	char name[NAME_SIZE];
	ptrdiff_t pos = 0;

	while (py->PyDict_Next(r->modules, &pos, &key, &value)) {
		ptrdiff_t at = 0;

		if (text(key, name, sizeof(name)) < 0 ||
		    strncmp(name, "__editable___", 13) != 0 ||
		    !ends_with(name, "_finder"))
			continue;
		mapping = find(module_dict(value), "MAPPING");
		if (!is_a(mapping, py->PyDict_Type))
			continue;
		for (unsigned n = 0; n < MAX_FINDER_ENTRIES &&
				     py->PyDict_Next(mapping, &at, &package, &where);
		     n++) {
			char *p;

			if (text(package, name, sizeof(name)) < 0 ||
			    !(p = path_of(r, where)))
				continue;
			give(r, LW_PYPATH_EDITABLE, p, name);
			free(p);
		}
	}
}

/* ---- sys.path ---- */

static bool is_dist_info(const char *name, void *ctx)
{
	bool *found = ctx;

	*found = ends_with(name, ".dist-info");
	return *found;
}

/* Whether dir holds installed distributions, by its first MAX_LISTED
 * entries. */
static bool holds_distributions(const char *dir)
{
	bool found = false;

	return list_dir(dir, is_dist_info, &found) == 0 && found;
}

/* $PYTHONPATH's entries, absolute. */
static void read_pythonpath(struct reading *r, struct paths *env)
{
	const char *list = r->ignore_environment ? NULL : getenv("PYTHONPATH");

	while (list && *list) {
		size_t len = strcspn(list, ":");

		if (len && len < sizeof(r->buf)) {
			char *p;

			memcpy(r->buf, list, len);
			r->buf[len] = '\0';
			p = absolute(r, NULL, r->buf);
			if (p && paths_add(env, p) < 0)
				failed(r, -ENOMEM);
			free(p);
		}
		list += len + (list[len] == ':');
	}
}

/* Each sys.path entry, by where it came from. */
static void sys_path(struct reading *r)
{
	ptrdiff_t n = r->path ? py->PyList_Size(r->path) : 0;
	struct paths env = { NULL, 0, 0 };

	read_pythonpath(r, &env);
	for (ptrdiff_t i = 0; i < n && i < MAX_ENTRIES; i++) {
		char *p = path_of(r, py->PyList_GetItem(r->path, i));
		bool known = false;

		if (!p || paths_has(&r->sites, p) || paths_has(&r->pth, p)) {
			free(p);
			continue;
		}
		if (paths_hold(&r->stdlib, p) ||
		    (ends_with(p, ".zip") &&
		     strncmp(base_name(p), "python", 6) == 0)) {
			give(r, LW_PYPATH_STDLIB, p, "");
			free(p);
			continue;
		}
		if (paths_has(&env, p)) {
			give(r, LW_PYPATH_PYTHONPATH, p, "");
			known = true;
		}
		if (holds_distributions(p)) {
			give(r, LW_PYPATH_INSTALLED, p, "");
			known = true;
		}
		if (!known)
			give(r, LW_PYPATH_SYS_PATH, p, "");
		free(p);
	}
	paths_free(&env);
}

/* ---- the program's own tree ---- */

/* The root of the version-controlled tree that holds dir (absolute,
 * normalised), up to / or the home directory, neither of them included. */
static void project(struct reading *r, const char *dir, const char *name)
{
	static const char *const markers[] = { ".git", ".hg", ".svn" };
	const char *env_home = getenv("HOME");
	char *home = env_home && env_home[0]
			     ? lw_code_path_normalise(NULL, env_home,
						      strlen(env_home))
			     : NULL;
	char d[PATH_MAX];
	size_t len = strlen(dir);

	if (len >= sizeof(d) - 8)
		goto out;
	memcpy(d, dir, len + 1);
	for (int up = 0; up < 64; up++) {
		char *slash;

		if (strcmp(d, "/") == 0 || (home && strcmp(d, home) == 0))
			break;
		for (size_t m = 0; m < 3; m++) {
			struct stat st;

			snprintf(d + len, sizeof(d) - len, "/%s", markers[m]);
			if (stat(d, &st) == 0) {
				d[len] = '\0';
				give(r, LW_PYPATH_PROJECT, d, name);
				goto out;
			}
		}
		d[len] = '\0';
		slash = strrchr(d, '/');
		if (!slash)
			break;
		len = slash == d ? 1 : (size_t)(slash - d);
		d[len] = '\0';
	}
out:
	free(home);
}

static void program(struct reading *r)
{
	char *script = path_of(r, find(r->main, "__file__"));

	if (script)
		give(r, LW_PYPATH_SCRIPT, script, "");
	give(r, LW_PYPATH_CWD, r->cwd, "");
	if (script) {
		char *slash = strrchr(script, '/');

		if (slash == script)
			slash[1] = '\0';
		else
			*slash = '\0';
		project(r, script, "script");
	}
	project(r, r->cwd, "cwd");
	free(script);
}

int lw_pypaths_read(void (*fn)(unsigned kind, const char *path,
			       const char *name, void *ctx),
		    void *ctx)
{
	struct reading *r;
	char *cwd = NULL;
	int rc = -EINVAL;

	if (lw_py_init() != LW_PY_SUPPORTED)
		return -ENOTSUP;
	if (!api_state)
		api_state = load_api() == 0 ? 1 : -1;
	if (api_state < 0 || !py->Py_IsInitialized())
		return -ENOTSUP;
	if (!(r = calloc(1, sizeof(*r))))
		return -ENOMEM;
	r->fn = fn;
	r->ctx = ctx;
	/* The working directory first: the other paths are made absolute
	 * against it. */
	if (!getcwd(r->buf, sizeof(r->buf)))
		rc = -errno;
	else if (r->buf[0] == '/')
		cwd = absolute(r, "/", r->buf);
	if (!cwd || strlen(cwd) >= sizeof(r->cwd) || find_modules(r) < 0 ||
	    read_sys(r) < 0)
		goto out;
	strcpy(r->cwd, cwd);
	stdlib_and_site(r);
	pth(r);
	editable_finders(r);
	sys_path(r);
	program(r);
	rc = 0;
out:
	rc = r->rc ? r->rc : rc;
	free(cwd);
	free(r->prefix);
	free(r->exec_prefix);
	free(r->base_prefix);
	free(r->executable);
	paths_free(&r->prefixes);
	paths_free(&r->stdlib);
	paths_free(&r->sites);
	paths_free(&r->pth);
	free(r);
	return rc;
}
