/* SPDX-License-Identifier: MIT */
/*
 * forker: the parent allocates two buffers (frees one), forks; the child
 * allocates three buffers of 777 bytes, keeps them and exits with exit(0)
 * so that destructors run; the parent waits, allocates one more buffer of
 * 555 bytes, keeps it and exits. Prints "parent <pid>" and "child <pid>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog-common.h"

void *parent_before_fork(void);
void child_allocations(void);
void *parent_after_fork(void);

/* Returns the kept buffer. */
void *parent_before_fork(void)
{
	void *freed, *kept;

	CHECK_CUDA(cudaMalloc(&freed, 1111));
	CHECK_CUDA(cudaMalloc(&kept, 2222));
	CHECK_CUDA(cudaFree(freed));
	return kept;
}

void child_allocations(void)
{
	void *buffer;
	int i;

	for (i = 0; i < 3; i++)
		CHECK_CUDA(cudaMalloc(&buffer, 777));
}

void *parent_after_fork(void)
{
	void *buffer;

	CHECK_CUDA(cudaMalloc(&buffer, 555));
	return buffer;
}

int main(void)
{
	int status;
	pid_t pid;

	parent_before_fork();
	printf("parent %ld\n", (long)getpid());
	/* Or the child would print the parent's buffered line again. */
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("forker: fork");
		return 1;
	}
	if (pid == 0) {
		printf("child %ld\n", (long)getpid());
		child_allocations();
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid) {
		perror("forker: waitpid");
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "forker: the child failed (status %#x)\n", status);
		return 1;
	}
	parent_after_fork();
	return 0;
}
