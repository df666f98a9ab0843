/* SPDX-License-Identifier: MIT */
/*
 * `leakwatch diff BEFORE AFTER`: what changed, location by location, between two
 * runs of the same program: did the fix work, did a change bring a leak.
 * Sites are matched by their frames' names (stack ids and addresses differ
 * from run to run): first all frames with their lines, then, for a file
 * edited above the site, without line numbers.
 *
 * Exit status: 0 when no site grows in AFTER that did not grow in BEFORE,
 * none grows faster than before, and no site leads a leak finding in AFTER
 * that had none in BEFORE (a phase's memory left live, a step's kept into
 * the next); 1 when one does (a regression); 2 for
 * bad usage or an unreadable trace; 3 when there is no regression but a
 * trace has too few steps to judge growth (none at all: only a header, or
 * a run that died before its first step) or is damaged: "cannot judge" is
 * its own outcome, never "fixed" nor "no regression".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "render.h"
#include "formats.h"
#include "rules.h"
#include "sitekeys.h"
#include "trace-file.h"

/* Rates within this fraction (and a byte a step) count as unchanged. */
#define DIFF_RATE_TOLERANCE 0.1

enum change {
	CHANGE_NEW_LEAK,	/* regressions first */
	CHANGE_WORSE,
	CHANGE_UNJUDGED,	/* a side has too few steps to judge growth */
	CHANGE_FIXED,
	CHANGE_BETTER,
	CHANGE_STILL_GROWING,
	CHANGE_NEW,
	CHANGE_GONE,
	CHANGE_LIVE,		/* grows in neither; live bytes changed */
	CHANGE_SAME,
};

static const char *const change_names[] = {
	"NEW LEAK", "WORSE", "cannot judge", "fixed", "better", "still growing", "new",
	"gone", "changed", "same",
};

struct pair {
	const struct lw_site_key *before, *after;
	enum change change;
};

static void diff_usage(FILE *out)
{
	fputs("usage: " LW_SYNOPSIS_DIFF
	      "\n"
	      "Compares two traces of the same program, location by location: growth\n"
	      "per step and device memory held, before and after. Locations are\n"
	      "matched by the names of their frames (with line numbers, then\n"
	      "without).\n"
	      "\n"
	      "  --min-steps N   judge growth only with at least N steps (default 10)\n"
	      "  --top N         show N locations (default 20; 0: all)\n"
	      "  --suppressions FILE  sites to leave out: lines leak:PATTERN (repeatable;\n"
	      "                  also $LEAKWATCH_SUPPRESSIONS)\n"
	      "  --user-code DIR the program's own Python code, for the locations, as\n"
	      "                  for `leakwatch report`\n"
	      "  -h, --help      show this help\n"
	      "\n"
	      "Exit status: 0 when no location grows in AFTER that did not grow in BEFORE,\n"
	      "or grows faster than before (by more than 10%), or leaks in AFTER (a\n"
	      "finding) and not in BEFORE; 1 when one does; 2 for bad usage, an\n"
	      "unreadable trace or a verdict that cannot be written; 3 when none does\n"
	      "but a trace has too few steps to judge growth (none at all: only a\n"
	      "header, a run that died before its first step) or is damaged (\"cannot\n"
	      "judge\"). Locations still growing at the same rate do not fail the\n"
	      "diff: `leakwatch check` judges those.\n",
	      out);
}

static bool growing(const struct lw_site_key *k)
{
	return k && k->growth.verdict == LW_VERDICT_GROWING;
}

static bool unjudged(const struct lw_site_key *k)
{
	return k && k->growth.verdict == LW_VERDICT_NOT_ENOUGH_STEPS;
}

static bool faster(double after, double before)
{
	return after > before * (1 + DIFF_RATE_TOLERANCE) + 1;
}

/* A leak finding that does not grow: memory a phase left, a step's kept
 * into the next. */
static bool leaked(const struct lw_site_key *k)
{
	return k && k->leaked;
}

/* b in BEFORE, a in AFTER, either NULL where that run has no such site;
 * b_judged, a_judged: whether that run has the steps to judge growth. */
