/* SPDX-License-Identifier: MIT */
/*
 * The classifier. Every rule here is about memory, lifetimes and the tags
 * of frames, never about a framework's names (those are in the rules file):
 *
 * The kind says what the memory is and what holds it, never what its size
 * alone suggests:
 *
 * - growing, with a deep copy in the stack: metric copy (a metric's code
 *   alone copies nothing);
 * - growing, held through an exception's traceback: kept exception; held
 *   by a reference cycle no root reaches while the collector is off:
 *   uncollected cycle (what holds it comes from the holder search);
 * - growing with no graph, held by a cache keyed per request (a dict keyed
 *   by strings or objects, an lru_cache): unbounded cache; made by a
 *   metric's update or held in a metric's declared state: metric state
 *   (the metric's other states join it);
 * - frees mostly inside cycle-collector passes, of blocks that outlive
 *   their step: metric copy with a copy in the stack, else cycle-delayed
 *   frees;
 * - growing in bytes while the count of blocks stays put, each step's
 *   block freed as the next, larger, is made: a growing buffer;
 * - several sites growing together at the same count per step, one of them
 *   under a module's forward: a retained graph (one finding, led by the
 *   forward site that grows most) when a graph is kept: a holder's path
 *   runs through autograd's graph, or no holder is known; what such a
 *   group keeps with no graph is told as a lone site's is (below);
 * - one site growing in small blocks made by a loss function, or kept
 *   where the program keeps its losses: a retained loss; with a graph
 *   behind it: a retained graph; with none, kept by a hook (its frames, a
 *   closure): kept activations; inputs put on the device: kept inputs; a
 *   forward pass's, or the program's, results held with no graph: kept
 *   outputs; nothing known but a scalar's size: a retained loss, at low
 *   confidence; else growth;
 * - memory released in batches (a log, validation or epoch interval) that
 *   does not grow across intervals is no leak: growth decides;
 * - alive at later steps' peaks and freed soon after, adding a tenth or
 *   more of a typical step's peak: lingering previous step;
 * - born in a transient phase and still live: unreleased module;
 * - plateau, a workspace, optimizer state made at the first step: not a
 *   leak, said so;
 * - PyTorch's reserved memory (its segments) growing while the tensors do
 *   not: fragmentation or cache growth, not a leak (one finding for the
 *   run, led by the PyTorch blocks that churn most).
 *
 * One cause, one finding: sites kept by the same holder are one finding,
 * and sites kept by different holders are never one; findings come most
 * at stake first.
 */
#include "diagnose.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "holders.h"
#include "locations.h"
#include "lw-hash.h"
#include "torch.h"

static bool has_python_frame(const struct lw_model *m, uint32_t site);

/* Blocks up to this size are a loss or a metric value, not activations. */
#define SMALL_BLOCK (64 * 1024)
/* The fewest frees that make a pattern of lifetimes or of GC passes. */
#define MIN_FREES 3
/* A lingering site matters when it adds this share of the peak. */
#define LINGER_SHARE_MIN 0.10
#define LINGER_SHARE_HIGH 0.20
/* ... and at least this much: a loss scalar kept a step is not worth one. */
#define LINGER_BYTES_MIN (64 * 1024)
/* Survivors of a transient phase, with no load in their stack, that matter. */
#define LARGE_SURVIVOR (1024 * 1024)
/* Memory that is no leak and rose, then stopped (a cache that filled), is
 * worth a line from this much (and a hundredth of a typical step's peak). */
#define NOTEWORTHY_BYTES (64 * 1024)
/* A retained graph: at least this many sites growing together. */
#define GRAPH_MIN_SITES 3

/*
 * Fixes in words that fit any program; the rules' fixes (PyTorch's words)
 * are given only for sites with Python frames.
 */
static const char *const generic_fixes[LW_CATEGORY_COUNT] = {
	[LW_CATEGORY_RETAINED_LOSS] = "keep the value (a number, or a copy on the host) instead of the device buffer, or free the kept buffers every step",
	[LW_CATEGORY_METRIC_COPY] = "drop the copy: reset and reuse the object instead of copying it every batch",
	[LW_CATEGORY_RETAINED_GRAPH] = "run evaluation without recording a graph, and keep detached values of outputs kept for later",
	[LW_CATEGORY_LINGERING] = "free the previous step's buffers (or drop the last references to them) before the next step allocates its own",
	[LW_CATEGORY_UNRELEASED_MODULE] = "drop the last reference to what the phase loaded, then collect garbage and empty the allocator's cache",
	[LW_CATEGORY_CYCLE_DELAYED] = "break the reference cycle (a weak reference), or collect garbage at step ends",
	[LW_CATEGORY_GROWTH] = "find what keeps these blocks alive from step to step (the line above made them) and drop the reference once used",
	[LW_CATEGORY_NOT_A_LEAK] = "nothing to fix",
	[LW_CATEGORY_GROWING_BUFFER] = "stop making one buffer larger every step: keep each step's piece apart (on the host if it is for later) and join them once, or allocate the whole buffer once",
	[LW_CATEGORY_KEPT_EXCEPTION] = "keep the error's message, not the exception object: its traceback keeps every frame it passed through, and their buffers",
	[LW_CATEGORY_UNCOLLECTED_CYCLE] = "break the reference cycle (a weak reference), or let the cycle collector run",
	[LW_CATEGORY_KEPT_ACTIVATIONS] = "keep a copy on the host or a summary of each output instead of the device buffer, and clear the container once used",
	[LW_CATEGORY_KEPT_OUTPUTS] = "keep what is needed of each result on the host instead of the device buffer, or bound the container that keeps them",
	[LW_CATEGORY_UNBOUNDED_CACHE] = "bound the cache: evict its oldest entries past a size limit, or clear it once a batch of requests is done",
	[LW_CATEGORY_KEPT_INPUTS] = "do not keep input buffers on the device: keep the host copy (or where to read it again), or bound the container",
	[LW_CATEGORY_METRIC_STATE] = "compute the metric and reset it at the end of each epoch, so that the batches it keeps are let go of; or keep a fixed-size summary (a binned variant) instead",
};

const char *lw_confidence_name(enum lw_confidence c)
{
	return c == LW_CONFIDENCE_HIGH ? "high"
	       : c == LW_CONFIDENCE_MEDIUM ? "medium" : "low";
}

/* A Python frame's names, NUL-terminated in buf; NULL where unknown. */
static const char *bytes_str(struct lw_bytes b, char *buf, size_t size)
{
	size_t n;

	if (!b.data)
		return NULL;
	n = b.len < size - 1 ? b.len : size - 1;
	memcpy(buf, b.data, n);
	buf[n] = 0;
	return buf;
}

