/* SPDX-License-Identifier: MIT */
/*
 * The process's life as the shim sees it (process.c): what the entry
 * points that end or replace the program (exec.c, ends.c) and the handlers
 * of fatal signals (signals.c) call, instead of reaching into the tracker.
 */
#ifndef LW_PROCESS_H
#define LW_PROCESS_H

/*
 * Writes out what the trace buffer holds, before an exec replaces the
 * program without running its exit handlers (exec.c). Never blocks and
 * keeps errno: inside a hook of this thread (an exec from a signal
 * handler), or while another thread holds the tracker's lock, the buffer
 * stays; in a vfork() child, which shares its parent's memory and runs no
 * fork handlers, nothing is touched.
 */
void lw_flush_before_exec(void);

/*
 * Writes out what the trace buffer holds as the process ends without its
 * exit handlers: the default action of a signal (signals.h), _exit(),
 * _Exit(), quick_exit(). Async-signal-safe, keeps errno. Never blocks for
 * long: it waits at most 200 ms for another thread to release the
 * tracker's lock, and 10 ms where this thread, inside a hook, may hold it
 * itself (then the buffer stays, lost with the process); in a vfork()
 * child nothing is touched. The trace has no END record (the report says
 * it was cut short).
 */
void lw_flush_at_end(void);

#endif
