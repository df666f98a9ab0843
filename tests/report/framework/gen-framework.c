/* SPDX-License-Identifier: MIT */
/*
 * gen-framework: writes a trace of a Python program on PyTorch whose
 * native frames are real return addresses in the framework's libraries
 * (the stand-ins fake-c10.c and fake-torch.c, named libc10_cuda.so and
 * libtorch_cpu.so) and in this program, which plays the interpreter (INFO
 * "python_eval" points into it), so that the report's folding of the
 * framework's frames can be checked against the names it gives them.
 *
 *     gen-framework OUT
 *
 * Its sites (the line each allocates at, in /home/user/proj/train.py):
 *   4096 bytes at step:7, a forward operator: aten::mul_Tensor, whose run
 *        holds the dispatcher's frames and the allocator's, across both
 *        libraries;
 *   2048 bytes at step:8, the program's own native frame (myops.so)
 *        between two of the framework's: two runs, aten::empty_strided
 *        and aten::mul_Tensor;
 *   1024 bytes at step:9, in backward on autograd's engine thread: the
 *        run "MulBackward0: aten::mul_Tensor", the thread's start, then
 *        the Python frames of the call to backward();
 *    512 bytes at step:10, the allocator's frames alone: named by their
 *        library, libc10_cuda.so.
 */
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake-framework.h"
#include "lw-format.h"
#include "trace-builder.h"

/* The program's own native code, and the C library's start of a thread:
 * modules whose files do not exist, at fixed addresses. */
#define MYOPS 0x7f4000000000ull
#define LIBC 0x7f3000000000ull

__attribute__((noinline)) static uint64_t lw_fake_return_address(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

/* The interpreter's frames: a call into C, the evaluation loop, running
 * the script, and main. */
__attribute__((noinline)) uint64_t interp_call(void);
LW_FAKE_FRAME(interp_call)
__attribute__((noinline)) uint64_t interp_eval(void);
LW_FAKE_FRAME(interp_eval)
__attribute__((noinline)) uint64_t interp_run_file(void);
LW_FAKE_FRAME(interp_run_file)

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
	struct out *o = data;
	uint64_t start = UINT64_MAX, end = 0;
	char exe[PATH_MAX];
	const char *path = info->dlpi_name;

	(void)size;
	if (!path[0]) {
		/* The first entry: this program. */
		if (!realpath("/proc/self/exe", exe)) {
			perror("gen-framework: /proc/self/exe");
			exit(1);
		}
		path = exe;
	} else if (!strstr(path, "libc10_cuda.so") &&
		   !strstr(path, "libtorch_cpu.so")) {
		return 0;
	}
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < start)
			start = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > end)
			end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	rec_module(o, info->dlpi_addr, start, end, path);
	return 0;
}

static void trace(struct out *o)
{
	static const char cmdline[] = "python3\0train.py";
	/* Code objects: 1 step, 2 main, 3 <module>, 4 torch's backward. */
	static const struct py_frame forward[] = {
		{ 1, 7, 0 }, { 2, 12, 0 }, { 3, 15, 1 },
	};
	static const struct py_frame own[] = {
		{ 1, 8, 0 }, { 2, 12, 0 }, { 3, 15, 1 },
	};
	static const struct py_frame backward[] = {
		{ 4, 388, 0 }, { 1, 9, 0 }, { 2, 12, 0 }, { 3, 15, 1 },
	};
	static const struct py_frame allocator[] = {
		{ 1, 10, 0 }, { 2, 12, 0 }, { 3, 15, 1 },
	};
	uint64_t s1[] = {
		fw_device_malloc(), fw_wrap_kernel(), fw_mul_redispatch(),
		fw_wrap_kernel(), fw_mul_call(), fw_thp_mul(), interp_call(),
		interp_eval(), interp_run_file(), LIBC + 0x100,
	};
	uint64_t s2[] = {
		fw_device_malloc(), fw_empty_strided_call(), MYOPS + 0x100,
		fw_mul_call(), fw_thp_mul(), interp_call(), interp_eval(),
		interp_run_file(), LIBC + 0x100,
	};
	uint64_t s3[] = {
		fw_device_malloc(), fw_wrap_kernel(), fw_mul_call(),
		fw_mul_backward(), fw_thread_main(), LIBC + 0x200,
	};
	uint64_t s4[] = {
		fw_device_malloc(), fw_allocate(), interp_call(),
		interp_eval(), interp_run_file(), LIBC + 0x100,
	};
	/* The evaluation loop's frame: the 8th, 7th and 5th native ones. */
	static const unsigned e1[] = { 7 }, e2[] = { 6 }, e4[] = { 3 };
	char eval[32];

	std_header(o);
	rec_info_str(o, "exe", "/usr/bin/python3.11");
	rec_info(o, "cmdline", cmdline, sizeof(cmdline) - 1);
	rec_info_str(o, "cwd", "/home/user/proj");
	rec_info_str(o, "python", "3.11.7");
	snprintf(eval, sizeof(eval), "0x%llx",
		 (unsigned long long)interp_eval());
	rec_info_str(o, "python_eval", eval);
	dl_iterate_phdr(add_module, o);
	rec_module(o, MYOPS, MYOPS, MYOPS + 0x100000, "/opt/app/lib/myops.so");
	rec_module(o, LIBC, LIBC, LIBC + 0x100000, "/opt/lw-test/lib/libc.so.6");
	rec_string(o, 1, "/home/user/proj/train.py");
	rec_string(o, 2, "step");
	rec_string(o, 3, "main");
	rec_string(o, 4, "<module>");
	rec_string(o, 5, "/home/user/venv/lib/python3.11/site-packages/torch/autograd/__init__.py");
	rec_string(o, 6, "backward");
	rec_pycode(o, 1, 1, 2, 6);
	rec_pycode(o, 2, 1, 3, 11);
	rec_pycode(o, 3, 1, 4, 1);
	rec_pycode(o, 4, 5, 6, 300);
	rec_stack(o, 1, s1, sizeof(s1) / sizeof(s1[0]));
	rec_pystack(o, 1, forward, 3, e1, 1);
	rec_stack(o, 2, s2, sizeof(s2) / sizeof(s2[0]));
	rec_pystack(o, 2, own, 3, e2, 1);
	rec_stack(o, 3, s3, sizeof(s3) / sizeof(s3[0]));
	rec_pystack(o, 3, backward, 4, NULL, 0);
	rec_stack(o, 4, s4, sizeof(s4) / sizeof(s4[0]));
	rec_pystack(o, 4, allocator, 3, e4, 1);
	rec_hot1(o, LW_REC_THREAD, PID);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5000000000, 4096, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5000010000, 2048, 2);
	rec_hot1(o, LW_REC_THREAD, PID + 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5000020000, 1024, 3);
	rec_hot1(o, LW_REC_THREAD, PID);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5000030000, 512, 4);
	rec_end(o, 0);
}

int main(int argc, char **argv)
{
	struct out o = { 0 };
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: gen-framework OUT\n");
		return 2;
	}
	trace(&o);
	f = fopen(argv[1], "wb");
	if (!f || fwrite(o.data, 1, o.len, f) != o.len || fclose(f) != 0) {
		fprintf(stderr, "gen-framework: %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	free(o.data);
	return 0;
}