/*
 * The tags of the frames seen so far, by native return address or Python
 * code object: sites share most of their frames, and the rules' globs are
 * matched once per frame instead of once per frame of each site.
 */
struct frame_tags {
	uint64_t key;		/* address, or code id; with python below */
	bool python;
	bool used;
	bool suppressed;
	uint32_t tags;
};

struct tag_memo {
	struct frame_tags *slots;
	size_t capacity, count;	/* capacity: a power of two, or 0 */
};

static struct frame_tags *memo_slot(struct tag_memo *memo, uint64_t key,
				    bool python)
{
	size_t i;

	if ((memo->count + 1) * 2 > memo->capacity) {
		size_t capacity = memo->capacity ? memo->capacity * 2 : 1024;
		struct frame_tags *slots = calloc(capacity, sizeof(*slots));

		if (!slots)
			return NULL;
		for (size_t j = 0; j < memo->capacity; j++) {
			struct frame_tags *old = &memo->slots[j];

			if (!old->used)
				continue;
			for (i = (size_t)(lw_hash_mix(old->key + old->python) >>
					  32) & (capacity - 1);
			     slots[i].used; i = (i + 1) & (capacity - 1))
				;
			slots[i] = *old;
		}
		free(memo->slots);
		memo->slots = slots;
		memo->capacity = capacity;
	}
	for (i = (size_t)(lw_hash_mix(key + python) >> 32) &
		 (memo->capacity - 1);
	     memo->slots[i].used; i = (i + 1) & (memo->capacity - 1)) {
		if (memo->slots[i].key == key && memo->slots[i].python == python)
			return &memo->slots[i];
	}
	return &memo->slots[i];
}

/* The tags of one frame, from the memo or from the rules. */
static int frame_tags(const struct lw_report *r, struct tag_memo *memo,
		      const struct lw_frame *frame, struct frame_tags *out)
{
	const struct lw_model *m = r->model;
	struct frame_tags *slot = NULL;
	const struct lw_symbol *sym;
	int rc;

	if (memo) {
		slot = memo_slot(memo, frame->python ? frame->py->code_id
						     : frame->address,
				 frame->python);
		if (!slot)
			return -ENOMEM;
		if (slot->used) {
			*out = *slot;
			return 0;
		}
	}
	memset(out, 0, sizeof(*out));
	if (frame->python) {
		char fn[512], file[1024];
		struct lw_bytes fb, lb;
		const char *f, *l;

		lw_model_pyframe_names(m, frame->py, &fb, &lb);
		f = bytes_str(fb, fn, sizeof(fn));
		l = bytes_str(lb, file, sizeof(file));
		out->tags = lw_rules_frame_tags(r->rules, f, l, NULL);
		out->suppressed = lw_rules_frame_suppressed(r->rules, f, l,
							    NULL);
	} else {
		if ((rc = lw_symbolize(r->symbolizer, frame->address,
				       &sym)) < 0)
			return rc;
		for (unsigned j = 0; j < sym->frame_count; j++) {
			const struct lw_sym_frame *sf = &sym->frames[j];

			out->tags |= lw_rules_frame_tags(r->rules,
							 sf->function, sf->file,
							 sym->module);
			out->suppressed |= lw_rules_frame_suppressed(
				r->rules, sf->function, sf->file, sym->module);
		}
		if (sym->frame_count == 0) {
			out->tags |= lw_rules_frame_tags(r->rules, NULL, NULL,
							 sym->module);
			out->suppressed |= lw_rules_frame_suppressed(
				r->rules, NULL, NULL, sym->module);
		}
	}
	if (slot) {
		out->key = frame->python ? frame->py->code_id : frame->address;
		out->python = frame->python;
		out->used = true;
		*slot = *out;
		memo->count++;
	}
	return 0;
}

/* The tags of a site's frames, and whether one of them is suppressed. */
static int site_tags(const struct lw_report *r, struct tag_memo *memo,
		     uint32_t site, uint32_t *tags, bool *suppressed)
{
	const struct lw_model *m = r->model;
	struct lw_frame *frames;
	size_t count;
	int rc;

	*tags = 0;
	*suppressed = false;
	if (!r->rules)
		return 0;
	rc = lw_model_stack(m, m->sites.items[site].stack_id, &frames, &count);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < count && rc == 0; i++) {
		struct frame_tags t;

		if ((rc = frame_tags(r, memo, &frames[i], &t)) < 0)
			break;
		*tags |= t.tags;
		*suppressed |= t.suppressed;
	}
	free(frames);
	return rc;
}

int lw_site_suppressed(const struct lw_report *r, uint32_t site,
		       bool *suppressed)
{
	uint32_t tags;

	return site_tags(r, NULL, site, &tags, suppressed);
}

static void site_evidence(const struct lw_model *m,
			  const struct lw_site_growth *sg, uint32_t site,
			  struct lw_evidence *ev)
{
	const struct lw_site *s = &m->sites.items[site];
	struct lw_totals t = lw_model_site_totals(m, site);

	memset(ev, 0, sizeof(*ev));
	ev->bytes_per_step = sg->bytes_per_step;
	ev->count_per_step = sg->count_per_step;
	ev->live_bytes = t.live_bytes;
	ev->live_count = t.live_count;
	ev->held_bytes = sg->held_bytes;
	ev->held_count = sg->held_count;
	ev->held_step = sg->held_step;
	ev->released = sg->released;
	ev->frees = s->frees;
	ev->mean_lifetime = s->frees ? (double)s->lifetime_total /
					       (double)s->frees : 0;
	ev->max_lifetime = s->lifetime_max;
	ev->gc_frees = s->gc_frees;
	ev->gc_passes = m->counts.gc_passes;
	ev->lingering_steps = s->lingering_steps;
	ev->lingering_bytes = s->lingering_max;
	ev->peak_bytes = m->peak.bytes;
	ev->mean_size = t.allocations ? t.bytes_allocated / t.allocations : 0;
	ev->allocations = t.allocations;
	ev->bytes_allocated = t.bytes_allocated;
	ev->sites = 1;
}

