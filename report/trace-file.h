/* SPDX-License-Identifier: MIT */
/*
 * A trace file read into a model: maps (or reads) the file, parses it and
 * keeps the mapping alive for the model's byte strings.
 */
#ifndef LW_TRACE_FILE_H
#define LW_TRACE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "model.h"
#include "locations.h"
#include "render.h"
#include "symbolize.h"
#include "trace-reader.h"

struct lw_trace_file {
	const uint8_t *data;
	size_t len;
	bool mapped;
	int guard;		/* its SIGBUS guard (trace-file.c); -1: none */
	size_t dropped;		/* pages before this were given back */
	struct lw_model model;
	struct lw_trace_result result;
	struct lw_symbolizer *symbolizer;
	struct lw_locations locations;
	struct lw_analysis analysis;
	struct lw_report report;
};

/*
 * Reads the trace at path into tf. Returns 0, or a negative errno with the
 * problem in words in message (without the path), e.g. "empty file". Call
 * lw_trace_file_close() in either case.
 *
 * A regular file is mapped, never read whole into memory; a pipe or a
 * device is refused unless its first bytes are a trace's, then copied to
 * an unlinked temporary file ($TMPDIR, else /tmp) and mapped.
 */
int lw_trace_file_open(struct lw_trace_file *tf, const char *path,
		       char *message, size_t message_size);
void lw_trace_file_close(struct lw_trace_file *tf);

/*
 * Whether the file shrank while it was mapped: what lay past its new end
 * read as zeros, so the report must not stand (say
 * LW_TRACE_SHRANK_MESSAGE). Checked by lw_trace_file_open() after the read,
 * and by a command after the views that read the trace again.
 */
bool lw_trace_file_shrank(const struct lw_trace_file *tf);
#define LW_TRACE_SHRANK_MESSAGE \
	"the file shrank while it was read (its writer cut it, or a copy of it is under way): read it again once it is written"

/* A damaged trace's damage (tf->result.damaged), in words: "damaged: ...". */
void lw_trace_file_damage(const struct lw_trace_file *tf, char *message,
			  size_t size);

/*
 * Whose code a Python frame is (usercode.h), with the directories the
 * user named (NULL: none): call it before any location or analysis is
 * asked for (lw_trace_file_open() sets it up with none). Returns 0 or
 * -ENOMEM.
 */
int lw_trace_file_set_user_code(struct lw_trace_file *tf,
				const struct lw_code_dirs *dirs);

/*
 * The analysis every view of the report reads (analysis.h), once the
 * rules and the minimum of steps are set: tf->report.analysis. Returns 0
 * or a negative errno.
 */
int lw_trace_file_analyse(struct lw_trace_file *tf);

/*
 * Gives the report its diagnosis rules (NULL: none) and, when they hold
 * suppressions, marks the sites they match (model.sites.suppressed), so
 * that every verdict and view leaves them out. Call before any growth
 * verdict. Returns 0 or -ENOMEM.
 */
int lw_trace_file_set_rules(struct lw_trace_file *tf,
			    const struct lw_rules *rules);


#endif
