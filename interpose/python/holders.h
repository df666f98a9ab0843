/* SPDX-License-Identifier: MIT */
/*
 * Who holds it: the live Python objects, and the reference paths to them,
 * that keep alive the device memory which outlived the step that made it.
 * Searched in the program's interpreter at the report point (the atexit
 * callback of pyhooks.c), on SIGUSR2, on leakwatch_snapshot(), and during
 * the run for the stacks that grow (kept.h); each holder found is a HOLDER
 * record.
 */
#ifndef LW_HOLDERS_H
#define LW_HOLDERS_H

/* LEAKWATCH_HOLDERS and LEAKWATCH_HOLDERS_BUDGET (seconds). */
void lw_holders_configure(int enabled, double budget_seconds);

/* Runs the search now. The caller holds the GIL of a running CPython;
 * anywhere else it does nothing. */
void lw_holders_search(void);

/* Queues a search for the interpreter's main thread (Py_AddPendingCall);
 * any thread may call it, under the tracker's lock too. */
void lw_holders_schedule(void);

/* Queues a search for the memory of the stacks a search is asked for
 * (kept.h): at most a share of the run's time (see holders.c). Any thread,
 * under the tracker's lock too. */
void lw_holders_schedule_in_run(void);

/* The searches during the run so far, and the time they took. */
void lw_holders_in_run_stats(unsigned *searches, double *seconds);

#endif