/* Transient-phase survivors still live: the site's phase share, if any. */
static const struct lw_site_share *transient_share(const struct lw_report *r,
						   uint32_t site,
						   uint64_t *phase_string)
{
	const struct lw_model *m = r->model;

	for (size_t i = 0; i < m->phases.count; i++) {
		const struct lw_phase *ph = &m->phases.items[i];
		const struct lw_string *name = lw_model_string(m, ph->string_id);
		char buf[256];

		if (!name || !ph->surviving_count ||
		    !lw_rules_transient_phase(r->rules,
					      bytes_str(name->text, buf,
							sizeof(buf))))
			continue;
		for (size_t j = 0; j < ph->sites.count; j++) {
			if (ph->sites.items[j].site == site &&
			    ph->sites.items[j].count) {
				*phase_string = ph->string_id;
				return &ph->sites.items[j];
			}
		}
	}
	return NULL;
}

static bool mostly(uint64_t part, uint64_t whole)
{
	return part >= MIN_FREES && part * 2 >= whole;
}

/* What the classifier knows of the run beyond one site's numbers. */
struct run_facts {
	/* A typical step's peak: the median of the step peaks after the
	 * warm-up (the first steps' peaks hold start-up, optimizer state
	 * made lazily). */
	uint64_t typical_peak;
	const struct lw_holder_facts *holders;	/* by site */
};

/* The median of the step peaks past the first tenth of the points. */
static uint64_t typical_peak(const struct lw_model *m)
{
	size_t n = m->points.count, from = n / 10, count = n - from;
	uint64_t *peaks, median;

	if (count == 0)
		return m->peak.bytes;
	if (!(peaks = malloc(count * sizeof(*peaks))))
		return m->peak.bytes;
	for (size_t i = 0; i < count; i++)
		peaks[i] = m->points.items[from + i].peak_bytes;
	/* An insertion sort: at most LW_STEP_POINTS_MAX points. */
	for (size_t i = 1; i < count; i++) {
		uint64_t v = peaks[i];
		size_t j = i;

		while (j > 0 && peaks[j - 1] > v) {
			peaks[j] = peaks[j - 1];
			j--;
		}
		peaks[j] = v;
	}
	median = peaks[count / 2];
	free(peaks);
	return median ? median : m->peak.bytes;
}

/*
 * One buffer made anew every step, larger each time: its bytes grow while
 * its count does not, and the previous one is freed as the next is made
 * (all_logits = torch.cat([all_logits, logits])).
 */
static bool growing_buffer(const struct lw_model *m,
			   const struct lw_site_growth *sg,
			   const struct lw_site *s)
{
	return sg->verdict == LW_VERDICT_GROWING && sg->bytes_per_step > 0 &&
	       sg->count_per_step < 0.25 && sg->held_count <= 4 &&
	       s->frees * 2 >= m->counts.steps;
}

/*
 * One site on its own. Growing sites that no rule explains are left as
 * LW_CATEGORY_GROWTH for the group rule (classify_groups()) to settle.
 */
static void classify_site(const struct lw_report *r,
			  const struct run_facts *run,
			  const struct lw_site_growth *sg, uint32_t site,
			  uint32_t tags, struct lw_finding *f)
{
	const struct lw_model *m = r->model;
	const struct lw_site *s = &m->sites.items[site];
	const struct lw_holder_facts *h = &run->holders[site];
	struct lw_evidence *ev = &f->evidence;
	bool growing = sg->verdict == LW_VERDICT_GROWING;
	/* A metric's code alone copies nothing: only a deep copy (or a
	 * metric's __deepcopy__) is one. */
	bool copy = tags & LW_TAG_COPY;
	/*
	 * Frees that wait for the collector matter when what they free
	 * outlives its step: alive at a later step's peak, or growing. A
	 * program that collects at every step's end frees in time.
	 */
	/* Frees after the last step are teardown, not the loop's doing (a
	 * collection at the end frees what no step's pass would have). */
	bool teardown = m->counts.steps && s->tail_step == m->counts.steps;
	uint64_t loop_frees = s->frees - (teardown ? s->tail_frees : 0);
	uint64_t loop_gc = s->gc_frees - (teardown ? s->tail_gc_frees : 0);
	bool gc = mostly(loop_gc, loop_frees) &&
		  (growing || s->lingering_steps || s->lifetime_max > 1);
	uint64_t linger = s->lingering_steps
				  ? s->lingering_total / s->lingering_steps : 0;
	const struct lw_site_share *share;

	f->category = LW_CATEGORY_NONE;
	f->confidence = LW_CONFIDENCE_MEDIUM;
	f->weight = (double)(ev->live_bytes > ev->held_bytes ? ev->live_bytes
							   : ev->held_bytes);
	ev->typical_peak_bytes = run->typical_peak;
	ev->lingering_mean_bytes = linger;
	if ((growing || gc) && copy) {
		f->category = LW_CATEGORY_METRIC_COPY;
		f->confidence = LW_CONFIDENCE_HIGH;
		f->reason = gc ? "copies made under a deep copy, freed only by the cycle collector's passes"
			       : "copies made under a deep copy pile up from step to step";
	} else if (growing && h->traceback) {
		f->category = LW_CATEGORY_KEPT_EXCEPTION;
		f->confidence = LW_CONFIDENCE_HIGH;
		f->reason = "kept by exceptions kept from step to step: each traceback keeps the frames it passed through, and their buffers";
	} else if (growing && h->unreachable && h->gc_off) {
		f->category = LW_CATEGORY_UNCOLLECTED_CYCLE;
		f->confidence = LW_CONFIDENCE_HIGH;
		f->reason = "kept by reference cycles that nothing refers to, which the cycle collector, turned off, never frees";
	} else if (growing && h->unreachable && h->metric_list && !gc &&
		   !h->graph) {
		/* One metric's state that grew while the metric was in use,
		 * left in a cycle once its owner returned: no pass of the
		 * collector freed any of it during the loop. */
		f->category = LW_CATEGORY_METRIC_STATE;
		f->confidence = LW_CONFIDENCE_HIGH;
		f->reason = "kept in a metric's state from step to step: list states that grow until the metric is computed and reset";
	} else if (growing && h->unreachable) {
		f->category = LW_CATEGORY_CYCLE_DELAYED;
		f->confidence = LW_CONFIDENCE_HIGH;
		f->reason = "kept by reference cycles that nothing refers to, until the cycle collector's next pass";
	} else if (gc) {
		f->category = LW_CATEGORY_CYCLE_DELAYED;
		f->confidence = growing ? LW_CONFIDENCE_HIGH
					: LW_CONFIDENCE_MEDIUM;
		f->reason = "freed only inside the cycle collector's passes: a reference cycle keeps it until then";
		f->weight = (double)s->gc_freed_bytes / (double)s->gc_frees *
			    ev->mean_lifetime;
	} else if (growing_buffer(m, sg, s)) {
		f->category = LW_CATEGORY_GROWING_BUFFER;
		f->confidence = LW_CONFIDENCE_HIGH;
		f->reason = "one buffer made anew every step, larger each time (the previous one freed as the next is made)";
		f->weight = (double)sg->held_bytes;
	} else if (growing && h->cache && !h->graph) {
		f->category = LW_CATEGORY_UNBOUNDED_CACHE;
		f->confidence = LW_CONFIDENCE_HIGH;
		f->reason = "kept by a cache whose keys never repeat: each new key adds an entry, and none is evicted";
	} else if (growing && ((tags & LW_TAG_METRIC) || h->metric_state) &&
		   !h->graph) {
		f->category = LW_CATEGORY_METRIC_STATE;
		f->confidence = h->found ? LW_CONFIDENCE_HIGH
					 : LW_CONFIDENCE_MEDIUM;
		f->reason = h->metric_state
				    ? "kept in a metric's state from step to step: list states that grow until the metric is computed and reset"
				    : "made by a metric's update and kept in its state from step to step: list states that grow until the metric is computed and reset";
	} else if (growing) {
		f->category = LW_CATEGORY_GROWTH; /* settled by the groups */
		f->weight = sg->bytes_per_step * (double)m->counts.steps;
	} else if (s->lingering_steps >= 3 && s->lingering_steps * 4 >= m->counts.steps &&
		   linger >= LINGER_BYTES_MIN &&
		   (double)linger >= LINGER_SHARE_MIN * (double)run->typical_peak) {
		f->category = LW_CATEGORY_LINGERING;
		f->confidence = (double)linger >= LINGER_SHARE_HIGH *
							  (double)run->typical_peak
					? LW_CONFIDENCE_HIGH
					: LW_CONFIDENCE_MEDIUM;
		f->reason = "a step's blocks are still alive at the next step's peak, and freed during it";
		f->weight = (double)linger;
	} else if ((ev->live_bytes || sg->last_bytes) &&
		   (share = transient_share(r, site, &ev->phase_string)) &&
		   ((tags & LW_TAG_LOAD) || share->bytes >= LARGE_SURVIVOR)) {
		ev->phase_bytes = share->bytes;
		f->category = LW_CATEGORY_UNRELEASED_MODULE;
		f->confidence = tags & LW_TAG_LOAD ? LW_CONFIDENCE_HIGH
						   : LW_CONFIDENCE_LOW;
		f->reason = ev->live_bytes
				    ? "born in a phase that should have released it, and still live"
				    : "born in a phase that should have released it, and kept through the steps after it";
		f->weight = (double)share->bytes;
	} else if (ev->live_bytes && (tags & LW_TAG_WORKSPACE)) {
		f->category = LW_CATEGORY_NOT_A_LEAK;
		f->reason = "a library workspace, kept for reuse";
	} else if (ev->live_bytes && sg->verdict == LW_VERDICT_PLATEAU) {
		f->category = LW_CATEGORY_NOT_A_LEAK;
		f->reason = "a cache that filled, then stopped growing (plateau)";
	} else if (ev->live_bytes && (tags & LW_TAG_CACHE)) {
		f->category = LW_CATEGORY_NOT_A_LEAK;
		f->reason = "a cache, kept on purpose";
	} else if (ev->live_bytes && (tags & LW_TAG_OPTIMIZER) &&
		   s->last_birth_step <= 1 && m->counts.steps) {
		f->category = LW_CATEGORY_NOT_A_LEAK;
		f->reason = "optimizer state, made lazily at the first step";
	}
}

