/* SPDX-License-Identifier: MIT */
/*
 * `leakwatch check`, the gate on traces, and the gate's options and
 * verdicts, which `leakwatch run` shares (commands.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "findings.h"
#include "formats.h"
#include "growth.h"
#include "lw-size.h"
#include "render.h"
#include "torch.h"
#include "trace-file.h"
#include "trace-pool.h"

void lw_check_usage(FILE *out)
{
	fputs("usage: " LW_SYNOPSIS_CHECK
	      "\n"
	      "A CI gate: fails when a trace passes one of the limits given (at least one).\n"
	      "\n"
	      "  --max-growth SIZE   device memory growth allowed per step, summed over the\n"
	      "                      sites that grow (or the run's, where no single site\n"
	      "                      grows): 0, 100 (bytes), 512KiB, 1.5GiB, 10MB\n"
	      "                      (decimal units: kB, MB, GB, TB; binary: KiB, MiB, GiB,\n"
	      "                      TiB, or K, M, G, T); for slow leaks\n"
	      "  --max-reserved-growth SIZE\n"
	      "                      growth allowed per step of PyTorch's reserved pool (its\n"
	      "                      segments): for a pool that keeps growing (rising sizes)\n"
	      "  --max-peak SIZE     the highest step peak of device memory allowed: for\n"
	      "                      memory held one step too long\n"
	      "  --max-reserved-peak SIZE\n"
	      "                      the highest step peak of PyTorch's reserved pool allowed\n"
	      "  --fail-on KINDS     fail on diagnosed leaks: kinds, comma-separated\n"
	      "                      (metric-copy,lingering-previous-step), and/or a\n"
	      "                      confidence: high (every leak of high confidence),\n"
	      "                      medium (medium or high), all (every leak)\n"
	      "  --min-steps N       judge only traces with at least N steps (default 10)\n"
	      "  --suppressions FILE sites to leave out: lines leak:PATTERN (repeatable;\n"
	      "                      also $LEAKWATCH_SUPPRESSIONS)\n"
	      "  --user-code DIR     the program's own Python code, for the sites' lines,\n"
	      "                      as for `leakwatch report`\n"
	      "  -h, --help          show this help\n"
	      "\n"
	      "Growth is judged from step (STEP marks) to step on the lower envelope after\n"
	      "a warm-up (the first tenth of the steps), site by site: optimizer state made\n"
	      "at the first step, blocks made once, caches that fill and stop (plateau) and\n"
	      "frees deferred to a periodic pass (sawtooth with a flat floor) are not\n"
	      "growth. A site that keeps one more allocation per step grows however small.\n"
	      "A gate never passes on nothing: a trace with fewer steps than --min-steps\n"
	      "cannot be judged (mark steps with leakwatch.step(), or\n"
	      "LEAKWATCH_STEP_AT=file:line, or run it longer), nor a reserved limit on a\n"
	      "trace without PyTorch's pool.\n"
	      "\n"
	      "Exit status: 0 when every trace is within every limit, 1 when one passes a\n"
	      "limit (each failure in one line with its figures; the growing sites with\n"
	      "their rate and what it comes to over 10,000 steps), 2 for bad usage or an\n"
	      "unreadable trace or a verdict that cannot be written, 3 when a trace cannot\n"
	      "be judged (too few steps, every CUDA allocation of its process failed, it\n"
	      "is damaged).\n",
	      out);
}

/* Most offending sites `check` prints: one screenful. */
#define CHECK_MAX_SITES 5

/* A gate option's limit: which of the gate's fields it sets. */
static uint64_t *gate_limit(struct lw_gate *gate, const char *option,
			    bool **given)
{
	const char *name = option + strspn(option, "-");

	if (strcmp(name, "max-growth") == 0 ||
	    strcmp(name, "LEAKWATCH_MAX_GROWTH") == 0)
		return *given = &gate->growth, &gate->max_growth;
	if (strcmp(name, "max-reserved-growth") == 0 ||
	    strcmp(name, "LEAKWATCH_MAX_RESERVED_GROWTH") == 0)
		return *given = &gate->reserved_growth,
		       &gate->max_reserved_growth;
	if (strcmp(name, "max-peak") == 0 ||
	    strcmp(name, "LEAKWATCH_MAX_PEAK") == 0)
		return *given = &gate->peak, &gate->max_peak;
	if (strcmp(name, "max-reserved-peak") == 0 ||
	    strcmp(name, "LEAKWATCH_MAX_RESERVED_PEAK") == 0)
		return *given = &gate->reserved_peak, &gate->max_reserved_peak;
	return NULL;
}

