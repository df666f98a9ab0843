/* SPDX-License-Identifier: MIT */
/*
 * intrusions MODE [ARGS]: what a program may do that reaches the shim's own
 * descriptor, signals and ways to end. Each mode first makes 210 events,
 * 100 cudaMalloc+cudaFree pairs and 10 kept buffers of 1000 bytes
 * (events()), with no step or flush of its own, so that a trace that lost
 * its buffer shows it.
 *
 *   closefds FILE    closes every descriptor above 2, opens FILE eight
 *                    times (so that one of them takes the number the trace
 *                    had), writes "program\n" to it, makes 210 more events
 *                    and marks a step (the shim writes its buffer out),
 *                    writes "program\n" again.
 *   dup2 FILE        opens FILE, dup2()s it over the descriptor of the
 *                    trace (found in /proc/self/fd) and writes "program\n"
 *                    through that number; then as closefds.
 *   unlink FILE      removes the trace file, then as closefds.
 *   signal SIG       raises signal number SIG, which the program leaves at
 *                    its default action.
 *   own-later SIG    installs a handler of its own for SIG after the shim
 *                    started (it prints "handled SIG"), raises SIG, exits 0.
 *   default-again SIG  installs a handler for SIG, puts back SIG_DFL with
 *                    signal(), raises SIG.
 *   query            prints whether SIGTERM, SIGINT and SIGSEGV read as
 *                    SIG_DFL ("default 1 1 1").
 *   _exit, _Exit, quick_exit N  ends through that function with status N.
 *   kill-busy SIG    two threads allocate and free without pause; the main
 *                    thread sends SIG to one of them.
 *   dlopen LIB       loads LIB (a copy of libtestext.so) and keeps 4096
 *                    bytes through its testext_alloc().
 *   args ...         only the events; the arguments are for the command
 *                    line.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "leakwatch.h"
#include "prog-common.h"

void keep(size_t bytes);
void events(void);

void keep(size_t bytes)
{
	void *p;

	CHECK_CUDA(cudaMalloc(&p, bytes));
}

void events(void)
{
	void *p;

	for (int i = 0; i < 100; i++) {
		CHECK_CUDA(cudaMalloc(&p, 64 + (size_t)i));
		CHECK_CUDA(cudaFree(p));
	}
	for (int i = 0; i < 10; i++)
		keep(1000);
}

static void say(int fd, const char *text)
{
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		perror("intrusions: write");
		exit(1);
	}
}

/* The descriptor whose link names a file ending in ".trace", or -1. */
static int trace_descriptor(void)
{
	char link[PATH_MAX], target[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int found = -1;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > 6 && memcmp(target + n - 6, ".trace", 6) == 0)
			found = atoi(e->d_name);
	}
	closedir(d);
	return found;
}

static void take_descriptors(const char *mode, const char *file)
{
	int fd;

	events();
	if (strcmp(mode, "dup2") == 0) {
		int trace = trace_descriptor();
		if (trace < 0) {
			fprintf(stderr, "intrusions: no trace descriptor\n");
			exit(1);
		}
		fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		if (fd < 0 || dup2(fd, trace) != trace) {
			perror("intrusions: dup2");
			exit(1);
		}
		close(fd);
		say(trace, "program\n");
		printf("took %d\n", trace);
		fflush(stdout);
		fd = trace;
	} else {
		if (strcmp(mode, "unlink") == 0) {
			int trace = trace_descriptor();
			char link[64], target[PATH_MAX];
			snprintf(link, sizeof(link), "/proc/self/fd/%d", trace);
			ssize_t n = readlink(link, target, sizeof(target) - 1);
			if (trace < 0 || n < 0) {
				fprintf(stderr, "intrusions: no trace descriptor\n");
				exit(1);
			}
			target[n] = '\0';
			unlink(target);
		}
		for (int i = 3; i < 4096; i++)
			close(i);
		fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		for (int i = 1; fd >= 0 && i < 8; i++)
			if (open(file, O_WRONLY | O_APPEND) < 0)
				fd = -1;
		if (fd < 0) {
			perror("intrusions: open");
			exit(1);
		}
		say(fd, "program\n");
	}
	events();
	leakwatch_mark_step();
	say(fd, "program\n");
	close(fd);
}

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	handled = sig;
}

static void own_later(int sig)
{
	struct sigaction sa;

	events();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	raise(sig);
	printf("handled %d\n", (int)handled);
}

static void default_again(int sig)
{
	events();
	signal(sig, on_signal);
	signal(sig, SIG_DFL);
	keep(2000);
	raise(sig);
}

static int reads_as_default(int sig)
{
	struct sigaction old;

	return sigaction(sig, NULL, &old) == 0 &&
	       !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
}

static void *churn(void *arg)
{
	void *p;

	(void)arg;
	for (;;) {
		if (cudaMalloc(&p, 64) == cudaSuccess)
			cudaFree(p);
	}
	return NULL;
}

static void kill_busy(int sig)
{
	pthread_t threads[2];
	struct timespec pause = { 0, 2000000 };

	events();
	for (int i = 0; i < 2; i++)
		if (pthread_create(&threads[i], NULL, churn, NULL) != 0)
			exit(1);
	nanosleep(&pause, NULL);
	pthread_kill(threads[1], sig);
	for (;;) /* until the signal ends the process */
		nanosleep(&pause, NULL);
}

static void through_library(const char *path)
{
	void *handle = dlopen(path, RTLD_NOW);
	int (*alloc)(size_t, void **);
	void *p;

	if (!handle) {
		fprintf(stderr, "intrusions: %s\n", dlerror());
		exit(1);
	}
	*(void **)&alloc = dlsym(handle, "testext_alloc");
	if (!alloc || alloc(4096, &p) != 0) {
		fprintf(stderr, "intrusions: testext_alloc failed\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int n = strcmp(mode, "signal") == 0 || strcmp(mode, "own-later") == 0 ||
			strcmp(mode, "default-again") == 0 ||
			strcmp(mode, "kill-busy") == 0 || mode[0] == '_' ||
			strcmp(mode, "quick_exit") == 0 ?
		(int)prog_arg(argc, argv, 2, 0) : 0;

	if ((strcmp(mode, "closefds") == 0 || strcmp(mode, "dup2") == 0 ||
	     strcmp(mode, "unlink") == 0) && argc > 2) {
		take_descriptors(mode, argv[2]);
	} else if (strcmp(mode, "signal") == 0) {
		events();
		raise(n);
	} else if (strcmp(mode, "own-later") == 0) {
		own_later(n);
	} else if (strcmp(mode, "default-again") == 0) {
		default_again(n);
	} else if (strcmp(mode, "query") == 0) {
		events();
		printf("default %d %d %d\n", reads_as_default(SIGTERM),
		       reads_as_default(SIGINT), reads_as_default(SIGSEGV));
	} else if (strcmp(mode, "_exit") == 0) {
		events();
		_exit(n);
	} else if (strcmp(mode, "_Exit") == 0) {
		events();
		_Exit(n);
	} else if (strcmp(mode, "quick_exit") == 0) {
		events();
		quick_exit(n);
	} else if (strcmp(mode, "kill-busy") == 0) {
		kill_busy(n);
	} else if (strcmp(mode, "dlopen") == 0 && argc > 2) {
		through_library(argv[2]);
	} else if (strcmp(mode, "args") == 0) {
		events();
	} else {
		fprintf(stderr, "intrusions: unknown mode '%s'\n", mode);
		return 2;
	}
	return 0;
}
