/* SPDX-License-Identifier: MIT */
/*
 * The merged view of several traces of one job (the ranks of a torchrun
 * job, or several runs): each trace's growth, the imbalance between them,
 * and the sites they have in common, matched by name (sitekeys.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "sitekeys.h"
#include "trace-file.h"
#include "trace-pool.h"

/* Common sites listed. */
#define MERGE_MAX_SITES 10

struct merged_trace {
	const char *path;
	char rank[32];		/* "" when the trace has none */
	uint32_t pid;
	uint64_t steps, peak, held;
	struct lw_growth run;
	struct lw_site_key *keys;	/* owned, from lw_site_keys */
	size_t key_count;
};

static int compare_rank(const void *x, const void *y)
{
	const struct merged_trace *a = x, *b = y;
	long ra = a->rank[0] ? strtol(a->rank, NULL, 10) : -1;
	long rb = b->rank[0] ? strtol(b->rank, NULL, 10) : -1;

	return ra < rb ? -1 : ra > rb;
}

static int load(const char *path, size_t min_steps,
		const struct lw_code_dirs *user_code, struct merged_trace *t)
{
	struct lw_trace_file tf;
	struct lw_site_keys keys;
	const struct lw_bytes *rank;
	char message[256];
	int rc;

	memset(t, 0, sizeof(*t));
	memset(&keys, 0, sizeof(keys));
	t->path = path;
	rc = lw_trace_file_open(&tf, path, message, sizeof(message));
	if (rc == 0) {
		tf.report.min_steps = min_steps;
		rc = lw_trace_file_set_user_code(&tf, user_code);
		if (rc == 0)
			rc = lw_trace_file_analyse(&tf);
		if (rc == 0)
			rc = lw_site_keys_build(&tf.report, &keys);
	}
	if (rc == 0) {
		const struct lw_model *m = &tf.model;

		if ((rank = lw_model_info(m, "rank")))
			snprintf(t->rank, sizeof(t->rank), "%.*s",
				 (int)(rank->len < 20 ? rank->len : 20),
				 (const char *)rank->data);
		/* Only digits: a rank is a number. */
		for (char *c = t->rank; *c; c++)
			if (*c < '0' || *c > '9')
				*c = '?';
		t->pid = m->meta.header.pid;
		t->steps = m->counts.steps;
		t->peak = m->peak.bytes;
		/* What the run kept from step to step: device memory at the
		 * last step end (at the report point without steps). */
		t->held = lw_model_point_count(m)
				  ? lw_model_point(m, lw_model_point_count(m) - 1)
					    ->live_bytes
				  : lw_model_device_live_bytes(m);
		t->run = keys.findings.growth.run;
		t->keys = keys.items;
		t->key_count = keys.count;
		keys.items = NULL;
		keys.count = 0;
	}
	lw_site_keys_fini(&keys);
	lw_trace_file_close(&tf);
	return rc;
}

static void put_name(FILE *out, const struct merged_trace *t)
{
	if (t->rank[0])
		fprintf(out, "rank %s", t->rank);
	else
		fprintf(out, "pid %" PRIu32, t->pid);
}

static void put_imbalance(FILE *out, const char *what,
			  const struct merged_trace *t, size_t n,
			  uint64_t (*get)(const struct merged_trace *))
{
	size_t lo = 0, hi = 0;
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF];

	for (size_t i = 1; i < n; i++) {
		if (get(&t[i]) < get(&t[lo]))
			lo = i;
		if (get(&t[i]) > get(&t[hi]))
			hi = i;
	}
	fprintf(out, "  %s: %s (", what, lw_format_size(a, get(&t[lo])));
	put_name(out, &t[lo]);
	fprintf(out, ") to %s (", lw_format_size(b, get(&t[hi])));
	put_name(out, &t[hi]);
	if (get(&t[lo]))
		fprintf(out, "), %.2fx\n",
			(double)get(&t[hi]) / (double)get(&t[lo]));
	else
		fputs(")\n", out);
}

static uint64_t get_peak(const struct merged_trace *t)
{
	return t->peak;
}

static uint64_t get_held(const struct merged_trace *t)
{
	return t->held;
}