static enum change classify(const struct lw_site_key *b,
			    const struct lw_site_key *a, bool b_judged,
			    bool a_judged)
{
	/* Too few steps on either side: whether it grows is not known,
	 * so neither "fixed" nor "new leak" can be said, of a site that
	 * run has or of one it lacks. */
	if (unjudged(b) || unjudged(a) || !b_judged || !a_judged)
		return CHANGE_UNJUDGED;
	if (!b)
		return growing(a) || leaked(a) ? CHANGE_NEW_LEAK : CHANGE_NEW;
	if (!a)
		return growing(b) || leaked(b) ? CHANGE_FIXED : CHANGE_GONE;
	if (growing(b) && !growing(a))
		return CHANGE_FIXED;
	if (!growing(b) && growing(a))
		return CHANGE_NEW_LEAK;
	if (growing(b)) {
		if (faster(a->growth.bytes_per_step, b->growth.bytes_per_step))
			return CHANGE_WORSE;
		if (faster(b->growth.bytes_per_step, a->growth.bytes_per_step))
			return CHANGE_BETTER;
		return CHANGE_STILL_GROWING;
	}
	if (leaked(a) && !leaked(b))
		return CHANGE_NEW_LEAK;
	if (leaked(b) && !leaked(a))
		return CHANGE_FIXED;
	return a->live_bytes == b->live_bytes ? CHANGE_SAME : CHANGE_LIVE;
}

/* What a location held: live at the report point, or for a leak let go
 * before it, the most it held at step ends. */
static uint64_t held(const struct lw_site_key *k)
{
	if (!k)
		return 0;
	return k->live_bytes > k->held_bytes || !leaked(k) ? k->live_bytes
							    : k->held_bytes;
}

static int compare_pairs(const void *x, const void *y)
{
	const struct pair *p = x, *q = y;
	uint64_t pb, qb;

	if (p->change != q->change)
		return p->change < q->change ? -1 : 1;
	pb = held(p->after) + held(p->before);
	qb = held(q->after) + held(q->before);
	return pb > qb ? -1 : pb < qb;
}

static void put_rate(FILE *out, const struct lw_site_key *k)
{
	char rate[LW_SIZE_BUF];

	if (!k)
		fputs("-", out);
	else if (k->growth.verdict == LW_VERDICT_GROWING)
		fprintf(out, "%s/step", lw_format_rate(rate, k->growth.bytes_per_step));
	else
		fputs(lw_verdict_name(k->growth.verdict), out);
}

static void put_pair(FILE *out, const struct pair *p)
{
	const struct lw_site_key *any = p->after ? p->after : p->before;
	char a[LW_SIZE_BUF], b[LW_SIZE_BUF];

	fprintf(out, "  %-13s growth ", change_names[p->change]);
	put_rate(out, p->before);
	fputs(" -> ", out);
	put_rate(out, p->after);
	fprintf(out, "; held %s -> %s\n",
		p->before ? lw_format_size(b, held(p->before)) : "-",
		p->after ? lw_format_size(a, held(p->after)) : "-");
	fputs("      at ", out);
	lw_put_text_str(out, any->label);
	putc('\n', out);
}

static void put_run(FILE *out, const struct lw_trace_file *b,
		    const struct lw_site_keys *kb,
		    const struct lw_trace_file *a,
		    const struct lw_site_keys *ka)
{
	char x[LW_SIZE_BUF], y[LW_SIZE_BUF];

	fprintf(out, "  growth: %s %s per step -> %s %s per step\n",
		lw_verdict_name(kb->findings.growth.run.verdict),
		lw_format_rate(x, kb->findings.growth.run.per_step),
		lw_verdict_name(ka->findings.growth.run.verdict),
		lw_format_rate(y, ka->findings.growth.run.per_step));
	char sb[768], sa[768];

	lw_render_step_source(&b->model, true, sb, sizeof(sb));
	lw_render_step_source(&a->model, true, sa, sizeof(sa));
	fprintf(out, "  steps: %" PRIu64 " (", b->model.counts.steps);
	lw_put_text_str(out, sb);
	fprintf(out, ") -> %" PRIu64 " (", a->model.counts.steps);
	lw_put_text_str(out, sa);
	fputs(")\n", out);
	fprintf(out, "  peak device memory: %s -> %s\n",
		lw_format_size(x, b->model.peak.bytes),
		lw_format_size(y, a->model.peak.bytes));
	fprintf(out, "  live device memory at the report point: %s -> %s\n",
		lw_format_size(x, lw_model_device_live_bytes(&b->model)),
		lw_format_size(y, lw_model_device_live_bytes(&a->model)));
}

