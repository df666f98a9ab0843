/* SPDX-License-Identifier: MIT */
#include "kept.h"

#include <string.h>

#include "arena.h"
#include "lw-growth.h"
#include "stacks.h"

static unsigned min_steps = LW_DEFAULT_MIN_STEPS;
/* The stacks that allocated in the running step (after the first): the
 * only ones whose survivors can rise when it ends. */
static struct lw_stack_entry **listed;
static size_t listed_count, listed_capacity;
static bool any_wanted;
/* The reasons (LW_KEPT_WANT_*) asked for now, and those a search was
 * asked for before. */
static uint8_t wanted_reasons, served_reasons;
/* lw_kept_step_input_bytes(): at the last step end. */
static uint64_t step_input_bytes;

void lw_kept_configure(unsigned steps)
{
	if (steps)
		min_steps = steps;
}

/* Lists the stack for the step's end; false when leakwatch's memory is
 * out (its survivors then rise at a later step). */
static bool list(struct lw_stack_entry *s, uint32_t step)
{
	if (s->kept.listed_step == step + 1)
		return true;
	if (listed_count == listed_capacity) {
		size_t n = listed_capacity ? 2 * listed_capacity : 256;
		struct lw_stack_entry **grown = lw_arena_alloc(n * sizeof(*grown));

		if (!grown)
			return false;
		if (listed_count)
			memcpy(grown, listed, listed_count * sizeof(*grown));
		lw_arena_free(listed);
		listed = grown;
		listed_capacity = n;
	}
	listed[listed_count++] = s;
	s->kept.listed_step = step + 1;
	return true;
}

void lw_kept_account(struct lw_stack_entry *s, uint32_t birth_step,
		     uint32_t step, uint64_t bytes, int sign)
{
	struct lw_kept *k;

	/* The first step's memory is the warm-up: not a survivor. */
	if (!s || birth_step < 1)
		return;
	k = &s->kept;
	if (sign > 0) {
		k->births++;
		/* The caller counted this block live already. */
		k->births_onto_live += s->device_live_count > 1;
	} else if (step > birth_step + 1) {
		k->late_frees++;
	}
	if (sign > 0) {
		if (!list(s, step))
			return;
		k->step_bytes += bytes;
		k->step_count++;
	} else if (birth_step >= step) {
		if (k->step_count) {
			k->step_bytes -= bytes;
			k->step_count--;
		}
	} else if (k->count) {
		k->bytes -= bytes;
		k->count--;
	}
}

/* Highs enough, over min_steps steps or more: a leak of a block a step,
 * and one that grows at each evaluation every few steps. */
#define MIN_HIGHS 3

static bool grew_long_enough(const struct lw_kept *k, uint32_t step)
{
	return k->highs >= MIN_HIGHS && step - k->first_high >= min_steps;
}

/* A step's input made larger every step, as the report's growth.c tells
 * it: one block at a time, never born while another of its blocks lives,
 * never freed later than the next step. */
static bool step_input(const struct lw_stack_entry *s)
{
	const struct lw_kept *k = &s->kept;

	return k->births >= 3 && 4 * k->births_onto_live < k->births &&
	       !k->late_frees && s->device_live_count <= 1;
}

