/* SPDX-License-Identifier: MIT */
/*
 * hazards MODE [ARGS]: what a program may do to the shim under it. Each mode
 * allocates buffers of sizes the integration test knows, so that each trace
 * can be told apart and checked exactly.
 *
 *   exec N          keeps a buffer of 1000 + N bytes, marks a step, and
 *                   while N > 0 exec()s itself with N - 1 (same pid).
 *   exec-now FN     keeps 1500 bytes, then at once (no step, no flush of
 *                   its own) execs itself as "child" through FN: execl,
 *                   execlp, execle, execv, execvp, execvpe, execve,
 *                   fexecve or execveat.
 *   exec-fail       keeps 1600 bytes, execs a path that does not exist,
 *                   prints what the exec returned and its errno, keeps
 *                   1601 bytes.
 *   vfork, spawn    keeps 2000 bytes; runs "child" through vfork()+exec or
 *                   posix_spawn(); keeps 2001 bytes after it exits.
 *   child           keeps 3000 bytes.
 *   daemon PIDFILE  keeps 2000 bytes; a double-forked, setsid() grandchild
 *                   with its output on /dev/null and its working directory
 *                   at / writes its pid to PIDFILE and keeps 4000 bytes;
 *                   the parent keeps 2001 bytes after the middle child left.
 *   daemon PIDFILE GOFILE
 *                   the same, but the grandchild allocates only once GOFILE
 *                   exists (after the parent, and `leakwatch run`, ended),
 *                   and writes PIDFILE after that.
 *   segv, abort     keeps 3 buffers of 5000 bytes, then crashes.
 *   own-handler     installs a SIGSEGV handler that exits 3, keeps 5000
 *                   bytes, then faults.
 *   signals N       N alloc/free pairs while a timer interrupts them every
 *                   50 us and a second thread churns; then 10 times, a
 *                   SIGUSR1 handler keeps a 6000-byte buffer.
 *   atexit          an atexit handler keeps 7000 bytes and frees the 8000
 *                   bytes main kept, while a thread still allocates and
 *                   frees as the process exits.
 *   double-free     prints the result of every call of a double free, a
 *                   free of an address never allocated, and an address
 *                   freed and allocated again.
 */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "leakwatch.h"
#include "prog-common.h"

extern char **environ;

void keep(size_t bytes);
void exec_chain(const char *self, unsigned long n);
void exec_now(const char *self, const char *how);
void exec_fail(void);
void run_child(const char *self, int use_spawn);
void daemonize(const char *pidfile, const char *gofile);
void crash(int how);
void signal_storm(unsigned long n);
void exit_while_allocating(void);
void double_free(void);

void keep(size_t bytes)
{
	void *p;

	CHECK_CUDA(cudaMalloc(&p, bytes));
}

void exec_chain(const char *self, unsigned long n)
{
	char arg[32];

	keep(1000 + n);
	leakwatch_mark_step();
	printf("pid %ld\n", (long)getpid());
	fflush(stdout);
	if (n == 0)
		return;
	snprintf(arg, sizeof(arg), "%lu", n - 1);
	execl(self, self, "exec", arg, (char *)NULL);
	perror("hazards: execl");
	exit(1);
}

void exec_now(const char *self, const char *how)
{
	char *argv[] = { (char *)self, (char *)"child", NULL };

	keep(1500);
	if (strcmp(how, "execl") == 0)
		execl(self, self, "child", (char *)NULL);
	else if (strcmp(how, "execlp") == 0)
		execlp(self, self, "child", (char *)NULL);
	else if (strcmp(how, "execle") == 0)
		execle(self, self, "child", (char *)NULL, environ);
	else if (strcmp(how, "execv") == 0)
		execv(self, argv);
	else if (strcmp(how, "execvp") == 0)
		execvp(self, argv);
	else if (strcmp(how, "execvpe") == 0)
		execvpe(self, argv, environ);
	else if (strcmp(how, "execve") == 0)
		execve(self, argv, environ);
	else if (strcmp(how, "fexecve") == 0 || strcmp(how, "execveat") == 0) {
		int fd = open(self, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			perror("hazards: open");
			exit(1);
		}
		if (how[1] == 'e')
			fexecve(fd, argv, environ);
		else
			execveat(fd, "", argv, environ, AT_EMPTY_PATH);
	} else {
		fprintf(stderr, "hazards: unknown exec '%s'\n", how);
		exit(2);
	}
	perror("hazards: exec");
	exit(1);
}

void exec_fail(void)
{
	char *argv[] = { (char *)"/nonexistent/leakwatch-test", NULL };
	int rc;

	keep(1600);
	errno = 0;
	rc = execv(argv[0], argv);
	printf("exec-fail %d %s\n", rc, errno == ENOENT ? "ENOENT" : strerror(errno));
	keep(1601);
}

static void wait_for(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "hazards: child %ld failed\n", (long)pid);
		exit(1);
	}
}

void run_child(const char *self, int use_spawn)
{
	char *argv[] = { (char *)self, (char *)"child", NULL };
	pid_t pid;

	keep(2000);
	if (use_spawn) {
		int err = posix_spawn(&pid, self, NULL, NULL, argv, environ);
		if (err) {
			fprintf(stderr, "hazards: posix_spawn: %s\n", strerror(err));
			exit(1);
		}
	} else {
		pid = vfork();
		if (pid == 0) {
			execv(self, argv);
			_exit(127);
		}
		if (pid < 0) {
			perror("hazards: vfork");
			exit(1);
		}
	}
	wait_for(pid);
	keep(2001);
}