/* Why the diff cannot tell: which trace has too few steps. */
static void put_unjudged(FILE *out, const struct lw_trace_file *b,
			 const char *before_path,
			 const struct lw_trace_file *a, const char *after_path,
			 size_t min_steps, size_t sites, bool others)
{
	if (sites)
		fprintf(out, "\nCANNOT JUDGE: growth at %zu location%s cannot be compared:",
			sites, sites == 1 ? "" : "s");
	else
		fputs("\nCANNOT JUDGE: nothing to compare:", out);
	if (b->model.counts.steps < min_steps) {
		fputs(" ", out);
		lw_put_text_str(out, before_path);
		fprintf(out, " has %" PRIu64 " step%s", b->model.counts.steps,
			b->model.counts.steps == 1 ? "" : "s");
	}
	if (a->model.counts.steps < min_steps) {
		fputs(b->model.counts.steps < min_steps ? " and " : " ", out);
		lw_put_text_str(out, after_path);
		fprintf(out, " has %" PRIu64 " step%s", a->model.counts.steps,
			a->model.counts.steps == 1 ? "" : "s");
	}
	fprintf(out, " (at least %zu needed: run it longer, or lower --min-steps)%s\n",
		min_steps, others ? "; no regression among the others" : "");
}

/* A damaged trace: compared, it would pass a leak off as fixed. */
static void put_damaged(FILE *out, const struct lw_trace_file *tf,
			const char *path)
{
	char message[256];

	lw_trace_file_damage(tf, message, sizeof(message));
	fputs("leakwatch: diff: CANNOT JUDGE: ", out);
	lw_put_text_str(out, path);
	fputs(" is ", out);
	lw_put_text_str(out, message);
	putc('\n', out);
}

static int diff(FILE *out, const char *before_path, const char *after_path,
		size_t min_steps, size_t top, const struct lw_rules *rules,
		const struct lw_code_dirs *user_code)
{
	struct lw_trace_file before, after;
	struct lw_site_keys kb = { 0 }, ka = { 0 };
	struct pair *pairs = NULL;
	size_t n = 0, regressions = 0, same = 0, shown = 0, cannot_judge = 0;
	bool b_judged, a_judged;
	char message[256];
	const char *bad = before_path;
	int rc;

	memset(&after, 0, sizeof(after));
	rc = lw_trace_file_open(&before, before_path, message, sizeof(message));
	if (rc == 0) {
		bad = after_path;
		rc = lw_trace_file_open(&after, after_path, message,
					sizeof(message));
	}
	if (rc < 0)
		goto out;
	if (before.result.damaged || after.result.damaged) {
		if (before.result.damaged)
			put_damaged(out, &before, before_path);
		if (after.result.damaged)
			put_damaged(out, &after, after_path);
		rc = LW_EXIT_CHECK_UNJUDGED;
		goto out;
	}
	before.report.min_steps = after.report.min_steps = min_steps;
	rc = lw_trace_file_set_user_code(&before, user_code);
	if (rc == 0)
		rc = lw_trace_file_set_user_code(&after, user_code);
	if (rc == 0)
		rc = lw_trace_file_set_rules(&before, rules);
	if (rc == 0)
		rc = lw_trace_file_set_rules(&after, rules);
	if (rc == 0)
		rc = lw_trace_file_analyse(&before);
	if (rc == 0)
		rc = lw_trace_file_analyse(&after);
	if (rc == 0)
		rc = lw_site_keys_build(&before.report, &kb);
	if (rc == 0)
		rc = lw_site_keys_build(&after.report, &ka);
	pairs = calloc(kb.count + ka.count + 1, sizeof(*pairs));
	if (rc == 0 && !pairs)
		rc = -ENOMEM;
	if (rc < 0) {
		snprintf(message, sizeof(message), "%s", strerror(-rc));
		goto out;
	}
	for (size_t i = 0; i < ka.count; i++) {
		struct lw_site_key *b = lw_site_keys_match(&kb, &ka.items[i]);

		if (b)
			b->matched = true;
		pairs[n].before = b;
		pairs[n++].after = &ka.items[i];
	}
	for (size_t i = 0; i < kb.count; i++)
		if (!kb.items[i].matched)
			pairs[n++].before = &kb.items[i];
	b_judged = before.model.counts.steps >= min_steps;
	a_judged = after.model.counts.steps >= min_steps;
	for (size_t i = 0; i < n; i++) {
		pairs[i].change = classify(pairs[i].before, pairs[i].after,
					   b_judged, a_judged);
		regressions += pairs[i].change == CHANGE_NEW_LEAK ||
			       pairs[i].change == CHANGE_WORSE;
		same += pairs[i].change == CHANGE_SAME;
		cannot_judge += pairs[i].change == CHANGE_UNJUDGED;
	}
	qsort(pairs, n, sizeof(*pairs), compare_pairs);

	fputs("leakwatch: diff ", out);
	lw_put_text_str(out, before_path);
	fputs(" -> ", out);
	lw_put_text_str(out, after_path);
	putc('\n', out);
	put_run(out, &before, &kb, &after, &ka);
	putc('\n', out);
	for (size_t i = 0; i < n; i++) {
		if (pairs[i].change == CHANGE_SAME)
			continue;
		if (top && shown == top) {
			fprintf(out, "  ... %zu more location%s (--top 0 shows all)\n",
				n - same - shown, n - same - shown == 1 ? "" : "s");
			break;
		}
		put_pair(out, &pairs[i]);
		shown++;
	}
	if (same)
		fprintf(out, "  %zu location%s unchanged\n", same,
			same == 1 ? "" : "s");
	if (regressions)
		fprintf(out, "\nREGRESSION: %zu location%s grow%s or leak%s in the second run that did not, or grow%s faster\n",
			regressions, regressions == 1 ? "" : "s",
			regressions == 1 ? "s" : "", regressions == 1 ? "s" : "",
			regressions == 1 ? "s" : "");
	else if (cannot_judge || !b_judged || !a_judged)
		put_unjudged(out, &before, before_path, &after, after_path,
			     min_steps, cannot_judge, n > cannot_judge);
	else
		fputs("\nno regression: no location grows that did not, or faster than before\n",
		      out);
	rc = regressions			      ? 1
	     : cannot_judge || !b_judged || !a_judged ? LW_EXIT_CHECK_UNJUDGED
						      : 0;
out:
	fflush(out);
	if (rc < 0) {
		fflush(stdout);
		fputs("leakwatch: ", stderr);
		lw_put_text_str(stderr, bad);
		fprintf(stderr, ": %s\n", message);
	}
	free(pairs);
	lw_site_keys_fini(&ka);
	lw_site_keys_fini(&kb);
	lw_trace_file_close(&after);
	lw_trace_file_close(&before);
	return rc;
}