bool lw_kept_step_end(uint32_t step, uint64_t device_live)
{
	bool wanted = false;

	step_input_bytes = 0;
	for (size_t i = 0; i < listed_count; i++) {
		struct lw_kept *k = &listed[i]->kept;
		bool input = step_input(listed[i]);

		k->bytes += k->step_bytes;
		k->count += k->step_count;
		k->step_bytes = k->step_count = 0;
		k->listed_step = 0;
		if (input)
			step_input_bytes += listed[i]->device_live_bytes;
		if (k->count) {
			k->streak = k->streak_step + 1 == step ? k->streak + 1 : 1;
			k->streak_step = step;
		}
		if (k->count > k->max_count) {
			if (!k->highs++) {
				k->first_high = step;
				k->first_bytes = k->bytes;
			}
			k->last_high = step;
			k->max_count = k->count;
			k->max_bytes = k->bytes;
			/* Grown long enough to be judged, and again each
			 * time what it keeps doubles. */
			if (grew_long_enough(k, step) &&
			    k->count >= 2 * k->searched_count) {
				k->searched_count = k->count;
				k->wanted |= LW_KEPT_WANT_GROWTH;
				wanted_reasons |= LW_KEPT_WANT_GROWTH;
				wanted = true;
			}
		}
		/* As many blocks as ever, but more bytes: a buffer made
		 * anew, larger, each time (torch.cat onto itself). Asked for
		 * like a growth, for its newest block. */
		else if (!input && k->count && k->count == k->max_count &&
			 k->bytes > k->max_bytes &&
			 k->bytes > k->size_max_bytes) {
			if (!k->size_highs++)
				k->first_size_high = step;
			k->size_max_bytes = k->bytes;
			if (k->size_highs >= MIN_HIGHS &&
			    step - k->first_size_high >= min_steps &&
			    k->bytes >= 2 * k->size_searched_bytes) {
				k->size_searched_bytes = k->bytes;
				k->wanted |= LW_KEPT_WANT_SIZE;
				wanted_reasons |= LW_KEPT_WANT_GROWTH;
				wanted = true;
			}
		}
		/* What it keeps into the next step, about the same at each
		 * step end (a growth has its own search): once. */
		if (k->count && !k->linger_asked && k->streak >= min_steps &&
		    2 * k->highs <= k->streak && k->bytes >= device_live / 10) {
			k->linger_asked = true;
			k->wanted |= LW_KEPT_WANT_LINGER;
			wanted_reasons |= LW_KEPT_WANT_LINGER;
			wanted = true;
		}
	}
	listed_count = 0;
	any_wanted |= wanted;
	return any_wanted;
}

static void clear_wanted(struct lw_stack_entry *s, void *ctx)
{
	(void)ctx;
	s->kept.wanted = 0;
}

void lw_kept_clear_wanted(void)
{
	if (any_wanted)
		lw_stacks_for_each(clear_wanted, NULL);
	any_wanted = false;
	served_reasons |= wanted_reasons;
	wanted_reasons = 0;
}

bool lw_kept_growth_asked(void)
{
	return any_wanted && (wanted_reasons & LW_KEPT_WANT_GROWTH);
}

bool lw_kept_first_of_its_reason(void)
{
	return any_wanted && (wanted_reasons & ~served_reasons);
}

uint64_t lw_kept_step_input_bytes(void)
{
	return step_input_bytes;
}

bool lw_kept_growing(const struct lw_stack_entry *s, uint32_t steps)
{
	const struct lw_kept *k = &s->kept;

	return grew_long_enough(k, k->last_high) &&
	       4 * (uint64_t)k->last_high >= 3 * (uint64_t)steps;
}

double lw_kept_rate(const struct lw_stack_entry *s)
{
	const struct lw_kept *k = &s->kept;

	if (k->last_high <= k->first_high)
		return 0;
	return ((double)k->max_bytes - (double)k->first_bytes) /
	       (double)(k->last_high - k->first_high);
}

struct growing_ctx {
	uint32_t steps;
	unsigned sites;
	double fastest;
};

static void count_growing(struct lw_stack_entry *s, void *data)
{
	struct growing_ctx *ctx = data;

	if (!lw_kept_growing(s, ctx->steps))
		return;
	ctx->sites++;
	if (lw_kept_rate(s) > ctx->fastest)
		ctx->fastest = lw_kept_rate(s);
}

void lw_kept_growing_now(uint32_t steps, unsigned *sites, double *fastest)
{
	struct growing_ctx ctx = { steps, 0, 0 };

	lw_stacks_for_each(count_growing, &ctx);
	*sites = ctx.sites;
	*fastest = ctx.fastest;
}

void lw_kept_reset(void)
{
	/* The stacks listed are gone or forgotten with the trace. */
	listed_count = 0;
	any_wanted = false;
	wanted_reasons = served_reasons = 0;
	step_input_bytes = 0;
}
