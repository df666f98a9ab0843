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
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "render.h"
#include "sitekeys.h"
#include "trace-file.h"
#include "trace-pool.h"

/* Common sites listed. */
#define MERGE_MAX_SITES 10
/* The first bytes of a trace kept to tell a copy of it from another
 * process that claims its identity (a forged or hand-made trace). */
#define MERGE_PREFIX 4096

struct merged_trace {
	const char *path;
	char rank[32];		/* "" when the trace has none */
	uint32_t pid;
	uint64_t start_ns;
	uint64_t steps, peak, held, events;
	char step_source[256];	/* where the steps come from, in words */
	struct lw_growth run;
	struct lw_site_key *keys;	/* owned, from lw_site_keys */
	size_t key_count;
	/* Why the trace is not whole, in the single report's words
	 * ("DAMAGED: ...", "TRUNCATED: ..."); "" when complete. */
	char end[384];
	bool damaged, truncated;
	/* Left out of the comparison between traces: it could not be
	 * judged (nothing recorded, or too little before its damage). */
	bool left_out;
	/* The file, to find one given twice (regular files only). */
	bool regular;
	dev_t dev;
	ino_t ino;
	uint8_t *prefix;	/* owned: its first prefix_len bytes */
	size_t prefix_len;
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
	struct stat st;
	char message[256];
	int rc;

	memset(t, 0, sizeof(*t));
	memset(&keys, 0, sizeof(keys));
	t->path = path;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		t->regular = true;
		t->dev = st.st_dev;
		t->ino = st.st_ino;
	}
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
		t->prefix_len = tf.len < MERGE_PREFIX ? tf.len : MERGE_PREFIX;
		t->prefix = malloc(t->prefix_len ? t->prefix_len : 1);
		if (!t->prefix)
			rc = -ENOMEM;
		else if (t->prefix_len)
			memcpy(t->prefix, tf.data, t->prefix_len);
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
		t->start_ns = m->meta.header.start_time_ns;
		t->steps = m->counts.steps;
		lw_render_step_source(m, true, t->step_source,
				      sizeof(t->step_source));
		t->events = m->counts.events;
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
		/* Said as the single report says it (report/render/text.c). */
		t->damaged = tf.result.damaged;
		t->truncated = tf.result.truncated;
		lw_trace_describe_end(&tf.result, t->end, sizeof(t->end));
		/*
		 * A trace that holds nothing (a rank killed before its first
		 * allocation, a header and no more), or too little before
		 * its damage or its cut to be judged, has no sites: compared
		 * with the others, every site of theirs would read as growing
		 * in one rank only.
		 */
		t->left_out = t->events == 0 ||
			      ((t->damaged || t->truncated) &&
			       t->run.verdict == LW_VERDICT_NOT_ENOUGH_STEPS);
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
			  struct merged_trace *const *t, size_t n,
			  uint64_t (*get)(const struct merged_trace *))
{
	size_t lo = 0, hi = 0;
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF];

	for (size_t i = 1; i < n; i++) {
		if (get(t[i]) < get(t[lo]))
			lo = i;
		if (get(t[i]) > get(t[hi]))
			hi = i;
	}
	fprintf(out, "  %s: %s (", what, lw_format_size(a, get(t[lo])));
	put_name(out, t[lo]);
	fprintf(out, ") to %s (", lw_format_size(b, get(t[hi])));
	put_name(out, t[hi]);
	if (get(t[lo]))
		fprintf(out, "), %.2fx\n",
			(double)get(t[hi]) / (double)get(t[lo]));
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

/* One trace's line: its growth, or why it could not be judged. */
static void put_trace(FILE *out, const struct merged_trace *t)
{
	char rate[LW_SIZE_BUF], size[LW_SIZE_BUF];

	fputs("  ", out);
	put_name(out, t);
	if (t->left_out) {
		fputs(": not judged, ", out);
		if (t->damaged || (t->truncated && t->events))
			lw_put_text_str(out, t->end);
		else if (t->truncated)
			fputs("EMPTY: the trace ends after its header, no event recorded (process killed, or still running)", out);
		else
			fputs("EMPTY: no event recorded", out);
		fprintf(out, "; %" PRIu64 " events, %" PRIu64 " steps  ",
			t->events, t->steps);
		lw_put_text_str(out, t->path);
		putc('\n', out);
		return;
	}
	fprintf(out, ": %" PRIu64 " steps (", t->steps);
	lw_put_text_str(out, t->step_source);
	fprintf(out, "), peak %s, ", lw_format_size(size, t->peak));
	fprintf(out, "held %s, %s", lw_format_size(size, t->held),
		lw_verdict_name(t->run.verdict));
	if (t->run.verdict != LW_VERDICT_NOT_ENOUGH_STEPS)
		fprintf(out, " %s per step", lw_format_rate(rate, t->run.per_step));
	if (t->damaged) {
		fputs(", ", out);
		lw_put_text_str(out, t->end);
	}
	fputs("  ", out);
	lw_put_text_str(out, t->path);
	putc('\n', out);
}

/*
 * The sites growing in some of the traces c[0..n) but not all: each once,
 * with every trace it grows in ("growing in rank 0, rank 1 and rank 2"),
 * not once per trace as if each grew alone. row has room for n.
 */