static void put_view(FILE *out, struct merged_trace *t, size_t n)
{
	struct lw_site_key **row;
	size_t common = 0, shown = 0, partial = 0;
	char rate[LW_SIZE_BUF], size[LW_SIZE_BUF];

	qsort(t, n, sizeof(*t), compare_rank);
	fprintf(out, "\nMerged view of %zu traces:\n", n);
	for (size_t i = 0; i < n; i++) {
		fputs("  ", out);
		put_name(out, &t[i]);
		fprintf(out, ": %" PRIu64 " steps, peak %s, ", t[i].steps,
			lw_format_size(size, t[i].peak));
		fprintf(out, "held %s, %s", lw_format_size(size, t[i].held),
			lw_verdict_name(t[i].run.verdict));
		if (t[i].run.verdict != LW_VERDICT_NOT_ENOUGH_STEPS)
			fprintf(out, " %s per step",
				lw_format_rate(rate, t[i].run.per_step));
		fputs("  ", out);
		lw_put_text_str(out, t[i].path);
		putc('\n', out);
	}
	put_imbalance(out, "peak", t, n, get_peak);
	put_imbalance(out, "held at the last step end", t, n, get_held);

	row = calloc(n, sizeof(*row));
	if (!row)
		return;
	/* Sites of the first trace found in every other one. */
	for (size_t k = 0; k < t[0].key_count; k++) {
		bool all = true, grows = false;

		row[0] = &t[0].keys[k];
		for (size_t i = 1; i < n && all; i++) {
			struct lw_site_keys keys = { .items = t[i].keys,
						     .count = t[i].key_count };

			row[i] = lw_site_keys_match(&keys, row[0]);
			all = row[i] != NULL;
		}
		if (!all)
			continue;
		common++;
		for (size_t i = 0; i < n; i++) {
			row[i]->matched = true;
			grows |= row[i]->growth.verdict == LW_VERDICT_GROWING;
		}
		if (!grows || shown == MERGE_MAX_SITES)
			continue;
		if (shown++ == 0)
			fputs("  growing sites common to all traces:\n", out);
		fputs("   ", out);
		for (size_t i = 0; i < n; i++) {
			fputs(i ? ", " : " ", out);
			put_name(out, &t[i]);
			if (row[i]->growth.verdict == LW_VERDICT_GROWING)
				fprintf(out, " %s/step", lw_format_rate(
					rate, row[i]->growth.bytes_per_step));
			else
				fprintf(out, " %s",
					lw_verdict_name(row[i]->growth.verdict));
		}
		fputs("\n      at ", out);
		lw_put_text_str(out, row[0]->label);
		putc('\n', out);
	}
	free(row);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < t[i].key_count; k++)
			partial += !t[i].keys[k].matched;
	fprintf(out, "  sites common to all traces: %zu; sites in only some: %zu\n",
		common, partial);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < t[i].key_count; k++) {
			const struct lw_site_key *key = &t[i].keys[k];

			if (key->matched ||
			    key->growth.verdict != LW_VERDICT_GROWING)
				continue;
			fputs("  growing only in ", out);
			put_name(out, &t[i]);
			fprintf(out, ": %s/step at ",
				lw_format_rate(rate, key->growth.bytes_per_step));
			lw_put_text_str(out, key->label);
			putc('\n', out);
		}
	}
}

struct merge_load {
	const char *const *paths;
	size_t min_steps;
	const struct lw_code_dirs *user_code;
	struct merged_trace *t;
};

/* A trace that cannot be read is left with no path. */
static int load_one(void *ctx, size_t i)
{
	struct merge_load *l = ctx;
	int rc = load(l->paths[i], l->min_steps, l->user_code, &l->t[i]);

	if (rc < 0)
		l->t[i].path = NULL;
	return rc;
}

int lw_merged_view(FILE *out, const char *const *paths, size_t count,
		   size_t min_steps, const struct lw_code_dirs *user_code)
{
	static const struct lw_trace_pool_ops ops = { .load = load_one };
	struct merged_trace *t = calloc(count ? count : 1, sizeof(*t));
	struct merge_load l = {
		.paths = paths,
		.min_steps = min_steps ? min_steps : LW_DEFAULT_MIN_STEPS,
		.user_code = user_code,
		.t = t,
	};
	size_t n = 0;

	if (!t)
		return -ENOMEM;
	/* Only the traces' keys are kept: as many ahead as there are. */
	if (lw_trace_pool_run(count, count, &ops, &l) < 0) {
		free(t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		/* An unreadable trace was reported already; leave it out. */
		if (t[i].path)
			t[n++] = t[i];
	}
	if (n > 1)
		put_view(out, t, n);
	for (size_t i = 0; i < n; i++) {
		struct lw_site_keys keys = { .items = t[i].keys,
					     .count = t[i].key_count };

		lw_site_keys_fini(&keys);
	}
	free(t);
	return 0;
}
