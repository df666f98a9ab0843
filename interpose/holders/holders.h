/* SPDX-License-Identifier: MIT */
/*
 * Who holds it: the live Python objects, and the reference paths to them,
 * that keep alive the device memory which outlived the step that made it.
 * Read from the program's interpreter, running nothing in it, at the
 * report point (the atexit callback of pyhooks.c), on SIGUSR2, on
 * leakwatch_snapshot(), and during the run for the stacks that grow
 * (kept.h); each holder found is a HOLDER record.
 */
#ifndef LW_HOLDERS_H
#define LW_HOLDERS_H

/* LEAKWATCH_HOLDERS and LEAKWATCH_HOLDERS_BUDGET (seconds); subscribes to
 * the recorder's events (events.h) that ask for a search or let it run. */
void lw_holders_configure(int enabled, double budget_seconds);

/* Runs the search now. The caller holds the GIL of a running CPython;
 * anywhere else it does nothing. */
void lw_holders_search(void);

/* Asks for a search, run by the next thread that holds the GIL when it
 * passes through the shim (lw_events_poll()), or by the main thread's next
 * pending call; any thread may ask, under the tracker's lock too. */
void lw_holders_schedule(void);

/* The same for the memory of the stacks a search is asked for (kept.h):
 * at most a share of the run's time (see holders.c). */
void lw_holders_schedule_in_run(void);

/* Runs the searches asked for if this thread holds the GIL. */
void lw_holders_run_asked(void);

#endif