/*
 * What tensors kept with no graph are, from what made them and what holds
 * them: outputs a module's hook keeps (the hook runs in their stack, or
 * its closure holds them) are activations; inputs put on the device,
 * kept inputs; anything else a forward pass or the program computed, kept
 * outputs (logits, generated ids, embeddings, values made of them).
 */
static void kept_without_graph(uint32_t tags, const struct lw_holder_facts *h,
			       struct lw_finding *f)
{
	if ((tags & LW_TAG_FORWARD) && ((tags & LW_TAG_HOOK) || h->closure)) {
		f->category = LW_CATEGORY_KEPT_ACTIVATIONS;
		f->confidence = LW_CONFIDENCE_HIGH;
		f->reason = "outputs of a module kept through a hook from step to step, without their graph";
	} else if ((tags & LW_TAG_INPUT) && !(tags & LW_TAG_FORWARD)) {
		f->category = LW_CATEGORY_KEPT_INPUTS;
		f->confidence = h->found ? LW_CONFIDENCE_HIGH
					 : LW_CONFIDENCE_MEDIUM;
		f->reason = "input batches put on the device and kept from step to step";
	} else if (tags & LW_TAG_FORWARD) {
		f->category = LW_CATEGORY_KEPT_OUTPUTS;
		f->confidence = h->found ? LW_CONFIDENCE_HIGH
					 : LW_CONFIDENCE_MEDIUM;
		f->reason = "outputs of a forward pass kept from step to step, without a graph";
	} else {
		f->category = LW_CATEGORY_KEPT_OUTPUTS;
		f->confidence = LW_CONFIDENCE_LOW;
		f->reason = "tensors the program computed kept from step to step, without a graph (results, or values made of them)";
	}
}

static bool same_rate(double a, double b)
{
	return b > 0 && fabs(a - b) <= 0.25 * b;
}

/* Whether a site may belong to the group of cause: kept by it, or by no
 * holder known (those join the first cause they grow with). */
static bool of_cause(const struct run_facts *run, uint32_t site,
		     uint64_t cause)
{
	uint64_t c = run->holders[site].cause;

	return c == cause || c == 0;
}

/* Growing sites of cause not settled yet that grow at this count. */
static uint32_t count_at_rate(const struct lw_model *m,
			      const struct lw_growth_report *g,
			      const struct run_facts *run, uint64_t cause,
			      const struct lw_finding *fs, double rate)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->sites.count; i++)
		n += fs[i].category == LW_CATEGORY_GROWTH &&
		     of_cause(run, i, cause) &&
		     same_rate(g->sites[i].count_per_step, rate);
	return n;
}

/*
 * Whether a growing site belongs to the graph: with a forward-pass site
 * growing, every site that grows at least about once a step (a kept graph
 * holds all that each step's forward made: inputs, activations, the loss,
 * at as many blocks per line as the line makes); without one, the sites at
 * the one rate.
 */
static bool in_graph(double count_per_step, double rate, bool forward)
{
	return forward ? count_per_step >= 0.75 : same_rate(count_per_step, rate);
}