/* The kinds --fail-on knows, for its error: "retained-loss, ...". */
static void known_kinds(char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = 0;
	for (int c = 1; c < LW_CATEGORY_COUNT && used < size; c++) {
		const char *name = lw_category_name((enum lw_category)c);
		int n;

		if (!name)
			continue;
		n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
			     name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

/*
 * --fail-on LIST: kinds of leak (lw_category_name()), and "high",
 * "medium", "low" or "all" for every leak of that confidence or more.
 */
static int parse_fail_on(struct lw_gate *gate, const char *option,
			 const char *value)
{
	char copy[sizeof(gate->fail_on_text)], *item, *save = NULL;
	char kinds[512];

	if (snprintf(copy, sizeof(copy), "%s", value) >= (int)sizeof(copy)) {
		lw_error("%s: the list is too long (at most %zu characters)",
			 option, sizeof(copy) - 1);
		return -EINVAL;
	}
	memset(gate->fail_kinds, 0, sizeof(gate->fail_kinds));
	gate->fail_confidence = -1;
	for (item = strtok_r(copy, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		int c, confidence = -1;

		item += strspn(item, " ");
		item[strcspn(item, " ")] = 0;
		if (!item[0])
			continue;
		if (strcmp(item, "all") == 0 || strcmp(item, "low") == 0)
			confidence = LW_CONFIDENCE_LOW;
		else if (strcmp(item, "medium") == 0)
			confidence = LW_CONFIDENCE_MEDIUM;
		else if (strcmp(item, "high") == 0)
			confidence = LW_CONFIDENCE_HIGH;
		if (confidence >= 0) {
			if (gate->fail_confidence < 0 ||
			    confidence < gate->fail_confidence)
				gate->fail_confidence = confidence;
			continue;
		}
		for (c = 1; c < LW_CATEGORY_COUNT; c++) {
			const char *name =
				lw_category_name((enum lw_category)c);

			if (name && strcmp(name, item) == 0)
				break;
		}
		if (c == LW_CATEGORY_COUNT) {
			known_kinds(kinds, sizeof(kinds));
			lw_error("%s: unknown kind '%s' (known kinds: %s; or high, medium, all)",
				 option, item, kinds);
			return -EINVAL;
		}
		gate->fail_kinds[c] = true;
	}
	if (gate->fail_confidence < 0 &&
	    !memchr(gate->fail_kinds, true, sizeof(gate->fail_kinds))) {
		lw_error("%s needs kinds of leak or a confidence, such as metric-copy or high, not '%s'",
			 option, value);
		return -EINVAL;
	}
	snprintf(gate->fail_on_text, sizeof(gate->fail_on_text), "%s", value);
	gate->fail_on = true;
	return 0;
}

int lw_gate_option(struct lw_gate *gate, const char *option,
		   const char *value)
{
	uint64_t *limit;
	bool *given;

	if (strcmp(option, "--fail-on") == 0 ||
	    strcmp(option, "LEAKWATCH_FAIL_ON") == 0)
		return parse_fail_on(gate, option, value);
	limit = gate_limit(gate, option, &given);
	if (!limit || lw_parse_size(value, limit) < 0) {
		lw_error("%s needs a size such as 0, 100, 512KiB, 1.5GiB or 10MB, not '%s'",
			 option, value);
		return -EINVAL;
	}
	*given = true;
	return 0;
}

int lw_gate_getopt(struct lw_gate *gate, int c, const char *arg)
{
	static const struct {
		int c;
		const char *option;
	} options[] = {
		{ 'G', "--max-growth" },
		{ 'g' + 256, "--max-reserved-growth" },
		{ 'p' + 256, "--max-peak" },
		{ 'r' + 256, "--max-reserved-peak" },
		{ 'f' + 256, "--fail-on" },
	};

	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if (options[i].c == c)
			return lw_gate_option(gate, options[i].option, arg) < 0
				       ? -EINVAL : 1;
	return 0;
}

/*
 * Reads a trace for check, its suppressions marked, the user's code named
 * and the steps the gate needs set; with --fail-on, analyses it (here, on
 * a pool thread): the diagnosis it judges holds the growth the other
 * limits judge. Without, lw_check_trace() judges the growth alone.
 */
static int open_for_check(struct lw_trace_file *tf, const char *path,
			  const struct lw_gate *gate,
			  const struct lw_rules *rules,
			  const struct lw_code_dirs *user_code, char *message,
			  size_t message_size)
{
	int rc = lw_trace_file_open(tf, path, message, message_size);

	if (rc < 0)
		return rc;
	tf->report.min_steps = gate->min_steps;
	if ((rc = lw_trace_file_set_user_code(tf, user_code)) < 0 ||
	    (rc = lw_trace_file_set_rules(tf, rules)) < 0 ||
	    (gate->fail_on && (rc = lw_trace_file_analyse(tf)) < 0))
		snprintf(message, message_size, "%s", strerror(-rc));
	return rc;
}

/* "leakwatch: PATH: " */
static void put_verdict_lead(FILE *out, const char *path)
{
	fputs("leakwatch: ", out);
	lw_put_text_str(out, path);
	fputs(": ", out);
}

/*
 * The run's own growth over the second half of its steps, suppressed
 * sites left out: memory that grows at no single site (a new site every
 * step, each keeping one block) still grows there, while blocks made once
 * in the first steps are behind it. Returns 0 or -ENOMEM.
 */
static int late_run_growth(const struct lw_model *m, struct lw_growth *out)
{
	size_t n = m->points.count, first = n / 2;
	double *bytes;

	out->verdict = LW_VERDICT_NOT_ENOUGH_STEPS;
	out->per_step = 0;
	if (n - first < 2)
		return 0;
	bytes = malloc((n - first) * sizeof(*bytes));
	if (!bytes)
		return -ENOMEM;
	for (size_t i = first; i < n; i++)
		bytes[i - first] = (double)m->points.items[i].live_bytes;
	for (uint32_t site = 0; m->sites.suppressed && site < m->sites.count;
	     site++) {
		struct lw_live_count c;

		if (!m->sites.suppressed[site])
			continue;
		for (size_t i = first; i < n; i++)
			if (lw_model_site_at_point(m, site, i, &c))
				bytes[i - first] -= (double)c.live_bytes;
	}
	*out = lw_judge_series(bytes, n - first, m->points.stride);
	free(bytes);
	return 0;
}

/*
 * The growth limit: the sites that grow, as the findings judge growth (a
 * block made once in the first steps is no site's growth, whatever the
 * run's total does then); and the run's total over the second half of its
 * steps, for growth spread over sites that each keep one block. Returns 0
 * within it, 1 over it, a negative errno.
 */
static int check_growth(FILE *out, const char *path, struct lw_trace_file *tf,
			const struct lw_growth_report *g, uint64_t max_growth)
{
	char rate[LW_SIZE_BUF], per10k[LW_SIZE_BUF], limit[LW_SIZE_BUF];
	uint32_t *sites = NULL;
	size_t count = 0;
	double total = 0;
	int rc = lw_growing_sites(g, &sites, &count);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < count; i++)
		if (g->sites[sites[i]].bytes_per_step > 0)
			total += g->sites[sites[i]].bytes_per_step;
	lw_format_size(limit, max_growth);
	if (total <= (double)max_growth && g->run.verdict == LW_VERDICT_GROWING) {
		struct lw_growth late;

		if ((rc = late_run_growth(&tf->model, &late)) < 0) {
			free(sites);
			return rc;
		}
		if (late.verdict == LW_VERDICT_GROWING &&
		    late.per_step > (double)max_growth) {
			put_verdict_lead(out, path);
			fprintf(out, "GROWING: device memory %s per step (%s per 10,000 steps) over the second half of the run, at no single site (each keeps what it made once: `leakwatch report --sites` lists them), over the %s per step allowed (--max-growth)\n",
				lw_format_rate(rate, late.per_step),
				lw_format_rate(per10k, late.per_step * 10000),
				limit);
			free(sites);
			return 1;
		}
	}
	put_verdict_lead(out, path);
	if (total <= (double)max_growth) {
		if (count)
			fprintf(out, "ok: growing by %s per step (%s per 10,000 steps) at %zu site%s, within the %s per step allowed\n",
				lw_format_rate(rate, total),
				lw_format_rate(per10k, total * 10000), count,
				count == 1 ? "" : "s", limit);
		else if (g->run.verdict == LW_VERDICT_GROWING)
			fprintf(out, "ok: no site grows from step to step, and the run's total (%s per step) is within the %s per step allowed\n",
				lw_format_rate(rate, g->run.per_step), limit);
		else
			fprintf(out, "ok: %s, no site grows from step to step\n",
				lw_verdict_name(g->run.verdict));
		free(sites);
		return 0;
	}
	fprintf(out, "GROWING: device memory %s per step (%s per 10,000 steps) at %zu site%s, over the %s per step allowed (--max-growth)\n",
		lw_format_rate(rate, total),
		lw_format_rate(per10k, total * 10000), count,
		count == 1 ? "" : "s", limit);
	for (size_t i = 0; i < count; i++) {
		const struct lw_site_growth *sg = &g->sites[sites[i]];

		if (i == CHECK_MAX_SITES) {
			fprintf(out, "  ... and %zu more (leakwatch report lists them)\n",
				count - CHECK_MAX_SITES);
			break;
		}
		fprintf(out, "  #%zu %s per step (%s per 10,000 steps), %+.3g allocation%s per step\n",
			i + 1, lw_format_rate(rate, sg->bytes_per_step),
			lw_format_rate(per10k, sg->bytes_per_step * 10000),
			sg->count_per_step,
			sg->count_per_step == 1 ? "" : "s");
		struct lw_site_stack st;

		rc = lw_site_stack(&tf->report, sites[i], &st);
		if (rc == 0)
			lw_put_stack_location(out, &tf->model, &st);
		lw_site_stack_fini(&st);
		if (rc < 0)
			break;
	}
	free(sites);
	return rc < 0 ? rc : 1;
}

/* The highest step peak of device memory (reserved: PyTorch's pool), and
 * the step it ended. */
static uint64_t highest_step_peak(const struct lw_model *m, bool reserved,
				  uint64_t *step)
{
	uint64_t most = 0;

	*step = 0;
	for (size_t i = 0; i < m->points.count; i++) {
		const struct lw_step_point *p = &m->points.items[i];
		uint64_t peak = reserved ? p->peak_reserved_bytes
					 : p->peak_bytes;

		if (peak > most) {
			most = peak;
			*step = p->step;
		}
	}
	return most;
}

/* A peak limit: 0 within it, 1 over it. */
static int check_peak(FILE *out, const char *path, const struct lw_model *m,
		      bool reserved, uint64_t max)
{
	char peak[LW_SIZE_BUF], limit[LW_SIZE_BUF];
	uint64_t step, most = highest_step_peak(m, reserved, &step);
	const char *what = reserved ? "PyTorch's reserved memory"
				    : "device memory";

	lw_format_size(peak, most);
	lw_format_size(limit, max);
	put_verdict_lead(out, path);
	if (most <= max) {
		fprintf(out, "ok: %s peaked at %s (step %" PRIu64 "), within the %s allowed\n",
			what, peak, step, limit);
		return 0;
	}
	fprintf(out, "FAIL: %s peaked at %s at step %" PRIu64 ", over the %s allowed (%s)\n",
		what, peak, step, limit,
		reserved ? "--max-reserved-peak" : "--max-peak");
	return 1;
}

/* The reserved growth limit: 0 within it, 1 over it, a negative errno. */
static int check_reserved_growth(FILE *out, const char *path,
				 const struct lw_model *m, size_t min_steps,
				 uint64_t max)
{
	char rate[LW_SIZE_BUF], per10k[LW_SIZE_BUF], limit[LW_SIZE_BUF];
	struct lw_growth g;
	int rc = lw_torch_reserved_growth(m, min_steps, &g);

	if (rc < 0)
		return rc;
	lw_format_size(limit, max);
	put_verdict_lead(out, path);
	if (g.verdict != LW_VERDICT_GROWING || g.per_step <= (double)max) {
		if (g.verdict == LW_VERDICT_GROWING)
			fprintf(out, "ok: PyTorch's reserved memory grows by %s per step, within the %s per step allowed\n",
				lw_format_rate(rate, g.per_step), limit);
		else
			fprintf(out, "ok: PyTorch's reserved memory: %s\n",
				lw_verdict_name(g.verdict));
		return 0;
	}
	fprintf(out, "FAIL: PyTorch's reserved memory grows by %s per step (%s per 10,000 steps), over the %s per step allowed (--max-reserved-growth)\n",
		lw_format_rate(rate, g.per_step),
		lw_format_rate(per10k, g.per_step * 10000), limit);
	return 1;
}

/* Whether --fail-on names finding f: its kind, or its confidence for a
 * leak. Suppressed findings never fail. */
static bool fails_on(const struct lw_gate *gate, const struct lw_finding *f)
{
	if (f->suppressed)
		return false;
	if ((unsigned)f->category < LW_CATEGORY_COUNT &&
	    gate->fail_kinds[f->category])
		return true;
	return f->leak && gate->fail_confidence >= 0 &&
	       (int)f->confidence >= gate->fail_confidence;
}

/* --fail-on: each diagnosed finding it names fails, one line each. */
static int check_fail_on(FILE *out, const char *path, struct lw_trace_file *tf,
			 const struct lw_gate *gate)
{
	const struct lw_diagnosis *d;
	size_t failed = 0;
	int rc = tf->report.analysis ? 0 : lw_trace_file_analyse(tf);

	if (rc < 0)
		return rc;
	d = &tf->report.analysis->diagnosis;
	for (size_t i = 0; i < d->finding_count; i++) {
		const struct lw_finding *f = &d->findings[i];
		struct lw_named_frame at;
		bool found = false;

		if (!fails_on(gate, f))
			continue;
		if ((rc = lw_site_location(&tf->report, f->site, &at, &found)) < 0)
			return rc;
		put_verdict_lead(out, path);
		fprintf(out, "FAIL: %s (%s confidence)",
			lw_category_name(f->category),
			lw_confidence_name(f->confidence));
		if (found) {
			fputs(" at ", out);
			lw_put_frame_label(out, &at, lw_put_text);
		}
		fputs(" (--fail-on ", out);
		lw_put_text_str(out, gate->fail_on_text);
		fputs(")\n", out);
		failed++;
	}
	if (!failed) {
		put_verdict_lead(out, path);
		fputs("ok: no leak diagnosed of what --fail-on ", out);
		lw_put_text_str(out, gate->fail_on_text);
		fputs(" names\n", out);
	}
	return failed ? 1 : 0;
}

int lw_check_trace(FILE *out, FILE *err, const char *path,
		   struct lw_trace_file *tf, int rc, char *message,
		   size_t message_size, const struct lw_gate *gate)
{
	struct lw_growth_report own = { 0 };
	const struct lw_growth_report *g = &own;
	const struct lw_model *m = &tf->model;
	size_t min_steps = gate->min_steps;
	int verdict = 0;
	bool judged = false;

	if (rc < 0)
		goto out;
	if (tf->result.damaged) {
		lw_trace_file_damage(tf, message, message_size);
		put_verdict_lead(out, path);
		fputs("cannot judge: the trace is ", out);
		lw_put_text_str(out, message);
		putc('\n', out);
		rc = LW_CHECK_UNJUDGED;
		goto out;
	}
	if (m->meta.failed_allocations && !m->counts.allocations) {
		const struct lw_failed_allocation *f = &m->meta.failed[0];
		const char *name = lw_alloc_error_name(f->api, f->error);

		put_verdict_lead(out, path);
		fprintf(out, "cannot judge: every CUDA allocation failed (%" PRIu64 " calls; the first: %s returned %s%s%" PRIu64 "%s)\n",
			m->meta.failed_allocations, lw_api_name(f->api),
			name ? name : "", name ? " (" : "error ", f->error,
			name ? ")" : "");
		rc = LW_CHECK_UNJUDGED;
		goto out;
	}
	/* The growth of the trace's analysis when it has one (its report's,
	 * or --fail-on's): judged once. */
	if (tf->report.analysis) {
		g = &tf->report.analysis->growth;
	} else if ((rc = lw_model_growth(m, min_steps, &own)) < 0) {
		snprintf(message, message_size, "%s", strerror(-rc));
		goto out;
	}
	/* A gate never passes on nothing: too few steps is no verdict (its
	 * line says how many there were, and how to mark them). */
	if (g->run.verdict == LW_VERDICT_NOT_ENOUGH_STEPS) {
		put_verdict_lead(out, path);
		fprintf(out, "cannot judge: %" PRIu64 " step%s, at least %zu needed: mark each step (leakwatch.step(), or LEAKWATCH_STEP_AT=file:line for a loop), run it longer, or lower --min-steps\n",
			m->counts.steps, m->counts.steps == 1 ? "" : "s",
			min_steps);
		rc = LW_CHECK_TOO_FEW_STEPS;
		goto out;
	}
	judged = true;
	if ((gate->reserved_growth || gate->reserved_peak) &&
	    !m->torch.segments) {
		put_verdict_lead(out, path);
		fprintf(out, "cannot judge %s: the trace holds no segment of PyTorch's caching allocator (its pool is seen in a PyTorch program under its native allocator, or with expandable_segments)\n",
			gate->reserved_growth ? "--max-reserved-growth"
					      : "--max-reserved-peak");
		rc = LW_CHECK_UNJUDGED;
		goto out;
	}
	if (gate->growth &&
	    (rc = check_growth(out, path, tf, g, gate->max_growth)) > 0)
		verdict = 1;
	if (rc >= 0 && gate->reserved_growth &&
	    (rc = check_reserved_growth(out, path, m, min_steps,
					gate->max_reserved_growth)) > 0)
		verdict = 1;
	if (rc >= 0 && gate->peak &&
	    check_peak(out, path, m, false, gate->max_peak) > 0)
		verdict = 1;
	if (rc >= 0 && gate->reserved_peak &&
	    check_peak(out, path, m, true, gate->max_reserved_peak) > 0)
		verdict = 1;
	if (rc >= 0 && gate->fail_on &&
	    (rc = check_fail_on(out, path, tf, gate)) > 0)
		verdict = 1;
	if (rc < 0)
		snprintf(message, message_size, "%s", strerror(-rc));
	else
		rc = verdict;
out:
	/* What the steps judged are, and where they come from. */
	if (judged && rc >= 0) {
		char source[768];

		lw_render_step_source(m, false, source, sizeof(source));
		fprintf(out, "  steps: %" PRIu64 " (", m->counts.steps);
		lw_put_text_str(out, source);
		fputs(")\n", out);
	}
	fflush(out);
	if (rc < 0)
		lw_put_file_error(err, path, message);
	lw_growth_report_fini(&own);
	return rc;
}

int lw_check_file(FILE *out, const char *path, const struct lw_gate *gate,
		  const struct lw_rules *rules,
		  const struct lw_code_dirs *user_code)
{
	struct lw_trace_file tf;
	char message[256];
	int rc = open_for_check(&tf, path, gate, rules, user_code, message,
				sizeof(message));

	rc = lw_check_trace(out, stderr, path, &tf, rc, message,
			    sizeof(message), gate);
	lw_trace_file_close(&tf);
	return rc;
}

/* The traces of `check`: read on pool threads, judged in order. */
struct check_slot {
	struct lw_trace_file tf;
	char message[256];
};

struct check_files {
	const char *const *paths;
	const struct lw_rules *rules;
	const struct lw_code_dirs *user_code;
	const struct lw_gate *gate;
	struct check_slot *slots;
	size_t ahead;
	bool unreadable, over, unjudged;
};

static int load_check(void *ctx, size_t i)
{
	struct check_files *c = ctx;
	struct check_slot *slot = &c->slots[i % c->ahead];

	return open_for_check(&slot->tf, c->paths[i], c->gate, c->rules,
			      c->user_code, slot->message,
			      sizeof(slot->message));
}

static void judge_check(void *ctx, size_t i, int rc)
{
	struct check_files *c = ctx;
	struct check_slot *slot = &c->slots[i % c->ahead];

	rc = lw_check_trace(stdout, stderr, c->paths[i], &slot->tf, rc,
			    slot->message, sizeof(slot->message), c->gate);
	lw_trace_file_close(&slot->tf);
	if (rc < 0)
		c->unreadable = true;
	else if (rc == LW_CHECK_UNJUDGED || rc == LW_CHECK_TOO_FEW_STEPS)
		c->unjudged = true;
	else if (rc > 0)
		c->over = true;
}

int lw_cmd_check(int argc, char **argv)
{
	static const struct lw_trace_pool_ops ops = {
		.load = load_check,
		.use = judge_check,
	};
	static const struct option long_options[] = {
		LW_GATE_LONG_OPTIONS,
		{ "min-steps", required_argument, NULL, 'S' },
		{ "suppressions", required_argument, NULL, 'P' },
		{ "user-code", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct lw_output_options options = { .format = &lw_text_renderer };
	struct check_files checks;
	struct lw_rules rules;
	const char *output = NULL;
	struct lw_gate gate = { .min_steps = LW_DEFAULT_MIN_STEPS };
	bool unreadable = false, over = false, unjudged = false;
	int c, status = LW_EXIT_USAGE;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
		int grc = lw_gate_getopt(&gate, c, optarg);

		if (grc < 0)
			goto out;
		if (grc > 0)
			continue;
		switch (c) {
		case 'S':
			if (lw_parse_min_steps(optarg, &gate.min_steps) < 0)
				goto out;
			break;
		case 'P':
		case 'C':
			if (lw_output_option(c, optarg, &options, &output) < 0)
				goto out;
			break;
		default:
			status = lw_last_option(c, argv, lw_check_usage);
			goto out;
		}
	}
	if (!lw_gate_any(&gate)) {
		lw_error("check: a limit is required: --max-growth, --max-reserved-growth, --max-peak, --max-reserved-peak or --fail-on (usage: leakwatch check --max-growth SIZE [OPTIONS] TRACE...)");
		goto out;
	}
	if (optind >= argc) {
		lw_error("check: no trace given (usage: leakwatch check --max-growth SIZE [OPTIONS] TRACE...)");
		goto out;
	}
	if (lw_load_rules(&options, &rules) < 0 ||
	    lw_load_user_code(&options) < 0) {
		lw_rules_fini(&rules);
		goto out;
	}
	checks = (struct check_files){
		.paths = (const char *const *)argv + optind,
		.rules = options.report.rules,
		.user_code = options.report.user_code,
		.gate = &gate,
		.ahead = lw_trace_pool_threads((size_t)(argc - optind)) + 1,
	};
	checks.slots = calloc(checks.ahead, sizeof(*checks.slots));
	if (!checks.slots ||
	    lw_trace_pool_run((size_t)(argc - optind), checks.ahead, &ops,
			      &checks) < 0) {
		lw_error("%s", strerror(ENOMEM));
		free(checks.slots);
		lw_rules_fini(&rules);
		goto out;
	}
	free(checks.slots);
	unreadable = checks.unreadable;
	over = checks.over;
	unjudged = checks.unjudged;
	if (argc - optind > 1)
		lw_merged_view(stdout, (const char *const *)argv + optind,
			       (size_t)(argc - optind), gate.min_steps,
			       options.report.user_code);
	lw_rules_fini(&rules);
	status = unreadable ? LW_EXIT_USAGE
		 : over	    ? 1
		 : unjudged ? LW_EXIT_CHECK_UNJUDGED
			    : 0;
	/* A verdict nobody could read is no verdict. */
	if (lw_flush_output(stdout, "standard output") < 0)
		status = LW_EXIT_USAGE;
out:
	lw_code_dirs_fini(&options.user_code);
	return status;
}
