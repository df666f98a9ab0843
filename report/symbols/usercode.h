/* SPDX-License-Identifier: MIT */
/*
 * Whose code a Python frame is, in a report: the rules of lw-coderoots.h
 * on the facts of the trace's PYPATH records and the directories the user
 * names (--user-code, LEAKWATCH_USER_CODE), with the answer kept per code
 * object. A trace without those facts is judged by its paths alone
 * (lw-origin.h), save what named directories hold.
 */
#ifndef LW_USERCODE_H
#define LW_USERCODE_H

#include <stddef.h>
#include <stdint.h>

#include "lw-origin.h"

struct lw_model;

/* Directories named as the user's code, absolute and normalised. */
struct lw_code_dirs {
	char **dirs;
	size_t count;
};

/*
 * Adds dir, made absolute against the working directory and normalised
 * ("." and ".." resolved by name, repeated and trailing slashes dropped).
 * Returns 0 or -ENOMEM.
 */
int lw_code_dirs_add(struct lw_code_dirs *dirs, const char *dir);
/* Adds each directory of a colon-separated list (empty items skipped). */
int lw_code_dirs_add_list(struct lw_code_dirs *dirs, const char *list);
void lw_code_dirs_fini(struct lw_code_dirs *dirs);

struct lw_user_code;

/*
 * The rules for one trace's model, with the named directories (NULL or
 * none: the program's tree). *out is freed with lw_user_code_free().
 * Returns 0 or -ENOMEM.
 */
int lw_user_code_new(const struct lw_model *model,
		     const struct lw_code_dirs *dirs,
		     struct lw_user_code **out);
void lw_user_code_free(struct lw_user_code *code);

/*
 * Where the Python file of code object code_id comes from (file: its
 * name, not NUL-terminated); answers are kept per code object.
 */
enum lw_code_origin lw_user_code_origin(struct lw_user_code *code,
					uint64_t code_id, const void *file,
					size_t len);

#endif