/*
 * Settles the growing sites of one cause (0: kept by no holder known) that
 * grow together with a forward-pass site (or, without one, at least
 * GRAPH_MIN_SITES at one rate): one finding, led by the forward site that
 * grows most. It is a retained graph when a graph is kept (a holder's path
 * runs through autograd's graph, or no holder of it is known); outputs
 * kept without their graph (a holder that keeps detached tensors) are
 * kept activations.
 */
static void settle_group(const struct lw_report *r,
			 const struct run_facts *run,
			 const struct lw_growth_report *g,
			 struct lw_diagnosis *d, struct lw_finding *fs,
			 uint64_t cause)
{
	const struct lw_model *m = r->model;
	double rate = 0, best = -1;
	uint32_t members = 0, lead = LW_NO_SITE;
	bool forward = false, graph = false, held = false, known = false;

	for (uint32_t i = 0; i < m->sites.count; i++)
		if (fs[i].category == LW_CATEGORY_GROWTH &&
		    of_cause(run, i, cause) &&
		    (d->sites[i].tags & LW_TAG_FORWARD) &&
		    g->sites[i].count_per_step > rate) {
			rate = g->sites[i].count_per_step;
			forward = true;
		}
	for (uint32_t i = 0; i < m->sites.count && rate <= 0; i++)
		if (fs[i].category == LW_CATEGORY_GROWTH &&
		    of_cause(run, i, cause) &&
		    count_at_rate(m, g, run, cause, fs,
				  g->sites[i].count_per_step) >= GRAPH_MIN_SITES)
			rate = g->sites[i].count_per_step;
	for (uint32_t i = 0; i < m->sites.count && rate > 0; i++) {
		if (fs[i].category != LW_CATEGORY_GROWTH ||
		    !of_cause(run, i, cause) ||
		    !in_graph(g->sites[i].count_per_step, rate, forward))
			continue;
		members++;
		graph |= run->holders[i].graph;
		held |= run->holders[i].found;
		known |= run->holders[i].graph_known;
	}
	if (members < GRAPH_MIN_SITES && !(forward && members >= 2))
		return;
	for (uint32_t i = 0; i < m->sites.count; i++) {
		double key;

		if (fs[i].category != LW_CATEGORY_GROWTH ||
		    !of_cause(run, i, cause) ||
		    !in_graph(g->sites[i].count_per_step, rate, forward))
			continue;
		/* The lead: a forward site first, then the fastest. */
		key = g->sites[i].bytes_per_step +
		      ((d->sites[i].tags & LW_TAG_FORWARD) ? 1e18 : 0);
		if (key > best) {
			best = key;
			lead = i;
		}
	}
	for (uint32_t i = 0; i < m->sites.count; i++) {
		struct lw_finding *f = &fs[i];

		if (f->category != LW_CATEGORY_GROWTH ||
		    !of_cause(run, i, cause) ||
		    !in_graph(g->sites[i].count_per_step, rate, forward))
			continue;
		f->site = lead;
		if (graph || !held || !known) {
			f->category = LW_CATEGORY_RETAINED_GRAPH;
			f->confidence = forward && graph ? LW_CONFIDENCE_HIGH
				      : forward ? LW_CONFIDENCE_MEDIUM
						: LW_CONFIDENCE_LOW;
			f->reason = "many sites of a forward pass kept together, once per step: a whole graph survives each step";
		} else {
			kept_without_graph(d->sites[lead].tags,
					   &run->holders[lead], f);
			if (f->category != LW_CATEGORY_KEPT_INPUTS)
				f->confidence = forward ? LW_CONFIDENCE_HIGH
							: LW_CONFIDENCE_MEDIUM;
		}
	}
}

/* Orders causes by what they hold: the most first. */
struct cause_weight {
	uint64_t cause;
	double bytes;
};

static int heavier_cause(const void *a, const void *b)
{
	const struct cause_weight *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return (x->cause > y->cause) - (x->cause < y->cause);
}

/*
 * Settles the growing sites no single rule explained (LW_CATEGORY_GROWTH):
 * the graphs of each cause, heaviest first (settle_group()), then those
 * kept by no holder known; the rest are judged alone.
 */
static int classify_groups(const struct lw_report *r,
			   const struct run_facts *run,
			   const struct lw_growth_report *g,
			   struct lw_diagnosis *d, struct lw_finding *fs)
{
	const struct lw_model *m = r->model;
	struct cause_weight *causes = NULL;
	size_t n = 0;

	for (uint32_t i = 0; i < m->sites.count; i++) {
		uint64_t c = run->holders[i].cause;
		size_t k;

		if (fs[i].category != LW_CATEGORY_GROWTH || !c)
			continue;
		for (k = 0; k < n && causes[k].cause != c; k++)
			;
		if (k == n) {
			struct cause_weight *grown =
				realloc(causes, (n + 1) * sizeof(*causes));

			if (!grown) {
				free(causes);
				return -ENOMEM;
			}
			causes = grown;
			causes[n].cause = c;
			causes[n++].bytes = 0;
		}
		causes[k].bytes += g->sites[i].bytes_per_step;
	}
	if (n > 1)
		qsort(causes, n, sizeof(*causes), heavier_cause);
	for (size_t k = 0; k < n; k++)
		settle_group(r, run, g, d, fs, causes[k].cause);
	free(causes);
	settle_group(r, run, g, d, fs, 0);
	for (uint32_t i = 0; i < m->sites.count; i++) {
		struct lw_finding *f = &fs[i];
		const struct lw_holder_facts *h = &run->holders[i];

		if (f->category != LW_CATEGORY_GROWTH)
			continue;
		/* A loss: made by a loss function, or kept where the
		 * program keeps its losses; in a native program, a small
		 * block is all there is to tell. */
		if (f->evidence.mean_size <= SMALL_BLOCK && !h->graph &&
		    ((d->sites[i].tags & LW_TAG_LOSS) || h->loss_named ||
		     !has_python_frame(m, i))) {
			const struct lw_site *s = &m->sites.items[i];

			f->category = LW_CATEGORY_RETAINED_LOSS;
			f->confidence = (d->sites[i].tags & LW_TAG_LOSS) ||
						f->evidence.mean_size <= 4096
						? LW_CONFIDENCE_HIGH
						: LW_CONFIDENCE_MEDIUM;
			/* The wording matches the evidence's frees. */
			if (!s->frees)
				f->reason = "one small block kept per step and never released";
			else if (s->tail_step == m->counts.steps &&
				 s->tail_frees == s->frees)
				f->reason = "one small block kept per step, released only after the last step";
			else
				f->reason = "one small block kept per step, released only long after";
		} else if (h->graph) {
			f->category = LW_CATEGORY_RETAINED_GRAPH;
			f->confidence = LW_CONFIDENCE_HIGH;
			f->reason = "kept with the autograd graph that made it, from step to step";
		} else if ((d->sites[i].tags & (LW_TAG_FORWARD | LW_TAG_INPUT)) ||
			   (h->found && h->graph_known)) {
			/* Alone: a kept graph keeps every layer's saved
			 * tensors, many sites growing together; one site of
			 * a forward pass that grows keeps its outputs. */
			kept_without_graph(d->sites[i].tags, h, f);
		} else if (f->evidence.mean_size <= 4096 && !h->found) {
			/* Nothing known but its size: a scalar, a loss most
			 * often, said with the doubt it deserves. */
			f->category = LW_CATEGORY_RETAINED_LOSS;
			f->confidence = LW_CONFIDENCE_LOW;
			f->reason = "one scalar-sized block kept per step (a loss, most often); no holder found to say what it is";
		} else {
			f->confidence = LW_CONFIDENCE_LOW;
			f->reason = "grows from step to step";
		}
	}
	return 0;
}

