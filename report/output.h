/* SPDX-License-Identifier: MIT */
/*
 * The report written to a file (-o FILE of `report` and `run`): never over
 * one of the traces it reads, never through a symbolic link planted at
 * FILE, never half-written over what FILE held, and private (mode 0600),
 * as the traces are: a report holds the same command lines and paths.
 *
 * The report goes to a temporary file beside FILE (same directory, so the
 * same file system), which replaces FILE by rename() once it is written
 * whole. A symbolic link at FILE is replaced, not followed. FILE that is
 * not a regular file (a terminal, a pipe, /dev/null), or that lies under
 * /dev or /proc (/dev/stdout names a descriptor, whatever it was
 * redirected to), is written directly, as it must not be replaced.
 */
#ifndef LW_OUTPUT_H
#define LW_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct lw_output {
	FILE *file;		/* where the report goes */
	const char *path;	/* FILE as given */
	char *temporary;	/* the file renamed to path; NULL: direct */
};

/*
 * Opens path for a report on the traces inputs (count of them; those that
 * do not exist yet are checked again at lw_output_close()). Returns 0, or
 * -1 after one line on stderr naming path and the problem.
 */
int lw_output_open(struct lw_output *o, const char *path,
		   const char *const *inputs, size_t count);

/*
 * Finishes the report: with ok, writes it out and puts it in place;
 * otherwise (or when it cannot be written whole) removes the temporary
 * file and leaves path as it was. Returns 0, or -1 after one line on
 * stderr. inputs: as for lw_output_open(), now that they all exist.
 */
int lw_output_close(struct lw_output *o, bool ok, const char *const *inputs,
		    size_t count);

#endif
