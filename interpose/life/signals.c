/* SPDX-License-Identifier: MIT */
#include "signals.h"

#include <errno.h>
#include <dlfcn.h>
#include <string.h>

#include "process.h"
#include "real.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*handler_fn)(int);
typedef handler_fn (*signal_fn)(int, handler_fn);

/*
 * The signals whose default action ends the process and that the shim
 * flushes on. Left out: SIGKILL and SIGSTOP (no handler can run), SIGTRAP
 * (debuggers), the real-time signals (libraries claim them by looking for
 * the default action), and those whose default is to stop or be ignored.
 */
static const int ending_signals[] = {
	SIGHUP,  SIGINT,  SIGQUIT, SIGILL,  SIGABRT,   SIGBUS,
	SIGFPE,  SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE,   SIGALRM,
	SIGTERM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGSYS,
};

/* Set by lw_signals_start(): the signals the shim keeps its handler on. */
static sigset_t covered;
static int started;

/* The C library's sigaction() and signal(), as object pointers. */
static void *real_sigaction_ptr, *real_signal_ptr;

static void *next_symbol(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!p) {
		p = lw_dlsym_real(RTLD_NEXT, name);
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

void lw_signals_resolve(void)
{
	next_symbol(&real_sigaction_ptr, "sigaction");
	next_symbol(&real_signal_ptr, "signal");
}

int lw_real_sigaction(int sig, const struct sigaction *act,
		      struct sigaction *old)
{
	void *p = next_symbol(&real_sigaction_ptr, "sigaction");
	sigaction_fn fn;

	if (!p) {
		errno = ENOSYS;
		return -1;
	}
	memcpy(&fn, &p, sizeof(fn));
	return fn(sig, act, old);
}

static handler_fn real_signal(int sig, handler_fn handler)
{
	void *p = next_symbol(&real_signal_ptr, "signal");
	signal_fn fn;

	if (!p) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	memcpy(&fn, &p, sizeof(fn));
	return fn(sig, handler);
}

/*
 * Writes out what was recorded, then lets the signal do what its default
 * action does: the default is put back and the signal raised again. It is
 * blocked while this handler runs, so it is delivered as the handler
 * returns (a fault would also recur then). Async-signal-safe: the flush
 * never waits on a lock this thread may hold (see lw_flush_at_end()).
 */
static void flush_then_default(int sig)
{
	int saved_errno = errno;
	struct sigaction dfl;

	lw_flush_at_end();
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	lw_real_sigaction(sig, &dfl, NULL);
	raise(sig);
	errno = saved_errno;
}

static void flush_action(struct sigaction *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_handler = flush_then_default;
	sigemptyset(&sa->sa_mask);
	/* A stack overflow's SIGSEGV needs the alternate stack, if any. */
	sa->sa_flags = SA_ONSTACK;
}

static int is_default(const struct sigaction *sa)
{
	return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_DFL;
}

static int is_ours(const struct sigaction *sa)
{
	return !(sa->sa_flags & SA_SIGINFO) &&
	       sa->sa_handler == flush_then_default;
}

/* What the program would read for a signal left at its default. */
static void as_default(struct sigaction *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_handler = SIG_DFL;
	sigemptyset(&sa->sa_mask);
}

static int covers(int sig)
{
	return __atomic_load_n(&started, __ATOMIC_ACQUIRE) && sig > 0 &&
	       sig < NSIG && sigismember(&covered, sig) == 1;
}

void lw_signals_start(int take_usr2)
{
	struct sigaction sa, old;

	sigemptyset(&covered);
	flush_action(&sa);
	for (size_t i = 0;
	     i < sizeof(ending_signals) / sizeof(ending_signals[0]); i++) {
		int sig = ending_signals[i];

		if (sig == SIGUSR2 && take_usr2)
			continue;
		sigaddset(&covered, sig);
		/* Look first: a disposition of the program's is not replaced,
		 * and where another thread set one between the look and the
		 * swap, it is put back at once. */
		if (lw_real_sigaction(sig, NULL, &old) < 0 || !is_default(&old))
			continue;
		if (lw_real_sigaction(sig, &sa, &old) == 0 && !is_default(&old))
			lw_real_sigaction(sig, &old, NULL);
	}
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
}

int lw_signals_sigaction(int sig, const struct sigaction *act,
			 struct sigaction *old)
{
	struct sigaction mine;
	int rc;

	if (act && is_default(act) && covers(sig)) {
		flush_action(&mine);
		act = &mine;
	}
	rc = lw_real_sigaction(sig, act, old);
	if (rc == 0 && old && is_ours(old))
		as_default(old);
	return rc;
}

handler_fn lw_signals_signal(int sig, handler_fn handler)
{
	handler_fn previous;

	if (handler == SIG_DFL && covers(sig)) {
		struct sigaction mine, old;

		flush_action(&mine);
		if (lw_real_sigaction(sig, &mine, &old) < 0)
			return SIG_ERR;
		return is_ours(&old) ? SIG_DFL : old.sa_handler;
	}
	previous = real_signal(sig, handler);
	return previous == flush_then_default ? SIG_DFL : previous;
}