static void put_partial(FILE *out, struct merged_trace *const *c, size_t n,
			struct lw_site_key **row)
{
	char rate[LW_SIZE_BUF];

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < c[i]->key_count; k++) {
			struct lw_site_key *key = &c[i]->keys[k];
			size_t growing = 0, found = 0, first = i;

			if (key->matched)
				continue;
			key->matched = true;
			for (size_t j = 0; j < n; j++) {
				struct lw_site_keys keys = {
					.items = c[j]->keys,
					.count = c[j]->key_count
				};

				row[j] = j == i	 ? key
					 : j < i ? NULL
						 : lw_site_keys_match(&keys, key);
				if (!row[j])
					continue;
				row[j]->matched = true;
				found++;
				if (row[j]->growth.verdict == LW_VERDICT_GROWING &&
				    growing++ == 0)
					first = j;
			}
			if (!growing)
				continue;
			fputs(growing == 1 ? "  growing only in " : "  growing in ",
			      out);
			for (size_t j = first, said = 0; j < n; j++) {
				if (!row[j] ||
				    row[j]->growth.verdict != LW_VERDICT_GROWING)
					continue;
				if (said++)
					fputs(said == growing ? " and " : ", ",
					      out);
				put_name(out, c[j]);
				if (growing > 1)
					fprintf(out, " %s/step", lw_format_rate(
						rate, row[j]->growth.bytes_per_step));
			}
			if (growing == 1)
				fprintf(out, ": %s/step", lw_format_rate(
					rate, row[first]->growth.bytes_per_step));
			if (growing > 1 && found > growing)
				fprintf(out, " (held but not growing in %zu more)",
					found - growing);
			fputs(" at ", out);
			lw_put_text_str(out, row[first]->label);
			putc('\n', out);
		}
	}
}

static void put_view(FILE *out, struct merged_trace *t, size_t n)
{
	struct lw_site_key **row;
	struct merged_trace **c;
	size_t common = 0, shown = 0, partial = 0, nc = 0;
	char rate[LW_SIZE_BUF];
	const char *all;

	qsort(t, n, sizeof(*t), compare_rank);
	fprintf(out, "\nMerged view of %zu traces:\n", n);
	for (size_t i = 0; i < n; i++)
		put_trace(out, &t[i]);
	row = calloc(n, sizeof(*row));
	c = calloc(n, sizeof(*c));
	if (!row || !c)
		goto out;
	/* Only the traces that could be judged are compared. */
	for (size_t i = 0; i < n; i++)
		if (!t[i].left_out)
			c[nc++] = &t[i];
	if (nc < 2) {
		fprintf(out, "  (%zu of %zu traces could be judged: nothing to compare)\n",
			nc, n);
		goto out;
	}
	all = nc == n ? "all traces" : "all judged traces";
	put_imbalance(out, "peak", c, nc, get_peak);
	put_imbalance(out, "held at the last step end", c, nc, get_held);

	/* Sites of the first trace found in every other one. */
	for (size_t k = 0; k < c[0]->key_count; k++) {
		bool every = true, grows = false;

		row[0] = &c[0]->keys[k];
		for (size_t i = 1; i < nc && every; i++) {
			struct lw_site_keys keys = { .items = c[i]->keys,
						     .count = c[i]->key_count };

			row[i] = lw_site_keys_match(&keys, row[0]);
			every = row[i] != NULL;
		}
		if (!every)
			continue;
		common++;
		for (size_t i = 0; i < nc; i++) {
			row[i]->matched = true;
			grows |= row[i]->growth.verdict == LW_VERDICT_GROWING;
		}
		if (!grows || shown == MERGE_MAX_SITES)
			continue;
		if (shown++ == 0)
			fprintf(out, "  growing sites common to %s:\n", all);
		fputs("   ", out);
		for (size_t i = 0; i < nc; i++) {
			fputs(i ? ", " : " ", out);
			put_name(out, c[i]);
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
	for (size_t i = 0; i < nc; i++)
		for (size_t k = 0; k < c[i]->key_count; k++)
			partial += !c[i]->keys[k].matched;
	fprintf(out, "  sites common to %s: %zu; sites in only some: %zu\n",
		all, common, partial);
	put_partial(out, c, nc, row);
out:
	free(c);
	free(row);
}

/*
 * Whether b is a trace counted already as a: the same file, or a copy of
 * the same process's trace (its pid, start time and rank, and its first
 * bytes as far as both go: a copy taken while it was written is a prefix).
 * Says so in one line when it is.
 */
static bool same_trace(const struct merged_trace *a,
		       const struct merged_trace *b)
{
	size_t len = a->prefix_len < b->prefix_len ? a->prefix_len
						   : b->prefix_len;

	if (a->regular && b->regular && a->dev == b->dev && a->ino == b->ino) {
		lw_error("%s: given twice (as %s too): counted once in the merged view",
			 b->path, a->path);
		return true;
	}
	if (a->pid != b->pid || a->start_ns != b->start_ns ||
	    strcmp(a->rank, b->rank) != 0 ||
	    memcmp(a->prefix, b->prefix, len) != 0)
		return false;
	lw_error("%s: the same process's trace as %s (pid %" PRIu32 "%s%s, the same start): counted once in the merged view",
		 b->path, a->path, b->pid, b->rank[0] ? ", rank " : "", b->rank);
	return true;
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
		struct lw_site_keys keys = { .items = t[i].keys,
					     .count = t[i].key_count };
		bool again = false;

		/* An unreadable trace was reported already; leave it out. */
		if (!t[i].path)
			continue;
		for (size_t j = 0; j < n && !again; j++)
			again = same_trace(&t[j], &t[i]);
		if (!again) {
			t[n++] = t[i];
			continue;
		}
		lw_site_keys_fini(&keys);
		free(t[i].prefix);
	}
	if (n > 1)
		put_view(out, t, n);
	for (size_t i = 0; i < n; i++) {
		struct lw_site_keys keys = { .items = t[i].keys,
					     .count = t[i].key_count };

		lw_site_keys_fini(&keys);
		free(t[i].prefix);
	}
	free(t);
	return 0;
}
