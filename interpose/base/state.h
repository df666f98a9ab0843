/* SPDX-License-Identifier: MIT */
/*
 * The process's state as every room sees it (state.c): whether the shim
 * records, and whether this thread is inside it. The start itself is the
 * top's (life/process.c), which hands it to lw_set_start() as the library
 * is loaded; lw_init() runs it once, from whichever room comes first.
 */
#ifndef LW_STATE_H
#define LW_STATE_H

enum lw_state {
	LW_STATE_UNINIT = 0,
	LW_STATE_ACTIVE,
	LW_STATE_OFF,    /* disabled, secure execution, or a fatal failure */
	LW_STATE_CLOSED, /* the trace was closed at exit */
};

extern __thread int lw_in_hook __attribute__((tls_model("initial-exec")));
extern int lw_state;

/* Starts the shim once (the start given to lw_set_start()); the state
 * says how it went. */
void lw_init(void);

/* What lw_init() runs: set once, from a constructor, before any hook. */
void lw_set_start(void (*start)(void));

#endif