void daemonize(const char *pidfile, const char *gofile)
{
	pid_t pid;

	keep(2000);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("hazards: fork");
		exit(1);
	}
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0); /* the middle child leaves at once */
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
		if (chdir("/") < 0)
			_exit(1);
		umask(0);
		/* At most a minute: never a process left behind for good. */
		for (int i = 0; gofile && access(gofile, F_OK) != 0; i++) {
			if (i == 6000)
				_exit(1);
			usleep(10000);
		}
		if (gofile)
			keep(4000);
		FILE *f = fopen(pidfile, "w");
		if (!f)
			_exit(1);
		fprintf(f, "%ld\n", (long)getpid());
		fclose(f);
		if (!gofile)
			keep(4000);
		exit(0);
	}
	wait_for(pid);
	keep(2001);
}

static void own_segv_handler(int sig)
{
	(void)sig;
	static const char msg[] = "own handler\n";
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(4);
	_exit(3);
}

void crash(int how)
{
	if (how == 2) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = own_segv_handler;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGSEGV, &sa, NULL);
		keep(5000);
	} else {
		for (int i = 0; i < 3; i++)
			keep(5000);
	}
	if (how == 1)
		abort();
	*(volatile int *)(uintptr_t)16 = 1;
}

static volatile sig_atomic_t alarms, stop_churn;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

void signal_kept(void);

/* Called from the SIGUSR1 handler. */
void signal_kept(void)
{
	keep(6000);
}

static void on_usr1(int sig)
{
	(void)sig;
	signal_kept();
}

static void *churn(void *arg)
{
	void *p;

	(void)arg;
	while (!stop_churn) {
		CHECK_CUDA(cudaMalloc(&p, 64));
		CHECK_CUDA(cudaFree(p));
	}
	return NULL;
}

void signal_storm(unsigned long n)
{
	struct sigaction sa;
	struct itimerval timer = { { 0, 50 }, { 0, 50 } };
	pthread_t thread;
	void *p;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_alarm; /* no SA_RESTART: system calls see EINTR */
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	if (pthread_create(&thread, NULL, churn, NULL) != 0)
		exit(1);
	setitimer(ITIMER_REAL, &timer, NULL);
	for (unsigned long i = 0; i < n; i++) {
		CHECK_CUDA(cudaMalloc(&p, 1 + i % 4096));
		CHECK_CUDA(cudaFree(p));
	}
	for (int i = 0; i < 10; i++)
		raise(SIGUSR1);
	memset(&timer, 0, sizeof(timer));
	setitimer(ITIMER_REAL, &timer, NULL);
	stop_churn = 1;
	pthread_join(thread, NULL);
	printf("alarms %d\n", alarms > 0);
}

static void *main_buffer;

static void at_exit_handler(void)
{
	keep(7000);
	CHECK_CUDA(cudaFree(main_buffer));
}

/* Results unchecked: the runtime may be shutting down under it. */
static void *churn_until_killed(void *arg)
{
	void *p;

	(void)arg;
	for (;;) {
		if (cudaMalloc(&p, 64) == cudaSuccess)
			cudaFree(p);
	}
	return NULL;
}

void exit_while_allocating(void)
{
	pthread_t thread;

	CHECK_CUDA(cudaMalloc(&main_buffer, 8000));
	atexit(at_exit_handler);
	if (pthread_create(&thread, NULL, churn_until_killed, NULL) != 0)
		exit(1);
	usleep(20000);
	/* main returns with the thread still allocating: exit() runs the
	 * handler, then the destructors close the trace under it. */
}

void double_free(void)
{
	void *p, *q;

	CHECK_CUDA(cudaMalloc(&p, 100));
	printf("free %d\n", (int)cudaFree(p));
	printf("double free %d\n", (int)cudaFree(p));
	printf("unknown free %d\n", (int)cudaFree((void *)(uintptr_t)0x1234));
	printf("free host of device %d\n", (int)cudaFreeHost(p));
	CHECK_CUDA(cudaMalloc(&q, 300));
	CHECK_CUDA(cudaFree(q));
	CHECK_CUDA(cudaMalloc(&p, 300));
	printf("reused %d\n", p == q);
	printf("free again %d\n", (int)cudaFree(q));
	printf("free once more %d\n", (int)cudaFree(p));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "exec") == 0)
		exec_chain(argv[0], prog_arg(argc, argv, 2, 0));
	else if (strcmp(mode, "exec-now") == 0 && argc > 2)
		exec_now(argv[0], argv[2]);
	else if (strcmp(mode, "exec-fail") == 0)
		exec_fail();
	else if (strcmp(mode, "vfork") == 0)
		run_child(argv[0], 0);
	else if (strcmp(mode, "spawn") == 0)
		run_child(argv[0], 1);
	else if (strcmp(mode, "child") == 0)
		keep(3000);
	else if (strcmp(mode, "daemon") == 0 && argc > 2)
		daemonize(argv[2], argc > 3 ? argv[3] : NULL);
	else if (strcmp(mode, "segv") == 0)
		crash(0);
	else if (strcmp(mode, "abort") == 0)
		crash(1);
	else if (strcmp(mode, "own-handler") == 0)
		crash(2);
	else if (strcmp(mode, "signals") == 0)
		signal_storm(prog_arg(argc, argv, 2, 100000));
	else if (strcmp(mode, "atexit") == 0)
		exit_while_allocating();
	else if (strcmp(mode, "double-free") == 0)
		double_free();
	else {
		fprintf(stderr, "hazards: unknown mode '%s'\n", mode);
		return 2;
	}
	return 0;
}
