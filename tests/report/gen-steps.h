/* SPDX-License-Identifier: MIT */
/* Step scenarios of gen-trace: training loops for the growth verdicts. */
#ifndef LW_GEN_STEPS_H
#define LW_GEN_STEPS_H

#include "trace-builder.h"

void scenario_step_linear(struct out *o);
void scenario_step_tiny(struct out *o);
void scenario_step_sawtooth_flat(struct out *o);
void scenario_step_sawtooth_rising(struct out *o);
void scenario_step_plateau(struct out *o);
void scenario_step_warmup(struct out *o);
void scenario_step_lazy_optimizer(struct out *o);
void scenario_step_grad_accum(struct out *o);
void scenario_step_eval(struct out *o);
void scenario_step_cache_fill(struct out *o);
void scenario_step_few(struct out *o);
void scenario_step_new_site(struct out *o);
void scenario_step_one_time(struct out *o);
void scenario_step_long(struct out *o);
void scenario_step_phase_leak(struct out *o);
void scenario_step_phase_epochs(struct out *o);

#endif
