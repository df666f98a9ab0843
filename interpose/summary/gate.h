/* SPDX-License-Identifier: MIT */
/*
 * The bare-mode growth gate (LEAKWATCH_MAX_GROWTH): the exit status says
 * when device memory grew faster per step than allowed.
 */
#ifndef LW_GATE_H
#define LW_GATE_H

#include <stdint.h>

/* A trace was opened at path (the gate names it in its verdict). */
void lw_gate_trace_opened(const char *path);
/* The trace at path could not be written: nothing can be judged. */
void lw_gate_trace_failed(const char *path);
/* A step ended with this much device memory (device + managed) live. */
void lw_gate_step(uint64_t device_bytes);
/* In a forked child: the parent's steps are not the child's. */
void lw_gate_reset(void);

#endif
