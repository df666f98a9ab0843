/* SPDX-License-Identifier: MIT */
/*
 * The live view of a long job: one line on stderr every N steps
 * (LEAKWATCH_LIVE_EVERY), and on SIGUSR2 (LEAKWATCH_SIGNAL, on by default
 * only with LEAKWATCH_LIVE_EVERY: otherwise the signal keeps its default
 * action, which ends the program) a flush of the trace and the same line at
 * the next event, so that `leakwatch report` can be run on the trace of a
 * job that is still running.
 */
#ifndef LW_LIVE_VIEW_H
#define LW_LIVE_VIEW_H

/*
 * every: 0 for no periodic line; use_signal: install the handler. Subscribes
 * to the recorder's events (events.h): the trace opened (the SIGUSR2
 * handler is installed then, only if the signal's disposition is still the
 * default one: a program that handles SIGUSR2 itself keeps it), each
 * step's end (the line every N steps, with PyTorch's pool as it stands),
 * the line asked for now (by the signal, lead "SIGUSR2: ", or by
 * leakwatch.snapshot(), "snapshot: ", after the trace was flushed: memory
 * live now, and its growth judged on step ends, as the periodic line's),
 * and a forked child (steps count from 0 again).
 */
void lw_live_view_configure(unsigned every, int use_signal);

#endif
