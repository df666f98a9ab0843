/* SPDX-License-Identifier: MIT */
/*
 * The bare-mode growth gate (LEAKWATCH_MAX_GROWTH): the exit status says
 * when device memory grew faster per step than allowed.
 */
#ifndef LW_GATE_H
#define LW_GATE_H

#include <stdint.h>

/*
 * Subscribes to the recorder's events (events.h): the trace opened at a
 * path (named in the verdict) or could not be written (nothing can be
 * judged), each step's end with its device memory (device + managed)
 * live, and a forked child, whose steps are not its parent's.
 */
void lw_gate_start(void);

#endif
