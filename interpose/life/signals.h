/* SPDX-License-Identifier: MIT */
/*
 * Signals that end the program. A signal whose default action terminates
 * the process (SIGTERM, SIGINT, SIGHUP, a crash, ...) would lose what the
 * shim buffered since its last flush. On each such signal that the program
 * leaves at its default action, the shim installs a handler that writes the
 * buffer out (lw_flush_at_end()), puts the default action back and raises
 * the signal again, so that the process ends as it would have: killed by
 * the same signal, with a core dump where the default makes one.
 *
 * The program must see no difference. The exported sigaction() and
 * signal() (ends.c) report the shim's handler as SIG_DFL, and a program
 * that asks for SIG_DFL on such a signal gets the shim's handler in its
 * place (so faulthandler's "restore the previous handler and raise again"
 * still flushes). Any other handler the program installs, before or after,
 * is the program's, untouched: it wins.
 */
#ifndef LW_SIGNALS_H
#define LW_SIGNALS_H

#include <signal.h>

/*
 * Installs the handler on each signal of the list still at its default
 * action; from then on, sigaction() and signal() hide and keep it. SIGUSR2
 * is left out with take_usr2 (the live view takes it, live-view.h). Called
 * once, by the lazy start.
 */
void lw_signals_start(int take_usr2);

/* The work of the exported sigaction() and signal() (see above). */
int lw_signals_sigaction(int sig, const struct sigaction *act,
			 struct sigaction *old);
void (*lw_signals_signal(int sig, void (*handler)(int)))(int);

/* The C library's sigaction(), past the shim's own. */
int lw_real_sigaction(int sig, const struct sigaction *act,
		      struct sigaction *old);

/* Looks up the C library's functions, from a constructor: later, a lookup
 * could come from a signal handler, where it is not safe. */
void lw_signals_resolve(void);

#endif
