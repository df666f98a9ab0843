/* SPDX-License-Identifier: MIT */
/*
 * The process's state as every room sees it (state.c): whether the shim
 * records, and whether this thread is inside it. The start itself is the
 * top's (life/process.c), which names it with LW_START; lw_init() runs it
 * once, from whichever room comes first.
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

/* Starts the shim once (the start LW_START names); the state says how it
 * went. */
void lw_init(void);

/*
 * Names the start lw_init() runs. A pointer in a section of its own that
 * state.c finds through the linker's __start_ symbol: it is there once the
 * library is relocated, before any constructor, so that a hook run by
 * another library's constructor (loaded before this one's run) starts the
 * shim too, while base/ names nothing of the room above it.
 */
typedef void lw_start_fn(void);
#define LW_START(fn)							\
	static lw_start_fn *const lw_start_entry_			\
		__attribute__((used, section("lw_start"))) = (fn)

#endif
