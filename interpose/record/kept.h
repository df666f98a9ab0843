/* SPDX-License-Identifier: MIT */
/*
 * What survives the steps, per stack, while the program runs: the device
 * memory born after the first step (the warm-up: weights, optimizer state,
 * workspaces) that is still live at a later step's end. A stack whose
 * survivors reach a new high at step end after step end is growing, as the
 * report judges a site from its step series; this is the shim's own view of
 * it, cheap enough for every event: a few additions per allocation and free,
 * and a walk over the stacks that allocated during a step when it ends.
 *
 * It decides when the holder search runs during the run (a stack that has
 * grown for min_steps step ends, and again each time its survivors double),
 * and it names the growing stacks in the exit summary and the live line.
 * Not thread-safe: called under the tracker's lock.
 */
#ifndef LW_KEPT_H
#define LW_KEPT_H

#include <stdbool.h>
#include <stdint.h>

struct lw_stack_entry;

/* A stack's survivors (a member of struct lw_stack_entry). */
struct lw_kept {
	/* Born in the step running now (after the first), still live. */
	uint64_t step_bytes, step_count;
	/* Born after the first step, live, and past a step end since. */
	uint64_t bytes, count;
	/* The most it held at a step end, and when that was. */
	uint64_t max_bytes, max_count;
	uint32_t highs;		/* step ends at which count set a new high */
	uint32_t first_high, last_high;	/* steps written then */
	uint64_t first_bytes;	/* bytes at its first high */
	uint64_t searched_count;	/* count when a search was last asked */
	uint32_t listed_step;	/* 1 + the step it was listed in */
	/* Step ends in a row it kept memory at, the last of them. */
	uint32_t streak, streak_step;
	/* Step ends at which what it keeps, no more blocks than before, was
	 * larger than ever (one buffer made larger: torch.cat onto itself);
	 * the first, and the bytes when a search was last asked for it. */
	uint32_t size_highs, first_size_high;
	uint64_t size_max_bytes, size_searched_bytes;
	bool linger_asked;	/* a search was asked for that */
	/* Its births (after the first step), those while one of its blocks
	 * was still live, and frees more than one step after their birth:
	 * a step's input made larger every step is born onto nothing and
	 * freed by the next step (kept.c's step_input()). */
	uint32_t births, births_onto_live, late_frees;
	uint8_t wanted;		/* LW_KEPT_WANT_*: a holder search is asked */
};

/* Why a search is asked for a stack's memory, and which of it is searched
 * for: what survived two step ends (it grows: the last step's own tensors
 * are still in the loop's variables as the next begins), or one (a large
 * share of memory kept into every next step: the previous step's outputs
 * alive through the next one's peak). */
#define LW_KEPT_WANT_GROWTH 1
#define LW_KEPT_WANT_LINGER 2
/* A buffer made larger and larger: the newest, once past a step end. */
#define LW_KEPT_WANT_SIZE 4

/* Sets the step ends a stack must grow at before it is searched. */
void lw_kept_configure(unsigned min_steps);

/*
 * An allocation or free of device memory from stack, born at birth_step,
 * while step is running (steps written so far). sign is +1 or -1.
 */
void lw_kept_account(struct lw_stack_entry *stack, uint32_t birth_step,
		     uint32_t step, uint64_t bytes, int sign);

/*
 * The end of step (steps written before it), with device_live bytes of
 * device memory live. Returns true while a holder search is asked for a
 * stack (its kept.wanted), now or at an earlier step end, until
 * lw_kept_clear_wanted(): one that grew long enough to be judged (new
 * highs over min_steps steps; again each time what it keeps doubles), or
 * one that kept about the same
 * memory, a tenth of the device memory or more, at min_steps step ends in
 * a row (once).
 */
bool lw_kept_step_end(uint32_t step, uint64_t device_live);

/* The search asked for has its targets: forgets every ask. */
void lw_kept_clear_wanted(void);

/* Whether a search is asked for a reason no search was asked for before
 * (the first for a growth, the first for memory kept into the next step):
 * that one runs whatever the searches before it cost. */
/* Whether a search is asked for a growth now: what else survived two step
 * ends is searched for with it, so that memory one cause keeps (the
 * inputs a kept graph saved) is named by that cause. */
bool lw_kept_growth_asked(void);

bool lw_kept_first_of_its_reason(void);

/*
 * Device memory live at the last step end in the steps' own inputs made
 * larger every step (one block at a time, each freed before the next is
 * made and by the next step): the step's working memory, which the gate
 * leaves out of the run's growth, as the report does.
 */
uint64_t lw_kept_step_input_bytes(void);

/*
 * Whether the stack grows: it set new highs at step ends (three or more)
 * over min_steps steps or more, the last of them in the last quarter of
 * the steps so far (its survivors may have been let go since). Steps
 * written: steps.
 */
bool lw_kept_growing(const struct lw_stack_entry *stack, uint32_t steps);

/* The stack's growth per step (bytes), between its first and last high. */
double lw_kept_rate(const struct lw_stack_entry *stack);

/* The stacks growing now (lw_kept_growing()), and the fastest's rate. */
void lw_kept_growing_now(uint32_t steps, unsigned *sites, double *fastest);

/* Forgets the step's list (a new trace, a forked child). */
void lw_kept_reset(void);

#endif