struct lead_key {
	uint32_t location;
	uint32_t site;
	enum lw_category category;
	bool suppressed;
	uint64_t cause;
	double weight;
};

static int compare_leads(const void *a, const void *b)
{
	const struct lead_key *x = a, *y = b;

	if (x->location != y->location)
		return x->location < y->location ? -1 : 1;
	if (x->category != y->category)
		return x->category < y->category ? -1 : 1;
	if (x->suppressed != y->suppressed)
		return x->suppressed ? 1 : -1;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

/* Causes that may be one: the same, or one not known. */
static bool same_cause(uint64_t a, uint64_t b)
{
	return a == b || !a || !b;
}

/*
 * Findings of one kind led from one location become one: a line of the
 * user's code that leaks through several framework paths (each its own
 * stack, so its own site) is one leak, unless different holders keep
 * them (two lists of one loss are two leaks). The site with the most at
 * stake leads; the others join it as group members do.
 */
static int group_by_location(const struct lw_report *r,
			     const struct run_facts *run,
			     const struct lw_diagnosis *d,
			     struct lw_finding *fs)
{
	const struct lw_model *m = r->model;
	struct lead_key *keys = NULL;
	uint32_t *lead_of = NULL;
	size_t n = 0;
	int rc = 0;

	if (!r->locations)
		return 0;
	for (uint32_t i = 0; i < m->sites.count; i++)
		n += fs[i].category != LW_CATEGORY_NONE && fs[i].site == i;
	if (n < 2)
		goto out;
	keys = calloc(n, sizeof(*keys));
	lead_of = malloc(m->sites.count * sizeof(*lead_of));
	if (!keys || !lead_of) {
		rc = -ENOMEM;
		goto out;
	}
	n = 0;
	for (uint32_t i = 0; i < m->sites.count; i++) {
		struct lead_key *k;

		lead_of[i] = i;
		if (fs[i].category == LW_CATEGORY_NONE || fs[i].site != i)
			continue;
		k = &keys[n++];
		if ((rc = lw_location_of(r->locations, i, &k->location)) < 0)
			goto out;
		k->site = i;
		k->category = fs[i].category;
		k->suppressed = d->sites[i].suppressed;
		k->cause = run->holders[i].cause;
		k->weight = fs[i].weight;
	}
	qsort(keys, n, sizeof(*keys), compare_leads);
	for (size_t i = 0, run_start = 0; i < n; i++) {
		const struct lead_key *k = &keys[i];

		if (i && (k->location != keys[i - 1].location ||
			  k->category != keys[i - 1].category ||
			  k->suppressed != keys[i - 1].suppressed))
			run_start = i;
		if (!r->locations->items[k->location].label)
			continue;
		/* The heaviest earlier lead of the run it may join. */
		for (size_t j = run_start; j < i; j++) {
			if (lead_of[keys[j].site] != keys[j].site ||
			    !same_cause(keys[j].cause, k->cause))
				continue;
			lead_of[k->site] = keys[j].site;
			break;
		}
	}
	for (uint32_t i = 0; i < m->sites.count; i++)
		if (fs[i].category != LW_CATEGORY_NONE)
			fs[i].site = lead_of[fs[i].site];
out:
	free(keys);
	free(lead_of);
	return rc;
}

/* Whether a finding of this kind is a leak a holder can explain. */
static bool leaky(enum lw_category c)
{
	return c != LW_CATEGORY_NONE && c != LW_CATEGORY_NOT_A_LEAK &&
	       c != LW_CATEGORY_CACHE_GROWTH;
}

/*
 * One cause, one finding: leads kept by the same holder (its container and
 * frame) become one, whatever their lines and kinds; the heaviest leads,
 * and a kept graph names it when one of them keeps one.
 */
static void merge_causes(const struct lw_report *r,
			 const struct run_facts *run, struct lw_finding *fs)
{
	const struct lw_model *m = r->model;

	for (uint32_t i = 0; i < m->sites.count; i++) {
		uint64_t cause = run->holders[i].cause;
		uint32_t lead = i, leads = 0;
		bool graph = false;

		/* Each cause once, from its first lead. */
		if (fs[i].site != i || !cause || !leaky(fs[i].category))
			continue;
		for (uint32_t j = 0; j < m->sites.count; j++) {
			if (fs[j].site != j || run->holders[j].cause != cause ||
			    !leaky(fs[j].category))
				continue;
			leads++;
			graph |= fs[j].category == LW_CATEGORY_RETAINED_GRAPH;
			if (fs[j].weight > fs[lead].weight)
				lead = j;
		}
		if (leads < 2)
			continue;
		for (uint32_t j = 0; j < m->sites.count; j++) {
			uint32_t at = fs[j].site;

			if (!leaky(fs[j].category) || at == lead ||
			    fs[at].site != at || run->holders[at].cause != cause)
				continue;
			fs[j].site = lead;
			fs[j].category = fs[lead].category;
			fs[j].confidence = fs[lead].confidence;
			fs[j].reason = fs[lead].reason;
		}
		/* The lead's own members last: the lead changes no more. */
		for (uint32_t j = 0; graph && j < m->sites.count; j++) {
			if (fs[j].site != lead)
				continue;
			if (fs[lead].category != LW_CATEGORY_RETAINED_GRAPH)
				fs[j].reason = "kept with the autograd graph that made it, from step to step";
			else
				fs[j].reason = fs[lead].reason;
			fs[j].category = LW_CATEGORY_RETAINED_GRAPH;
			fs[j].confidence = LW_CONFIDENCE_HIGH;
		}
	}
}

/*
 * A metric's states are one cause: leads kept by attributes of the object
 * whose state a metric's update grows (its "preds" and its "target", the
 * one made by the metric, the other the batch's own labels) join the
 * metric's finding. Members first, then the leads they followed.
 */
static void merge_metric_states(const struct lw_report *r,
				const struct run_facts *run,
				struct lw_finding *fs)
{
	const struct lw_model *m = r->model;

	for (uint32_t first = 0; first < m->sites.count; first++) {
		uint64_t owner = run->holders[first].owner;
		uint32_t i = first;

		if (fs[first].site != first || !owner ||
		    fs[first].category != LW_CATEGORY_METRIC_STATE)
			continue;
		/* The state that grows fastest leads. */
		for (uint32_t j = first + 1; j < m->sites.count; j++)
			if (fs[j].site == j && run->holders[j].owner == owner &&
			    fs[j].category == LW_CATEGORY_METRIC_STATE &&
			    fs[j].evidence.bytes_per_step >
				    fs[i].evidence.bytes_per_step)
				i = j;
		for (int leads = 0; leads < 2; leads++) {
			for (uint32_t j = 0; j < m->sites.count; j++) {
				uint32_t at = fs[j].site;

				if ((j == at) != leads || at == i ||
				    !leaky(fs[j].category) ||
				    fs[at].site != at ||
				    run->holders[at].owner != owner)
					continue;
				fs[j].site = i;
				fs[j].category = fs[i].category;
				fs[j].confidence = fs[i].confidence;
				fs[j].reason = fs[i].reason;
			}
		}
	}
}

/* A kind of leak that grows from step to step (not one that holds memory
 * for a while: a phase's, a step's kept into the next). */
static bool grows(const struct lw_finding *f)
{
	return f->leak && f->category != LW_CATEGORY_LINGERING &&
	       f->category != LW_CATEGORY_UNRELEASED_MODULE;
}

/* Leaks first: those that grow, by what they add over the run, then those
 * that hold memory, by what they hold; confidence last. */
static int compare_findings(const void *a, const void *b)
{
	const struct lw_finding *x = a, *y = b;

	if (x->leak != y->leak)
		return x->leak ? -1 : 1;
	if (grows(x) != grows(y))
		return grows(x) ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	if (x->confidence != y->confidence)
		return x->confidence > y->confidence ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

/* Whether the site's stack has a Python frame. */
static bool has_python_frame(const struct lw_model *m, uint32_t site)
{
	struct lw_frame *frames;
	size_t count;
	bool python = false;

	if (lw_model_stack(m, m->sites.items[site].stack_id, &frames, &count) < 0)
		return false;
	for (size_t i = 0; i < count && !python; i++)
		python = frames[i].python;
	free(frames);
	return python;
}

/*
 * The pool's verdict (pool.h), as a finding that is no leak. Its lead is
 * the PyTorch block site with no finding of its own whose requests drive
 * the pool: a step's input made larger every step when there is one, else
 * the site that allocated most.
 */
static int cache_growth(const struct lw_report *r,
			const struct lw_growth_report *g,
			const struct lw_finding *fs, struct lw_pool *pool,
			struct lw_finding *out)
{
	const struct lw_model *m = r->model;
	uint32_t lead = LW_NO_SITE;
	bool input = false;
	int rc;

	out->category = LW_CATEGORY_NONE;
	if ((rc = lw_pool_judge(m, r->min_steps, g->run.verdict, pool)) < 0)
		return rc;
	if (!pool->fragmented)
		return 0;
	for (uint32_t i = 0; i < m->sites.count; i++) {
		const struct lw_site *s = &m->sites.items[i];
		bool in = g->sites[i].step_input;

		if (!s->torch_block || fs[i].category != LW_CATEGORY_NONE ||
		    (input && !in))
			continue;
		if (lead == LW_NO_SITE || (in && !input) ||
		    s->totals.bytes_allocated >
			    m->sites.items[lead].totals.bytes_allocated)
			lead = i;
		input |= in;
	}
	if (lead == LW_NO_SITE)
		return 0;
	out->category = LW_CATEGORY_CACHE_GROWTH;
	out->confidence = pool->grows && pool->excess ? LW_CONFIDENCE_HIGH
						      : LW_CONFIDENCE_MEDIUM;
	out->site = lead;
	out->evidence = fs[lead].evidence;
	/* The pool's growth, not the site's. */
	out->evidence.bytes_per_step = pool->grows ? pool->reserved.per_step
						   : 0;
	out->evidence.count_per_step = 0;
	out->evidence.sites = 1;
	out->reason = lw_pool_pattern_text(pool);
	out->fix = lw_pool_fix(pool);
	return 0;
}

/*
 * Whether the site leads a finding. Memory that is not a leak is named
 * where it explains something a reader would chase: memory that rose, then
 * stopped (a cache that filled). Optimizer state made at the first step, a
 * library's workspace, a cache kept on purpose only keep their category
 * (the site's, in the JSON and the text report's live section).
 */
static bool said(const struct lw_growth_report *g,
		 const struct lw_finding *fs, uint32_t i)
{
	const struct lw_evidence *ev = &fs[i].evidence;

	if (fs[i].category == LW_CATEGORY_NONE || fs[i].site != i)
		return false;
	return fs[i].category != LW_CATEGORY_NOT_A_LEAK ||
	       (g->sites[i].verdict == LW_VERDICT_PLATEAU &&
		ev->held_bytes >= NOTEWORTHY_BYTES &&
		ev->held_bytes * 100 >= ev->typical_peak_bytes);
}

/* Merges the per-site verdicts into findings: one per site, one per group,
 * and the run's cache growth. */
static int collect(const struct lw_report *r, const struct lw_growth_report *g,
		   struct lw_diagnosis *d, struct lw_finding *fs)
{
	const struct lw_model *m = r->model;
	struct lw_finding cache;
	size_t n = 0;
	int rc;

	if ((rc = cache_growth(r, g, fs, &d->pool, &cache)) < 0)
		return rc;
	n = cache.category != LW_CATEGORY_NONE;
	for (uint32_t i = 0; i < m->sites.count; i++)
		n += said(g, fs, i);
	d->findings = n ? calloc(n, sizeof(*d->findings)) : NULL;
	if (n && !d->findings)
		return -ENOMEM;
	if (cache.category != LW_CATEGORY_NONE) {
		cache.leak = false;
		cache.suppressed = d->sites[cache.site].suppressed;
		if (r->rules && r->rules->fixes[cache.category])
			cache.fix = r->rules->fixes[cache.category];
		cache.weight = cache.evidence.bytes_per_step *
			       (double)(m->counts.steps ? m->counts.steps : 1);
		d->findings[d->finding_count++] = cache;
		d->sites[cache.site].category = cache.category;
		d->sites[cache.site].confidence = cache.confidence;
	}
	for (uint32_t i = 0; i < m->sites.count; i++) {
		struct lw_finding *f = &fs[i];

		if (!said(g, fs, i))
			continue;
		f->leak = f->category != LW_CATEGORY_NOT_A_LEAK &&
			  f->category != LW_CATEGORY_CACHE_GROWTH;
		f->suppressed = d->sites[i].suppressed;
		f->fix = r->rules && r->rules->fixes[f->category] &&
				 has_python_frame(m, i)
				 ? r->rules->fixes[f->category]
				 : generic_fixes[f->category];
		d->findings[d->finding_count++] = *f;
	}
	/* Group members add their numbers to the lead's. */
	for (uint32_t i = 0; i < m->sites.count; i++) {
		struct lw_finding *f = &fs[i], *lead = NULL;

		if (f->category == LW_CATEGORY_NONE || f->site == i)
			continue;
		for (size_t k = 0; k < d->finding_count; k++)
			if (d->findings[k].site == f->site)
				lead = &d->findings[k];
		if (!lead)
			continue;
		lead->evidence.allocations += f->evidence.allocations;
		lead->evidence.bytes_allocated += f->evidence.bytes_allocated;
		if (lead->evidence.allocations)
			lead->evidence.mean_size =
				lead->evidence.bytes_allocated /
				lead->evidence.allocations;
		if (lead->evidence.frees + f->evidence.frees)
			lead->evidence.mean_lifetime =
				(lead->evidence.mean_lifetime *
					 (double)lead->evidence.frees +
				 f->evidence.mean_lifetime *
					 (double)f->evidence.frees) /
				(double)(lead->evidence.frees + f->evidence.frees);
		if (f->evidence.max_lifetime > lead->evidence.max_lifetime)
			lead->evidence.max_lifetime = f->evidence.max_lifetime;
		lead->evidence.frees += f->evidence.frees;
		lead->evidence.gc_frees += f->evidence.gc_frees;
		lead->evidence.bytes_per_step += f->evidence.bytes_per_step;
		lead->evidence.count_per_step += f->evidence.count_per_step;
		lead->evidence.live_bytes += f->evidence.live_bytes;
		lead->evidence.live_count += f->evidence.live_count;
		lead->evidence.held_bytes += f->evidence.held_bytes;
		lead->evidence.held_count += f->evidence.held_count;
		if (f->evidence.held_step > lead->evidence.held_step)
			lead->evidence.held_step = f->evidence.held_step;
		lead->evidence.released |= f->evidence.released;
		lead->evidence.sites++;
	}
	/* What is at stake: what a growing leak adds over the run (its
	 * members' growth summed), else what it holds. */
	for (size_t k = 0; k < d->finding_count; k++) {
		struct lw_finding *f = &d->findings[k];

		if (f->leak && f->evidence.bytes_per_step > 0)
			f->weight = f->evidence.bytes_per_step *
				    (double)(m->counts.steps ? m->counts.steps : 1);
	}
	if (d->finding_count > 1)
		qsort(d->findings, d->finding_count, sizeof(*d->findings),
		      compare_findings);
	for (size_t k = 0; k < d->finding_count; k++) {
		const struct lw_finding *f = &d->findings[k];

		d->sites[f->site].finding = k;
		if (f->suppressed && f->leak) {
			d->suppressed_count++;
			d->suppressed_bytes += f->evidence.live_bytes;
		}
	}
	for (uint32_t i = 0; i < m->sites.count; i++)
		if (fs[i].category != LW_CATEGORY_NONE)
			d->sites[i].finding = d->sites[fs[i].site].finding;
	return 0;
}

int lw_diagnose(const struct lw_report *r, const struct lw_growth_report *gr,
		struct lw_diagnosis *d)
{
	const struct lw_model *m = r->model;
	const struct lw_growth_report g = *gr;
	struct lw_finding *fs = NULL;
	struct lw_holder_facts *holders = NULL;
	struct run_facts run = { 0 };
	struct tag_memo memo = { 0 };
	int rc = 0;

	memset(d, 0, sizeof(*d));
	if (m->sites.count == 0)
		goto out;
	d->sites = calloc(m->sites.count, sizeof(*d->sites));
	fs = calloc(m->sites.count, sizeof(*fs));
	if (!d->sites || !fs) {
		rc = -ENOMEM;
		goto out;
	}
	d->site_count = m->sites.count;
	holders = calloc(m->sites.count, sizeof(*holders));
	if (!holders) {
		rc = -ENOMEM;
		goto out;
	}
	run.holders = holders;
	run.typical_peak = typical_peak(m);
	for (uint32_t i = 0; i < m->sites.count; i++) {
		struct lw_site_diagnosis *sd = &d->sites[i];

		sd->finding = SIZE_MAX;
		fs[i].site = i;
		if (!lw_mem_kind_is_device(m->sites.items[i].kind))
			continue;
		if ((rc = site_tags(r, &memo, i, &sd->tags,
				    &sd->suppressed)) < 0 ||
		    (r->locations &&
		     (rc = lw_holder_facts(r, i, &holders[i])) < 0))
			goto out;
		site_evidence(m, &g.sites[i], i, &fs[i].evidence);
		classify_site(r, &run, &g.sites[i], i, sd->tags, &fs[i]);
	}
	if ((rc = classify_groups(r, &run, &g, d, fs)) < 0 ||
	    (rc = group_by_location(r, &run, d, fs)) < 0)
		goto out;
	merge_causes(r, &run, fs);
	merge_metric_states(r, &run, fs);
	for (uint32_t i = 0; i < m->sites.count; i++) {
		d->sites[i].category = fs[i].category;
		d->sites[i].confidence = fs[i].confidence;
		d->sites[i].reason = fs[i].reason;
	}
	rc = collect(r, &g, d, fs);
out:
	free(memo.slots);
	free(fs);
	free(holders);
	return rc;
}

void lw_diagnosis_fini(struct lw_diagnosis *d)
{
	free(d->sites);
	free(d->findings);
	memset(d, 0, sizeof(*d));
}
