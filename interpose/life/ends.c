/* SPDX-License-Identifier: MIT */
/*
 * How a program ends without its exit handlers, and what it sets a signal
 * to do: the C library's _exit(), _Exit(), sigaction() and signal(),
 * exported. The exits write out what the shim buffered (lw_flush_at_end(),
 * which never blocks for long) and call the C library's own with the
 * program's status; sigaction() and signal() keep the shim's flush on
 * signals that end the program out of the program's sight (signals.h).
 * quick_exit() needs no export: an at_quick_exit() handler registered as
 * the shim is loaded runs after every handler of the program's.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "export.h"
#include "real.h"
#include "process.h"
#include "signals.h"

typedef void (*exit_fn)(int);

/* The C library's _exit() and _Exit(), looked up when the shim is loaded:
 * an exit from a signal handler must not take the dynamic loader's lock. */
static void *real_exit, *real_exit_upper;

static void flush_at_quick_exit(void)
{
	lw_flush_at_end();
}

__attribute__((constructor)) static void find_real_ends(void)
{
	__atomic_store_n(&real_exit, lw_dlsym_real(RTLD_NEXT, "_exit"),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&real_exit_upper, lw_dlsym_real(RTLD_NEXT, "_Exit"),
			 __ATOMIC_RELEASE);
	lw_signals_resolve();
	/* Handlers run in the reverse order of their registration: this one,
	 * registered before the program's main(), after the program's. */
	at_quick_exit(flush_at_quick_exit);
}

__attribute__((noreturn)) static void end(void **slot, const char *name,
					  int status)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	exit_fn fn;

	lw_flush_at_end();
	if (!p) /* called before the constructors ran */
		p = lw_dlsym_real(RTLD_NEXT, name);
	if (p) {
		memcpy(&fn, &p, sizeof(fn));
		fn(status);
	}
	for (;;)
		syscall(SYS_exit_group, status);
}

LW_EXPORT void _exit(int status)
{
	end(&real_exit, "_exit", status);
}

LW_EXPORT void _Exit(int status)
{
	end(&real_exit_upper, "_Exit", status);
}

LW_EXPORT int sigaction(int sig, const struct sigaction *act,
			struct sigaction *old)
{
	return lw_signals_sigaction(sig, act, old);
}

LW_EXPORT void (*signal(int sig, void (*handler)(int)))(int)
{
	return lw_signals_signal(sig, handler);
}
