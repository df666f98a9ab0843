/* SPDX-License-Identifier: MIT */
/*
 * The report of trace files (commands.h): each read and analysed on a
 * pool thread, written in order on the command's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "formats.h"
#include "trace-file.h"
#include "trace-pool.h"

/* A trace being reported: read and analysed on a pool thread, written
 * on the command's. */
struct report_slot {
	struct lw_trace_file tf;
	char message[256];
};

struct report_files {
	const char *const *paths;
	const struct lw_output_options *options;
	const struct lw_renderer *renderer;
	struct lw_render_run *run;
	struct report_slot *slots;
	size_t ahead;
	int failed;
	const struct lw_report_then *then;
};

static int load_report(void *ctx, size_t i)
{
	struct report_files *f = ctx;
	const struct lw_output_options *options = f->options;
	struct report_slot *slot = &f->slots[i % f->ahead];
	struct lw_trace_file *tf = &slot->tf;
	int rc;

	rc = lw_trace_file_open(tf, f->paths[i], slot->message,
				sizeof(slot->message));
	if (rc == 0) {
		if (options->report.min_steps)
			tf->report.min_steps = options->report.min_steps;
		tf->report.native = options->report.native;
		tf->report.needs = f->renderer->needs;
		tf->report.options = &options->report;
		rc = lw_trace_file_set_user_code(tf, options->report.user_code);
		if (rc == 0)
			rc = lw_trace_file_set_rules(tf, options->report.rules);
		if (rc == 0)
			rc = lw_trace_file_analyse(tf);
		if (rc < 0)
			snprintf(slot->message, sizeof(slot->message), "%s",
				 strerror(-rc));
	}
	return rc;
}

static void write_report(void *ctx, size_t i, int rc)
{
	struct report_files *f = ctx;
	struct report_slot *slot = &f->slots[i % f->ahead];
	int loaded = rc;

	if (rc == 0) {
		rc = f->renderer->report(f->run, &slot->tf.report, i);
		if (rc < 0)
			snprintf(slot->message, sizeof(slot->message), "%s",
				 strerror(-rc));
		f->run->written++;
	}
	if (rc == 0 && lw_trace_file_shrank(&slot->tf)) {
		snprintf(slot->message, sizeof(slot->message), "%s",
			 LW_TRACE_SHRANK_MESSAGE);
		rc = -EIO;
	}
	/* What came before the damage is reported; the damage is an error
	 * all the same. */
	if (rc == 0 && slot->tf.result.damaged) {
		lw_trace_file_damage(&slot->tf, slot->message,
				     sizeof(slot->message));
		rc = -EBADMSG;
	}
	/* The message is the load's still when the load failed. */
	if (f->then)
		f->then->trace(f->then->ctx, i, &slot->tf, loaded,
			       slot->message);
	lw_trace_file_close(&slot->tf);
	/* The report so far first, then the error line. */
	fflush(f->run->out);
	if (rc < 0) {
		lw_put_file_error(stderr, f->paths[i], slot->message);
		f->failed++;
	}
}

int lw_report_files(FILE *out, const char *const *paths, size_t count,
		    const struct lw_output_options *options)
{
	return lw_report_files_then(out, paths, count, options, NULL);
}

int lw_report_files_then(FILE *out, const char *const *paths, size_t count,
			 const struct lw_output_options *options,
			 const struct lw_report_then *then)
{
	static const struct lw_trace_pool_ops ops = {
		.load = load_report,
		.use = write_report,
	};
	const struct lw_renderer *renderer =
		options->format ? options->format : &lw_text_renderer;
	struct lw_render_run run = {
		.out = out,
		.paths = paths,
		.count = count,
		.options = &options->report,
		.list = options->json_list,
	};
	/* Traces are read ahead of the one being written, one per thread. */
	struct report_files files = {
		.paths = paths,
		.options = options,
		.renderer = renderer,
		.run = &run,
		.ahead = lw_trace_pool_threads(count) + 1,
		.then = then,
	};
	int rc;

	if (renderer->state_size &&
	    !(run.state = calloc(1, renderer->state_size)))
		return -ENOMEM;
	files.slots = calloc(files.ahead, sizeof(*files.slots));
	if (!files.slots) {
		free(run.state);
		return -ENOMEM;
	}
	if (renderer->begin && renderer->begin(&run) < 0)
		files.failed++;
	if ((rc = lw_trace_pool_run(count, files.ahead, &ops, &files)) < 0) {
		free(files.slots);
		free(run.state);
		return rc;
	}
	free(files.slots);
	if (renderer->end && renderer->end(&run) < 0)
		files.failed++;
	if (renderer->merged_view && count >= 2 &&
	    lw_merged_view(out, paths, count, run.options->min_steps,
			   run.options->user_code) < 0)
		files.failed++;
	free(run.state);
	if (fflush(out) != 0 || ferror(out))
		return -(errno ? errno : EIO);
	return files.failed;
}
