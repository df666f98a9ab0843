/* SPDX-License-Identifier: MIT */
/*
 * The Python code the shim carries (scripts/leakwatch/_holders.py,
 * compiled into it by embed-text.py), run inside the program's
 * interpreter as a module of its own.
 */
#ifndef LW_PYEMBED_H
#define LW_PYEMBED_H

struct py_object;

/*
 * Runs source as a new module whose code is named file, and returns its
 * global name (a borrowed reference: the module's globals stay alive for
 * good), or NULL with the interpreter's error set, or none when the
 * interpreter lacks the functions this needs. With the GIL.
 */
struct py_object *lw_py_embedded(const char *source, const char *file,
				 const char *name);

#endif
