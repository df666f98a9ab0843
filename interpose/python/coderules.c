/* SPDX-License-Identifier: MIT */
/*
 * The rules that say where a Python file comes from (coderules.h), made
 * of the facts that holders/origins.c keeps; read by the stacks' own
 * judgement of the user's code (record/stacks.c), for the exit summary.
 */
#include "coderules.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct lw_code_roots *roots;
/* LEAKWATCH_USER_CODE's directories, read once. */
static char **named;
static size_t named_count;
static int named_read;

/* LEAKWATCH_USER_CODE: colon-separated directories, relative ones
 * against the working directory. */
static void read_named(void)
{
	const char *list = getenv("LEAKWATCH_USER_CODE");
	char cwd[PATH_MAX];
	const char *base = getcwd(cwd, sizeof(cwd)) ? cwd : "/";

	named_read = 1;
	while (list && *list) {
		size_t len = strcspn(list, ":");
		char **grown, *dir;

		if (len && (dir = lw_code_path_normalise(base, list, len))) {
			grown = realloc(named, (named_count + 1) *
						       sizeof(*grown));
			if (!grown) {
				free(dir);
				return;
			}
			named = grown;
			named[named_count++] = dir;
		}
		list += len + (list[len] == ':');
	}
}

void lw_code_rules_make(const struct lw_code_fact *facts, size_t count)
{
	struct lw_code_roots *made;

	if (!named_read)
		read_named();
	if (lw_code_roots_new(facts, count, (const char *const *)named,
			      named_count, NULL, &made) < 0)
		return;	/* the summary judges by paths, as before */
	lw_code_roots_free(roots);
	roots = made;
}

void lw_code_rules_drop(void)
{
	lw_code_roots_free(roots);
	roots = NULL;
}

enum lw_code_origin lw_origins_code_origin(const char *file)
{
	return lw_code_roots_origin(roots, file, strlen(file));
}
