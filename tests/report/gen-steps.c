/* SPDX-License-Identifier: MIT */
/*
 * Step scenarios: 200 training steps each (unless said), with the noise of a
 * real loop: activations and other temporaries allocated and freed within
 * every step, of sizes that vary. Stack ids, which the tests name:
 *   1 weights (before the loop)     2 temporaries (every step)
 *   3 the scenario's leak, or its suspect that is no leak
 *   4 optimizer state / a second suspect   5 step-end jitter (prefetch)
 */
#include "gen-steps.h"

#include <stdbool.h>

#include "lw-format.h"

#define STEPS 200
#define KiB 1024ull

struct sim {
	struct out *o;
	uint64_t next_addr;
	uint32_t rng;
	/* Allocations a scenario keeps across steps, freed in order. */
	uint64_t kept[4096];
	unsigned kept_count;
};

static uint32_t sim_random(struct sim *s)
{
	s->rng = s->rng * 1103515245u + 12345u;
	return s->rng >> 16;
}

static uint64_t sim_alloc(struct sim *s, uint64_t size, uint64_t stack)
{
	uint64_t addr = s->next_addr;

	s->next_addr += (size + 0xfffff) / 0x100000 * 0x100000 + 0x100000;
	rec_alloc(s->o, LW_MEM_DEVICE, addr, size, stack);
	return addr;
}

static void sim_keep(struct sim *s, uint64_t size, uint64_t stack)
{
	uint64_t addr = sim_alloc(s, size, stack);

	if (s->kept_count < sizeof(s->kept) / sizeof(s->kept[0]))
		s->kept[s->kept_count++] = addr;
}

/* Frees the kept allocations but the first `leave`. */
static void sim_release(struct sim *s, unsigned leave)
{
	while (s->kept_count > leave)
		rec_free(s->o, s->kept[--s->kept_count]);
}

static void sim_start(struct sim *s, struct out *o)
{
	static const uint64_t frames[5][3] = {
		{ 0x401010, 0x402000, 0x7f1234029d90 },
		{ 0x401020, 0x402010, 0x7f1234029d90 },
		{ 0x401030, 0x402020, 0x7f1234029d90 },
		{ 0x401040, 0x402030, 0x7f1234029d90 },
		{ 0x401050, 0x402040, 0x7f1234029d90 },
	};
	static const char cmdline[] = "./train\0" "--steps\0" "200";

	s->o = o;
	s->next_addr = 0x7f0000000000;
	s->rng = 42;
	s->kept_count = 0;
	std_header(o);
	rec_info_str(o, "exe", "/home/user/train/train");
	rec_info(o, "cmdline", cmdline, sizeof(cmdline) - 1);
	rec_info_str(o, "cwd", "/home/user/train");
	rec_hot1(o, LW_REC_THREAD, PID);
	rec_context(o, LW_API_CUDA_MALLOC_ASYNC, 0, 0);
	for (unsigned i = 0; i < 5; i++)
		rec_stack(o, i + 1, frames[i], 3);
	sim_alloc(s, 64 * MiB, 1); /* weights, kept to the end */
}

/* The noise of every step: temporaries of varying sizes, all freed. */
static void sim_temporaries(struct sim *s)
{
	uint64_t t[4];
	unsigned n = 2 + sim_random(s) % 3;

	for (unsigned i = 0; i < n; i++)
		t[i] = sim_alloc(s, (1 + sim_random(s) % 8) * MiB, 2);
	for (unsigned i = n; i-- > 0;)
		rec_free(s->o, t[i]);
}

static void sim_step_end(struct sim *s)
{
	rec_hot1(s->o, LW_REC_TIME, 1000000);
	rec_simple(s->o, LW_REC_STEP);
}

static void sim_finish(struct sim *s)
{
	rec_end(s->o, 0);
}

enum step_kind {
	LINEAR,
	TINY,
	SAWTOOTH_FLAT,
	SAWTOOTH_RISING,
	PLATEAU,
	WARMUP,
	LAZY_OPTIMIZER,
	GRAD_ACCUM,
	EVAL,
	CACHE_FILL,
};

static void step_loop(struct out *o, enum step_kind kind, unsigned steps)
{
	struct sim s;
	uint64_t grads = 0, jitter = 0;

	sim_start(&s, o);
	for (unsigned i = 0; i < steps; i++) {
		sim_temporaries(&s);
		switch (kind) {
		case LINEAR: /* a 1 MiB activation kept per step */
			sim_keep(&s, 1 * MiB, 3);
			break;
		case TINY:
			/* torchtitan's loss list: one 512-byte loss per step,
			 * under a prefetch buffer that comes and goes at the
			 * step end (1 MiB of noise in the run's bytes). */
			sim_keep(&s, 512, 3);
			if (jitter) {
				rec_free(o, jitter);
				jitter = 0;
			}
			if (sim_random(&s) % 2)
				jitter = sim_alloc(&s, 1 * MiB, 5);
			break;
		case SAWTOOTH_FLAT:
		case SAWTOOTH_RISING:
			/* Composer's metric copies: freed at a GC pass every
			 * 10 steps; a rising floor keeps one per pass. */
			sim_keep(&s, 256 * KiB, 3);
			if (i % 10 == 9)
				sim_release(&s, kind == SAWTOOTH_RISING
							? (i + 1) / 10 : 0);
			break;
		case PLATEAU: /* a cache that grows for 30 steps, then holds */
			if (i < 30)
				sim_keep(&s, 1 * MiB, 3);
			break;
		case WARMUP: /* optimizer state at step 1, and a real leak */
			if (i == 0) {
				sim_alloc(&s, 64 * MiB, 4);
				sim_alloc(&s, 64 * MiB, 4);
			}
			sim_keep(&s, 1 * MiB, 3);
			break;
		case LAZY_OPTIMIZER: /* Adam's two moments, made at step 1 */
			if (i == 0) {
				sim_alloc(&s, 64 * MiB, 4);
				sim_alloc(&s, 64 * MiB, 4);
			}
			break;
		case GRAD_ACCUM:
			/* Gradients made by the first micro-batch of four,
			 * freed after the optimizer step (set_to_none). */
			if (i % 4 == 0)
				grads = sim_alloc(&s, 64 * MiB, 3);
			if (i % 4 == 3) {
				rec_free(o, grads);
				grads = 0;
			}
			break;
		case EVAL:
			/* Evaluation every 20 steps: big buffers, freed. */
			if (i % 20 == 19) {
				uint64_t e[5];

				for (unsigned j = 0; j < 5; j++)
					e[j] = sim_alloc(&s, 32 * MiB, 3);
				for (unsigned j = 0; j < 5; j++)
					rec_free(o, e[j]);
			}
			break;
		case CACHE_FILL:
			/* A kernel cache: four 64 KiB entries per step for 15
			 * steps, then every entry is there. */
			if (i < 15)
				for (unsigned j = 0; j < 4; j++)
					sim_keep(&s, 64 * KiB, 3);
			break;
		}
		sim_step_end(&s);
	}
	sim_finish(&s);
}

