/* SPDX-License-Identifier: MIT */
/*
 * The exec family. An exec replaces the program without running its exit
 * handlers or destructors, so what the shim buffered since its last flush
 * would be lost with the old image: each entry point writes the buffer out
 * (lw_flush_before_exec(), which never blocks) and then calls the C
 * library's own with the caller's arguments. A failed exec returns what
 * the C library's returns, errno included, and tracing goes on.
 *
 * The trace of the image that exec replaced has no END record: the report
 * reads it to its last record and says it was cut short. posix_spawn() and
 * system() exec inside the C library, in a child: the parent goes on and
 * needs nothing.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "real.h"
#include "process.h"

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[],
			   int);

/*
 * The C library's functions, looked up when the shim is loaded: at exec
 * time a lookup would take the dynamic loader's lock, which a vfork()
 * child (sharing its parent's memory while the parent's other threads run)
 * or a signal handler must not wait for.
 */
enum { EXECVE, EXECV, EXECVP, EXECVPE, FEXECVE, EXECVEAT, N_REAL };

static const char *const real_names[N_REAL] = {
	"execve", "execv", "execvp", "execvpe", "fexecve", "execveat",
};
static void *reals[N_REAL];

__attribute__((constructor)) static void find_real_execs(void)
{
	for (int i = 0; i < N_REAL; i++)
		__atomic_store_n(&reals[i], lw_dlsym_real(RTLD_NEXT,
							  real_names[i]),
				 __ATOMIC_RELEASE);
}

/* The C library's function i; NULL if it has none. */
static void *real(int i)
{
	void *p = __atomic_load_n(&reals[i], __ATOMIC_ACQUIRE);

	if (!p) { /* called before the constructors ran */
		p = lw_dlsym_real(RTLD_NEXT, real_names[i]);
		__atomic_store_n(&reals[i], p, __ATOMIC_RELEASE);
	}
	return p;
}

/* Calls the C library's function i, of type T, with the arguments; where it
 * has no such function, fails as if its exec had. */
#define CALL_REAL(T, i, ...)                                             \
	do {                                                             \
		void *p_ = real(i);                                      \
		T fn_;                                                   \
		if (!p_)                                                 \
			return missing();                                \
		memcpy(&fn_, &p_, sizeof(fn_));                          \
		return fn_(__VA_ARGS__);                                 \
	} while (0)

/* What an entry point the C library lacks returns. */
static int missing(void)
{
	errno = ENOSYS;
	return -1;
}

LW_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	lw_flush_before_exec();
	CALL_REAL(execve_fn, EXECVE, path, argv, envp);
}

LW_EXPORT int execv(const char *path, char *const argv[])
{
	lw_flush_before_exec();
	CALL_REAL(execv_fn, EXECV, path, argv);
}

LW_EXPORT int execvp(const char *file, char *const argv[])
{
	lw_flush_before_exec();
	CALL_REAL(execv_fn, EXECVP, file, argv);
}

LW_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	lw_flush_before_exec();
	CALL_REAL(execve_fn, EXECVPE, file, argv, envp);
}

LW_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	lw_flush_before_exec();
	CALL_REAL(fexecve_fn, FEXECVE, fd, argv, envp);
}

LW_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
	     char *const envp[], int flags)
{
	lw_flush_before_exec();
	CALL_REAL(execveat_fn, EXECVEAT, dirfd, path, argv, envp, flags);
}

/*
 * The list forms: their arguments are gathered into an array on the stack,
 * as the C library's own do (exec may run in a signal handler, where
 * malloc may not), and passed to the array form.
 */
static size_t count_args(const char *arg0, va_list ap)
{
	size_t n = 0;
	va_list c;

	if (!arg0)
		return 0;
	va_copy(c, ap);
	for (n = 1; n < INT_MAX && va_arg(c, char *); n++)
		;
	va_end(c);
	return n;
}

/* argv gets n + 1 slots of the caller's stack, filled from arg0 and ap,
 * the list's terminating NULL read. */
#define GATHER(argv, arg0, ap)                                           \
	do {                                                             \
		size_t n_ = count_args(arg0, ap);                        \
		if (n_ >= INT_MAX) {                                     \
			errno = E2BIG;                                   \
			return -1;                                       \
		}                                                        \
		argv = alloca((n_ + 1) * sizeof(char *));                \
		argv[0] = (char *)(arg0);                                \
		for (size_t i_ = 1; i_ < n_; i_++)                       \
			argv[i_] = va_arg(ap, char *);                   \
		argv[n_] = NULL;                                         \
		if (n_)                                                  \
			(void)va_arg(ap, char *);                        \
	} while (0)

LW_EXPORT int execl(const char *path, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	GATHER(argv, arg, ap);
	va_end(ap);
	return execv(path, argv);
}

LW_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	GATHER(argv, arg, ap);
	va_end(ap);
	return execvp(file, argv);
}

LW_EXPORT int execle(const char *path, const char *arg, ...)
{
	char **argv, **envp;
	va_list ap;

	va_start(ap, arg);
	GATHER(argv, arg, ap);
	envp = va_arg(ap, char **);
	va_end(ap);
	return execve(path, argv, envp);
}