int lw_cmd_diff(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "min-steps", required_argument, NULL, 'S' },
		{ "top", required_argument, NULL, 'T' },
		{ "suppressions", required_argument, NULL, 'P' },
		{ "user-code", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct lw_output_options options = { .format = &lw_text_renderer };
	size_t min_steps = LW_DEFAULT_MIN_STEPS, top = 20;
	struct lw_rules rules;
	const char *output = NULL;
	int c, rc = LW_EXIT_USAGE;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (lw_parse_min_steps(optarg, &min_steps) < 0)
				goto out;
			break;
		case 'T':
			if (lw_parse_count("--top", optarg, &top) < 0)
				goto out;
			break;
		case 'P':
		case 'C':
			if (lw_output_option(c, optarg, &options, &output) < 0)
				goto out;
			break;
		default:
			rc = lw_last_option(c, argv, diff_usage);
			goto out;
		}
	}
	if (argc - optind != 2) {
		lw_error("diff: needs two traces (usage: leakwatch diff [OPTIONS] BEFORE AFTER)");
		goto out;
	}
	if (lw_load_rules(&options, &rules) < 0 ||
	    lw_load_user_code(&options) < 0) {
		lw_rules_fini(&rules);
		goto out;
	}
	rc = diff(stdout, argv[optind], argv[optind + 1], min_steps, top,
		  options.report.rules, options.report.user_code);
	lw_rules_fini(&rules);
	rc = rc < 0 ? LW_EXIT_USAGE : rc;
	/* A verdict nobody could read is no verdict. */
	if (lw_flush_output(stdout, "standard output") < 0)
		rc = LW_EXIT_USAGE;
out:
	lw_code_dirs_fini(&options.user_code);
	return rc;
}

void lw_diff_usage(FILE *out)
{
	diff_usage(out);
}
