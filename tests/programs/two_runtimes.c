/* SPDX-License-Identifier: MIT */
/*
 * two_runtimes: loads libtwort12.so and libtwort13.so, each linked against a
 * different CUDA runtime, RTLD_LOCAL (as Python loads extension modules),
 * and has each keep a buffer and report what its own runtime saw. Prints,
 * per module, "NAME version V last_error E".
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

typedef int (*check_fn)(size_t bytes, int *version, int *last_error);

static int run(const char *path, size_t bytes)
{
	void *module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	check_fn check;
	void *sym;
	int version = 0, last_error = 0;

	if (!module) {
		fprintf(stderr, "two_runtimes: %s\n", dlerror());
		return 1;
	}
	sym = dlsym(module, "module_check");
	*(void **)&check = sym;
	if (!check || check(bytes, &version, &last_error) != 0) {
		fprintf(stderr, "two_runtimes: %s failed\n", path);
		return 1;
	}
	printf("%s version %d last_error %d\n", path, version, last_error);
	return 0;
}

int main(int argc, char **argv)
{
	int first13 = argc > 1 && argv[1][0] == '1' && argv[1][1] == '3';

	/* Either may be loaded first, and so be the one found first. */
	if (first13)
		return run("libtwort13.so", 1313) || run("libtwort12.so", 1212);
	return run("libtwort12.so", 1212) || run("libtwort13.so", 1313);
}
