/* SPDX-License-Identifier: MIT */
/*
 * Whose code a Python file is, from where the interpreter imported it:
 * the facts the shim reads from the interpreter (PYPATH records,
 * common/lw-format.h: its site directories, PYTHONPATH, .pth files and
 * editable installs, the main script and the working directory) and the
 * directories the user names as their own code. The report decides with
 * it (report/symbols/usercode.c), and so does the shim's exit summary.
 *
 * The rules, by the longest directory that holds the file (a directory
 * holds itself and what lies under it, whole path components; a named
 * "directory" may be a file):
 *  - the standard library, site and user site directories, sys.path
 *    entries that hold installed distributions (pip install --target)
 *    and the interpreter's scripts directory are libraries;
 *  - without named directories, the program's tree is the user's: the
 *    version-controlled tree that holds the main script, else the
 *    script's directory and the working directory when it holds the
 *    script; when the script is a launcher (pytest, torchrun: in a
 *    library or scripts directory) or there is none (python -c), the tree
 *    that holds the working directory, else the working directory (never
 *    /); entries of PYTHONPATH, .pth files and editable installs are
 *    libraries outside that tree, and the user's inside it
 *    (PYTHONPATH=src, the project installed editable); other sys.path
 *    entries (the script's directory, those the program adds, as pytest
 *    does for its tests) count for nothing, so a copy vendored in the
 *    project is the user's;
 *  - with named directories, they and the main script are the user's
 *    code, and every sys.path, PYTHONPATH, .pth and editable directory
 *    outside them a library's;
 *  - of two alike, the named one, then a library's over the tree's;
 *  - under the user's directory, a path with site-packages,
 *    dist-packages or lib/python3.X in it is still a library's (a virtual
 *    environment inside the project);
 *  - a file under none of them, and every file when there are neither
 *    facts nor named directories, is judged by its path
 *    (lw_python_file_origin()).
 */
#ifndef LW_CODEROOTS_H
#define LW_CODEROOTS_H

#include <stdbool.h>
#include <stddef.h>

#include "lw-origin.h"

/* One fact: enum lw_pypath_kind, a path (absolute), a name or NULL. */
struct lw_code_fact {
	unsigned kind;
	const char *path;
	const char *name;
};

struct lw_code_roots;

/*
 * The rules for facts (n of them) and the named directories (absolute,
 * normalised; none: the program's tree); cwd, the working directory, for
 * file names that are relative when the facts do not say it (NULL:
 * unknown). *out is freed with lw_code_roots_free(). Returns 0 or
 * -ENOMEM.
 */
int lw_code_roots_new(const struct lw_code_fact *facts, size_t n,
		      const char *const *named, size_t named_count,
		      const char *cwd, struct lw_code_roots **out);
void lw_code_roots_free(struct lw_code_roots *roots);

/* Where a Python file (as a code object names it, len bytes, not
 * NUL-terminated) comes from. roots NULL: by its path. */
enum lw_code_origin lw_code_roots_origin(const struct lw_code_roots *roots,
					 const void *file, size_t len);

/*
 * path (len bytes) made absolute against base (NULL: as it is) and
 * normalised: "." and ".." resolved by name, repeated and trailing
 * slashes dropped. malloc'ed; NULL when it holds a NUL, is relative with
 * no base, or there is no memory.
 */
char *lw_code_path_normalise(const char *base, const char *path, size_t len);

#endif
