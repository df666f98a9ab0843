/* SPDX-License-Identifier: MIT */
/*
 * Notebook cells: the file names IPython and ipykernel give the code of a
 * cell, for the shim (which copies the cells' text into the trace, as
 * INFO "source:NAME") and the report (which names the cell and shows the
 * line's text).
 *
 *   <ipython-input-5-0a1b2c3d>          IPython's terminal and older kernels:
 *                                       "cell 5"
 *   /tmp/ipykernel_4121/2583146019.py   ipykernel 6 and later: "cell" (the
 *                                       name holds no execution count)
 */
#ifndef LW_CELLS_H
#define LW_CELLS_H

#include <stdio.h>
#include <string.h>

/* The INFO key prefix of a cell's text in the trace. */
#define LW_CELL_SOURCE_KEY "source:"

/*
 * Whether file (len bytes) names a notebook cell; if so, and label is not
 * NULL, writes its name ("cell 5", "cell") to label.
 */
static inline int lw_cell_name(const char *file, size_t len, char *label,
			       size_t size)
{
	static const char input[] = "<ipython-input-";
	static const char kernel[] = "/ipykernel_";

	if (len > sizeof(input) && memcmp(file, input, sizeof(input) - 1) == 0 &&
	    file[len - 1] == '>') {
		size_t n = 0;
		const char *p = file + sizeof(input) - 1;

		while (p + n < file + len && p[n] >= '0' && p[n] <= '9')
			n++;
		if (!n || p[n] != '-')
			return 0;
		if (label)
			snprintf(label, size, "cell %.*s", (int)n, p);
		return 1;
	}
	for (size_t i = 0; i + sizeof(kernel) - 1 < len; i++) {
		const char *p = file + i;
		size_t n = 0;

		if (memcmp(p, kernel, sizeof(kernel) - 1) != 0)
			continue;
		p += sizeof(kernel) - 1;
		while (p + n < file + len && p[n] >= '0' && p[n] <= '9')
			n++;
		/* /tmp/ipykernel_PID/NAME.py: no further directory. */
		if (!n || p + n >= file + len || p[n] != '/' ||
		    memchr(p + n + 1, '/', (size_t)(file + len - p - n - 1)) ||
		    len < 3 || memcmp(file + len - 3, ".py", 3) != 0)
			return 0;
		if (label)
			snprintf(label, size, "cell");
		return 1;
	}
	return 0;
}

#endif