void scenario_step_linear(struct out *o)
{
	step_loop(o, LINEAR, STEPS);
}

void scenario_step_tiny(struct out *o)
{
	step_loop(o, TINY, STEPS);
}

void scenario_step_sawtooth_flat(struct out *o)
{
	step_loop(o, SAWTOOTH_FLAT, STEPS);
}

void scenario_step_sawtooth_rising(struct out *o)
{
	step_loop(o, SAWTOOTH_RISING, STEPS);
}

void scenario_step_plateau(struct out *o)
{
	step_loop(o, PLATEAU, STEPS);
}

void scenario_step_warmup(struct out *o)
{
	step_loop(o, WARMUP, STEPS);
}

void scenario_step_lazy_optimizer(struct out *o)
{
	step_loop(o, LAZY_OPTIMIZER, STEPS);
}

void scenario_step_grad_accum(struct out *o)
{
	step_loop(o, GRAD_ACCUM, STEPS);
}

void scenario_step_eval(struct out *o)
{
	step_loop(o, EVAL, STEPS);
}

void scenario_step_cache_fill(struct out *o)
{
	step_loop(o, CACHE_FILL, STEPS);
}

/*
 * Growth at no single site: every step a new call stack keeps one 4 KiB
 * block (code made anew each step), 60 steps. No site grows; the run
 * does, to the end.
 */
void scenario_step_new_site(struct out *o)
{
	struct sim s;

	sim_start(&s, o);
	for (unsigned i = 0; i < 60; i++) {
		uint64_t frames[3] = { 0x402000 + 0x10 * i, 0x403000,
				       0x7f1234029d90 };

		rec_stack(o, 6 + i, frames, 3);
		sim_temporaries(&s);
		sim_keep(&s, 4 * KiB, 6 + i);
		sim_step_end(&s);
	}
	sim_finish(&s);
}

/*
 * Blocks made once, early: in the second of 60 steps, one 512-byte
 * block at each of two sites, kept. No growth.
 */
void scenario_step_one_time(struct out *o)
{
	struct sim s;

	sim_start(&s, o);
	for (unsigned i = 0; i < 60; i++) {
		sim_temporaries(&s);
		if (i == 1) {
			sim_keep(&s, 512, 3);
			sim_keep(&s, 512, 4);
		}
		sim_step_end(&s);
	}
	sim_finish(&s);
}

/* Too short to judge: a leak over 5 steps. */
void scenario_step_few(struct out *o)
{
	step_loop(o, LINEAR, 5);
}

/* Longer than the series keeps (8192 points): merged to a stride of 2+. */
void scenario_step_long(struct out *o)
{
	step_loop(o, TINY, 20000);
}

/*
 * Phases of steps, as a pytest session's tests are: in "test_a" (seen
 * once) 40 steps keep 4 KiB each; 160 steps of "test_b" keep nothing. Over
 * the run the kept memory is a plateau; within test_a it grows.
 * epochs: the same 40 steps of growth, in a phase "epoch" seen 5 times,
 * each releasing what it kept: a sawtooth, growing in no single epoch's
 * judgement since a repeated phase is not judged on its own.
 */
static void phase_loop(struct out *o, bool epochs)
{
	struct sim s;

	sim_start(&s, o);
	rec_string(o, 8, epochs ? "epoch" : "test_a");
	rec_string(o, 9, "test_b");
	for (unsigned i = 0; i < STEPS; i++) {
		if (i % 40 == 0 && (epochs || i == 0))
			rec_phase_begin(o, 8);
		if (i == 40 && !epochs)
			rec_phase_begin(o, 9);
		sim_temporaries(&s);
		if (epochs || i < 40)
			sim_keep(&s, 4 * KiB, 3);
		sim_step_end(&s);
		if (i % 40 == 39 && (epochs || i == 39)) {
			if (epochs)
				sim_release(&s, 0);
			rec_simple(o, LW_REC_PHASE_END);
		}
	}
	if (!epochs)
		rec_simple(o, LW_REC_PHASE_END);
	sim_finish(&s);
}

void scenario_step_phase_leak(struct out *o)
{
	phase_loop(o, false);
}

void scenario_step_phase_epochs(struct out *o)
{
	phase_loop(o, true);
}
