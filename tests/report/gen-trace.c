/* SPDX-License-Identifier: MIT */
/*
 * gen-trace: writes deterministic synthetic leakwatch traces for the report
 * tests, using nothing but common/lw-format.h.
 *
 *     gen-trace SCENARIO OUT
 *     gen-trace large OUT [EVENTS [SLOTS]]
 *     gen-trace --list
 *
 * Every scenario but "symbols" gives the same bytes on every run. "symbols"
 * records real return addresses inside this program, with a MODULE record
 * for its executable, so that the report can be checked to name the
 * functions below.
 */
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lw-format.h"
#include "trace-builder.h"
#include "gen-steps.h"
#include "gen-formats.h"

static void std_info(struct out *o)
{
	static const char cmdline[] = "./leaky_loop\0" "100\0" "4096";

	rec_info_str(o, "exe", "/home/user/leaky/leaky_loop");
	rec_info(o, "cmdline", cmdline, sizeof(cmdline) - 1);
	rec_info_str(o, "cwd", "/home/user/leaky");
	rec_info_str(o, "leakwatch", "0.1.0");
	rec_info_str(o, "cudart", "/usr/local/cuda/lib64/libcudart.so.12");
}

/* The body of a training loop that leaks one 4 KiB buffer per step. */
static void leak_loop_body(struct out *o, unsigned steps)
{
	static const uint64_t leak[] = { 0x401136, 0x4012a0, 0x7f1234029d90 };
	static const uint64_t temp[] = { 0x401180, 0x4012b0, 0x7f1234029d90 };
	static const uint64_t weights[] = { 0x4010f0, 0x401290,
					    0x7f1234029d90 };

	std_info(o);
	rec_hot1(o, LW_REC_THREAD, PID);
	rec_context(o, LW_API_CUDA_MALLOC, 0, 0);
	rec_stack(o, 1, weights, 3);
	rec_stack(o, 2, temp, 3);
	rec_stack(o, 3, leak, 3);
	rec_alloc(o, LW_MEM_DEVICE, 0x7d0000000000, 64 * MiB, 1);
	for (unsigned i = 0; i < steps; i++) {
		uint64_t t = 0x7f0000000000 + i * 0x200000ull;

		rec_hot1(o, LW_REC_TIME, 1000000);
		rec_alloc(o, LW_MEM_DEVICE, t, 1 * MiB, 2);
		rec_alloc(o, LW_MEM_DEVICE, 0x7e0000000000 + i * 0x1000ull,
			  4096, 3);
		rec_free(o, t);
		rec_simple(o, LW_REC_STEP);
	}
}

static void scenario_leak_loop(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 100);
	rec_free(o, 0x7d0000000000);
	rec_end(o, 0);
}

/*
 * One line that makes two 1.5 KiB blocks per step, one freed in the step
 * (a temporary) and one kept (the loss): 40 steps leave 40 live of 80
 * made, the temporaries freed after 0 steps; then the program's code
 * ends (PROGRAM_END) and its teardown frees 10 of the kept ones.
 */
static void scenario_evidence_frees(struct out *o)
{
	static const uint64_t loss[] = { 0x401136, 0x4012a0, 0x7f1234029d90 };

	std_header(o);
	std_info(o);
	rec_hot1(o, LW_REC_THREAD, PID);
	rec_context(o, LW_API_CUDA_MALLOC, 0, 0);
	rec_stack(o, 1, loss, 3);
	for (unsigned i = 0; i < 40; i++) {
		uint64_t t = 0x7f0000000000 + i * 0x200000ull;

		rec_hot1(o, LW_REC_TIME, 1000000);
		rec_alloc(o, LW_MEM_DEVICE, t, 1536, 1);
		rec_alloc(o, LW_MEM_DEVICE, 0x7e0000000000 + i * 0x1000ull,
			  1536, 1);
		rec_free(o, t);
		rec_simple(o, LW_REC_STEP);
	}
	rec_mark(o, LW_MARK_PROGRAM_END);
	for (unsigned i = 0; i < 10; i++)
		rec_free(o, 0x7e0000000000 + i * 0x1000ull);
	rec_end(o, 0);
}

static void scenario_kinds(struct out *o)
{
	static const uint64_t s1[] = { 0x401000, 0x402000 };
	static const uint64_t s2[] = { 0x401100, 0x402000 };
	static const uint64_t s3[] = { 0x401200, 0x402000 };
	static const uint64_t s4[] = { 0x401300, 0x402000 };
	static const uint64_t s5[] = { 0x401400, 0x402000 };

	std_header(o);
	std_info(o);
	rec_warning(o, "cudaMallocAsync: the default pool's release threshold is not 0");
	rec_stack(o, 1, s1, 2);
	rec_stack(o, 2, s2, 2);
	rec_stack(o, 3, s3, 2);
	rec_stack(o, 4, s4, 2);
	rec_stack(o, 5, s5, 2);
	rec_context(o, LW_API_CUDA_MALLOC, 0, 0);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000000000, 3 * MiB, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000400000, 1 * MiB, 1);
	rec_context(o, LW_API_CUDA_MALLOC_MANAGED, 0, 0);
	rec_alloc(o, LW_MEM_MANAGED, 0x7f1000000000, 2 * MiB, 2);
	rec_context(o, LW_API_CUDA_HOST_ALLOC, -1, 0);
	rec_alloc(o, LW_MEM_PINNED_HOST, 0x7f2000000000, 8 * MiB, 3);
	rec_context(o, LW_API_CUDA_HOST_REGISTER, -1, 0);
	rec_alloc(o, LW_MEM_HOST_REGISTERED, 0x7f3000000000, 16 * MiB, 4);
	/* One stack, two kinds. */
	rec_context(o, LW_API_CUDA_MALLOC_ASYNC, 1, 0x5555);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000800000, 512, 5);
	rec_context(o, LW_API_CUDA_MALLOC_HOST, -1, 0);
	rec_alloc(o, LW_MEM_PINNED_HOST, 0x7f2000800000, 1024, 5);
	/* No stack captured. */
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000900000, 256, 0);
	rec_simple(o, LW_REC_STEP);
	/* The free of 0x7f0000400000 was missed: its address comes back. */
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000400000, 2 * MiB, 1);
	/* Unknown free; cudaFree(NULL). */
	rec_free(o, 0x7f00deadbe00);
	rec_free(o, 0);
	rec_dropped(o, 3);
	rec_free(o, 0x7f3000000000);
	rec_free(o, 0x7f1000000000);
	rec_simple(o, LW_REC_STEP);
	rec_end(o, 3);
}

static void scenario_phases(struct out *o)
{
	static const uint64_t s1[] = { 0x7f0000001234, 0x7f0000005678,
				       0x500000, 0x600010 };
	static const uint8_t junk[] = { 0x01, 0xff, 0xff, 0xff, 0x7e, 0x00 };
	struct out p = { 0 };

	std_header(o);
	std_info(o);
	rec_module(o, 0x7f0000000000, 0x7f0000001000, 0x7f0000100000,
		   "/nonexistent/lib/libfake.so");
	rec_module(o, 0x7ffff7fc1000, 0x7ffff7fc1000, 0x7ffff7fc3000, "[vdso]");
	rec_module(o, 0, 0x500000, 0x501000, "/nonexistent/also-missing");
	/* Not a regular file: must not be read (a FIFO would block). */
	rec_module(o, 0, 0x600000, 0x601000, "/dev/null");
	rec_string(o, 1, "load_model");
	rec_string(o, 2, "train");
	rec_string(o, 3, "eval");
	rec_stack(o, 1, s1, 4);
	/* Unknown extension records are skipped. */
	put_bytes(&p, junk, sizeof(junk));
	rec_ext(o, 0x7e, &p);
	p.len = 0;
	rec_ext(o, 0x7d, &p);
	free(p.data);

	rec_phase_begin(o, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5000000000, 100 * MiB, 1);
	rec_simple(o, LW_REC_PHASE_END);
	rec_phase_begin(o, 2);
	for (unsigned i = 0; i < 3; i++) {
		rec_phase_begin(o, 3);
		rec_alloc(o, LW_MEM_DEVICE, 0x7f6000000000 + i * 0x1000ull,
			  1000, 1);
		rec_simple(o, LW_REC_PHASE_END);
		rec_simple(o, LW_REC_STEP);
	}
	rec_simple(o, LW_REC_PHASE_END);
	rec_simple(o, LW_REC_PHASE_END); /* unbalanced */
	rec_phase_begin(o, 9);	/* names an undefined string */
	rec_phase_begin(o, 2);	/* left open */
	rec_end(o, 0);
}

/* The leak loop, cut inside an ALLOC record. */
static void scenario_truncated(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 10);
	put_u8(o, LW_REC_ALLOC_DEVICE);
	put_u8(o, 0x80); /* a varint that goes on past the end */
}

/* Cut inside the payload of a STACK record. */
static void scenario_truncated_ext(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 5);
	put_u8(o, LW_REC_STACK);
	put_varint(o, 40);
	put_varint(o, 4);
	put_varint(o, 3);
}

/* A preallocated file: complete records, then zeros. */
static void scenario_zero_tail(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 5);
	reserve(o, 4096);
	memset(o->data + o->len, 0, 4096);
	o->len += 4096;
}

static void scenario_header_only(struct out *o)
{
	std_header(o);
}

static void scenario_no_leak(struct out *o)
{
	static const uint64_t s1[] = { 0x401000 };

	std_header(o);
	std_info(o);
	rec_stack(o, 1, s1, 1);
	for (unsigned i = 0; i < 4; i++) {
		rec_alloc(o, LW_MEM_DEVICE, 0x7f0000000000, 1 * MiB, 1);
		rec_free(o, 0x7f0000000000);
		rec_simple(o, LW_REC_STEP);
	}
	rec_end(o, 0);
}

static void scenario_host_only(struct out *o)
{
	static const uint64_t s1[] = { 0x401000 };

	std_header(o);
	std_info(o);
	rec_stack(o, 1, s1, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000000000, 1 * MiB, 1);
	rec_alloc(o, LW_MEM_PINNED_HOST, 0x7f2000000000, 2 * MiB, 1);
	rec_free(o, 0x7f0000000000);
	rec_end(o, 0);
}

/* 15 sites of 20 frames: more than --top and --frames show by default. */
static void scenario_many_sites(struct out *o)
{
	uint64_t frames[20];

	std_header(o);
	std_info(o);
	for (unsigned s = 1; s <= 15; s++) {
		for (unsigned f = 0; f < 20; f++)
			frames[f] = 0x400000 + s * 0x10000 + f * 0x10;
		rec_stack(o, s, frames, 20);
	}
	for (unsigned s = 1; s <= 15; s++) {
		for (unsigned n = 0; n < s; n++)
			rec_alloc(o, LW_MEM_DEVICE,
				  0x7f0000000000 + (s * 100 + n) * 0x1000ull,
				  s * 1000, s);
	}
	rec_end(o, 0);
}

/* Text that must not reach a terminal or a JSON document raw. */
static void scenario_escapes(struct out *o)
{
	static const char cmdline[] = "./prog\0" "arg with space\0" "it's\0"
				      "\x1b[31mred\x1b[0m\0" "tab\there\0"
				      "bad\xff\xfe utf8\0" "\xc3\xbcn\xc3\xaf" "c\xc3\xb6" "de\0"
				      "c1\xc2\x85" "control\0" "quote\"back\\slash\0"
				      "%n%s%x%%";
	static const uint64_t s1[] = { 0x401000 };
	/* Python frames whose file and function names are hostile too. */
	static const uint64_t s2[] = { 0x7f0000001000, 0x5000a0 };
	static const struct py_frame p2[] = { { 1, 7, 1 } };
	static const unsigned e2[] = { 1 };

	std_header(o);
	rec_info_str(o, "exe", "/tmp/we\x01ird/pr\x7fog%s%n");
	rec_info(o, "cmdline", cmdline, sizeof(cmdline) - 1);
	rec_info_str(o, "cwd", "/tmp");
	rec_info_str(o, "python", "3.11.7");
	rec_warning(o, "line one\nline two\r\x1b]0;title\x07 \xed\xa0\x80 surrogate %s%n");
	rec_string(o, 1, "ph\xc0\xafse\n%n");
	rec_string(o, 2, "/tmp/<script>&\"'%s%n.py");
	rec_string(o, 3, "f%n%s\x1b[2J\xff\\\"");
	rec_pycode(o, 1, 2, 3, 5);
	rec_stack(o, 1, s1, 1);
	rec_stack(o, 2, s2, 2);
	rec_pystack(o, 2, p2, 1, e2, 1);
	rec_phase_begin(o, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000000000, 4096, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000100000, 2048, 2);
	rec_end(o, 0);
}

/*
 * A Python program: Python frames in place of the evaluation loop's native
 * frames, a stack whose frames cannot be lined up, and the PROGRAM_END mark
 * before finalization frees the tensors the program kept.
 */
static void scenario_python(struct out *o)
{
	static const char cmdline[] = "python3\0train.py";
	static const uint64_t s1[] = { 0x7f0000001000, 0x5000a0,
				       0x7f0000002000, 0x5000a0, 0x400500 };
	static const uint64_t s2[] = { 0x7f0000001000, 0x5000a0 };
	static const uint64_t s3[] = { 0x400600 };
	static const struct py_frame p1[] = {
		{ 3, 33, 1 }, { 2, 12, 0 }, { 1, 5, 1 },
	};
	static const struct py_frame p2[] = { { 2, 20, 1 }, { 1, -1, 1 } };
	static const unsigned e1[] = { 1, 3 }, e2[] = { 1 };

	std_header(o);
	rec_info_str(o, "exe", "/usr/bin/python3.11");
	rec_info(o, "cmdline", cmdline, sizeof(cmdline) - 1);
	rec_info_str(o, "cwd", "/home/user");
	rec_info_str(o, "python", "3.11.7");
	rec_string(o, 1, "/home/user/train.py");
	rec_string(o, 2, "<module>");
	rec_string(o, 3, "train_step");
	rec_string(o, 4, "Model.forward");
	rec_pycode(o, 1, 1, 2, 1);
	rec_pycode(o, 2, 1, 3, 10);
	rec_pycode(o, 3, 1, 4, 30);
	rec_stack(o, 1, s1, 5);
	rec_pystack(o, 1, p1, 3, e1, 2);
	rec_stack(o, 2, s2, 2);
	rec_pystack(o, 2, p2, 2, e2, 1);
	rec_stack(o, 3, s3, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5000000000, 4096, 3);
	for (unsigned i = 0; i < 3; i++) {
		rec_alloc(o, LW_MEM_DEVICE, 0x7f6000000000 + i * 0x100000ull,
			  1 * MiB, 1);
		rec_simple(o, LW_REC_STEP);
	}
	rec_alloc(o, LW_MEM_DEVICE, 0x7f7000000000, 512 * 1024, 2);
	rec_mark(o, LW_MARK_PROGRAM_END);
	/* Finalization clears the module's globals. */
	for (unsigned i = 0; i < 3; i++)
		rec_free(o, 0x7f6000000000 + i * 0x100000ull);
	rec_free(o, 0x7f7000000000);
	rec_end(o, 0);
}

/*
 * Where a Python program's sites are located: user code over the standard
 * library and installed packages, the innermost Python frame when all of
 * them are library code, a native frame outside CUDA for threads without
 * Python frames. No PROGRAM_END mark (the program was killed at exit).
 */
static void scenario_python_location(struct out *o)
{
	static const char cmdline[] = "python3\0train.py";
	/* Evaluation-loop frames at 0x5000a0, in the python3 executable.
	 * The modules' files are missing everywhere: frames stay offsets. */
	static const uint64_t torch[] = { 0x7f1000001000, 0x5000a0, 0x5000a0,
					  0x400500 };
	static const uint64_t threading[] = { 0x7f1000002000, 0x5000a0,
					      0x7f3000000100 };
	static const uint64_t string[] = { 0x7f1000002000, 0x5000a0, 0x400500 };
	static const uint64_t autograd[] = { 0x7f2000000100, 0x7f2100000200,
					     0x7f1000003000, 0x7f3000000100 };
	static const uint64_t callback[] = { 0x7f2000000300, 0x600000,
					     0x7f2200000100 };
	/* A package, the standard library, then the user's code. */
	static const struct py_frame p1[] = {
		{ 1, 1501, 1 }, { 2, 146, 0 }, { 3, 12, 0 }, { 4, 40, 1 },
	};
	/* All standard library: the innermost is the location. */
	static const struct py_frame p2[] = { { 5, 975, 0 }, { 6, 241, 1 } };
	/* The standard library called from code passed to exec(). */
	static const struct py_frame p3[] = { { 5, 980, 0 }, { 7, 1, 1 } };
	static const unsigned e1[] = { 1, 2 }, e2[] = { 1 };

	std_header(o);
	rec_info_str(o, "exe", "/usr/bin/python3.11");
	rec_info(o, "cmdline", cmdline, sizeof(cmdline) - 1);
	rec_info_str(o, "cwd", "/home/user");
	rec_info_str(o, "python", "3.11.7");
	rec_module(o, 0x7f1000000000, 0x7f1000000000, 0x7f1000100000,
		   "/home/user/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so");
	rec_module(o, 0x7f2000000000, 0x7f2000000000, 0x7f2000100000,
		   "/opt/lw-test/cuda/lib64/libcudart.so.12");
	rec_module(o, 0x7f2100000000, 0x7f2100000000, 0x7f2100100000,
		   "/opt/lw-test/driver/libcuda.so.1");
	rec_module(o, 0x7f2200000000, 0x7f2200000000, 0x7f2200100000,
		   "/opt/lw-test/driver/libnvidia-ptxjitcompiler.so.1");
	rec_module(o, 0x7f3000000000, 0x7f3000000000, 0x7f3000100000,
		   "/opt/lw-test/lib/libc.so.6");
	rec_string(o, 1, "/home/user/venv/lib/python3.11/site-packages/torch/nn/modules/module.py");
	rec_string(o, 2, "Module._call_impl");
	rec_string(o, 3, "/usr/lib/python3.11/copy.py");
	rec_string(o, 4, "deepcopy");
	rec_string(o, 5, "/home/user/train.py");
	rec_string(o, 6, "train_step");
	rec_string(o, 7, "<module>");
	rec_string(o, 8, "/usr/lib/python3.11/threading.py");
	rec_string(o, 9, "Thread.run");
	rec_string(o, 10, "<frozen importlib._bootstrap>");
	rec_string(o, 11, "_call_with_frames_removed");
	rec_string(o, 12, "<string>");
	rec_pycode(o, 1, 1, 2, 1490);
	rec_pycode(o, 2, 3, 4, 128);
	rec_pycode(o, 3, 5, 6, 10);
	rec_pycode(o, 4, 5, 7, 1);
	rec_pycode(o, 5, 8, 9, 970);
	rec_pycode(o, 6, 10, 11, 233);
	rec_pycode(o, 7, 12, 7, 1);
	rec_stack(o, 1, torch, 4);
	rec_pystack(o, 1, p1, 4, e1, 2);
	rec_stack(o, 2, threading, 3);
	rec_pystack(o, 2, p2, 2, e2, 1);
	rec_stack(o, 3, string, 3);
	rec_pystack(o, 3, p3, 2, e2, 1);
	rec_stack(o, 4, autograd, 4);
	rec_stack(o, 5, callback, 3);
	rec_hot1(o, LW_REC_THREAD, PID);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5000000000, 6 * MiB, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5000800000, 5 * MiB, 2);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5001000000, 4 * MiB, 3);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5001800000, 1 * MiB, 0);
	rec_hot1(o, LW_REC_THREAD, PID + 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5002000000, 3 * MiB, 4);
	rec_hot1(o, LW_REC_THREAD, PID + 2);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5002800000, 2 * MiB, 5);
	rec_end(o, 0);
}

/*
 * What a Python program's code left, and what its finalization freed and
 * allocated: sites live at the PROGRAM_END mark, at the end, or both.
 */
static void scenario_python_finalize(struct out *o)
{
	static const char cmdline[] = "python3\0serve.py";
	static const uint64_t native[] = { 0x7f1000001000, 0x5000a0, 0x400500 };
	static const struct py_frame weights[] = { { 1, 8, 1 } };
	static const struct py_frame cache[] = { { 2, 30, 0 }, { 1, 12, 1 } };
	static const struct py_frame pinned[] = { { 1, 15, 1 } };
	static const struct py_frame atexit[] = { { 3, 88, 0 }, { 4, 120, 1 } };
	static const unsigned e1[] = { 1 };

	std_header(o);
	rec_info_str(o, "exe", "/usr/bin/python3.12");
	rec_info(o, "cmdline", cmdline, sizeof(cmdline) - 1);
	rec_info_str(o, "cwd", "/srv/app");
	rec_info_str(o, "python", "3.12.1");
	rec_string(o, 1, "/srv/app/serve.py");
	rec_string(o, 2, "<module>");
	rec_string(o, 3, "Cache.fill");
	rec_string(o, 4, "/srv/app/.venv/lib/python3.12/site-packages/pool/__init__.py");
	rec_string(o, 5, "Pool.__del__");
	rec_string(o, 6, "/usr/lib/python3.12/weakref.py");
	rec_string(o, 7, "finalize.__call__");
	rec_pycode(o, 1, 1, 2, 1);
	rec_pycode(o, 2, 1, 3, 25);
	rec_pycode(o, 3, 4, 5, 80);
	rec_pycode(o, 4, 6, 7, 580);
	rec_stack(o, 1, native, 3);
	rec_pystack(o, 1, weights, 1, e1, 1);
	rec_stack(o, 2, native, 3);
	rec_pystack(o, 2, cache, 2, e1, 1);
	rec_stack(o, 3, native, 3);
	rec_pystack(o, 3, pinned, 1, e1, 1);
	rec_stack(o, 4, native, 3);
	rec_pystack(o, 4, atexit, 2, e1, 1);
	rec_hot1(o, LW_REC_THREAD, PID);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f5000000000, 8 * MiB, 1);
	for (unsigned i = 0; i < 3; i++)
		rec_alloc(o, LW_MEM_DEVICE, 0x7f6000000000 + i * 0x100000ull,
			  1 * MiB, 2);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f7000000000, 4096, 3);
	rec_mark(o, LW_MARK_PROGRAM_END);
	/* Finalization frees the globals, all of the weights and part of
	 * the cache, and a finalizer allocates what it never frees. */
	rec_free(o, 0x7f5000000000);
	rec_free(o, 0x7f6000000000);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f8000000000, 2 * MiB, 4);
	rec_end(o, 0);
}

static void scenario_pystack_undefined(struct out *o)
{
	static const uint64_t s1[] = { 0x401000 };
	static const struct py_frame p1[] = { { 1, 1, 1 } };
	static const unsigned e1[] = { 0 };

	std_header(o);
	rec_stack(o, 1, s1, 1);
	rec_pystack(o, 2, p1, 1, e1, 1);
	rec_end(o, 0);
}

static void scenario_corrupt_tag(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 3);
	put_u8(o, 0x17);
	leak_loop_body(o, 3);
	rec_end(o, 0);
}

static void scenario_bad_magic(struct out *o)
{
	header(o, "\x89LWTRACX", LW_TRACE_VERSION, LW_TRACE_HEADER_SIZE);
	rec_end(o, 0);
}

static void scenario_newer_version(struct out *o)
{
	header(o, LW_TRACE_MAGIC, 7, 48);
	rec_end(o, 0);
}

static void scenario_big_header(struct out *o)
{
	/* A longer header (a later minor addition) is skipped. */
	header(o, LW_TRACE_MAGIC, LW_TRACE_VERSION, 40);
	leak_loop_body(o, 2);
	rec_end(o, 0);
}

static void scenario_short_header(struct out *o)
{
	std_header(o);
	o->len = 20;
}

static void scenario_empty(struct out *o)
{
	(void)o;
}

static void scenario_huge_frames(struct out *o)
{
	struct out p = { 0 };

	std_header(o);
	put_varint(&p, 1);
	put_varint(&p, 5000);
	for (unsigned i = 0; i < 5000; i++)
		put_zvarint(&p, 16);
	rec_ext(o, LW_REC_STACK, &p);
	free(p.data);
	rec_end(o, 0);
}

static void scenario_undefined_stack(struct out *o)
{
	static const uint64_t s1[] = { 0x401000 };

	std_header(o);
	rec_stack(o, 1, s1, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000000000, 4096, 1);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000001000, 4096, 2);
	rec_end(o, 0);
}

static void scenario_stack_order(struct out *o)
{
	static const uint64_t s1[] = { 0x401000 };

	std_header(o);
	rec_stack(o, 1, s1, 1);
	rec_stack(o, 3, s1, 1);
	rec_end(o, 0);
}

static void scenario_bad_varint(struct out *o)
{
	std_header(o);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000000000, 4096, 0);
	put_u8(o, LW_REC_ALLOC_DEVICE);
	for (unsigned i = 0; i < 10; i++)
		put_u8(o, 0xff);
	put_u8(o, 0x01);
	put_varint(o, 4096);
	put_varint(o, 0);
	rec_end(o, 0);
}

static void scenario_ext_overrun(struct out *o)
{
	struct out p = { 0 };

	std_header(o);
	put_varint(&p, 1);
	put_varint(&p, 5); /* five frames announced, one present */
	put_zvarint(&p, 0x401000);
	rec_ext(o, LW_REC_STACK, &p);
	free(p.data);
	rec_end(o, 0);
}

static void scenario_after_end(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 2);
	rec_end(o, 0);
	rec_simple(o, LW_REC_STEP);
}

/*
 * The trace's END record counts more events than it holds: the header's
 * size skips every record but the END one.
 */
static void scenario_header_skips_to_end(struct out *o)
{
	size_t end;

	std_header(o);
	leak_loop_body(o, 20);
	end = o->len;
	rec_end(o, 0);
	o->data[10] = (uint8_t)end;
	o->data[11] = (uint8_t)(end >> 8);
}

/* An END record whose count is one off. */
static void scenario_end_miscount(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 20);
	o->events++;
	rec_end(o, 0);
}

/* A record that declares more bytes than any writer writes. */
static void scenario_record_too_long(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 20);
	put_u8(o, 0x7e);
	put_varint(o, 100000);
	for (unsigned i = 0; i < 500; i++)
		put_u8(o, (uint8_t)i);
}

/* A record that runs past the end of the file: 11 KiB of its 20 KiB are
 * there. */
static void scenario_record_past_end(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 20);
	put_u8(o, 0x7e);
	put_varint(o, 20 * 1024);
	reserve(o, 11 * 1024);
	memset(o->data + o->len, 0x55, 11 * 1024);
	o->len += 11 * 1024;
}

/* A run that died before its first step: allocations, no STEP, no END. */
static void scenario_died_before_step(struct out *o)
{
	std_header(o);
	leak_loop_body(o, 0);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000000000, 1 * MiB, 2);
}

/*
 * The leak loop as the shim writes it: blocks, each led by its checksum.
 * Block 1 holds the process's information and stacks, blocks 2 to 5 ten
 * steps each, block 6 the last free and the END record. Its ALLOC records
 * of the leaking buffer lie at *leak_offsets (one per step), for the
 * damaged variants.
 */
static void checksummed_loop(struct out *o, size_t *leak_offsets)
{
	static const uint64_t leak[] = { 0x401136, 0x4012a0, 0x7f1234029d90 };
	static const uint64_t temp[] = { 0x401180, 0x4012b0, 0x7f1234029d90 };
	static const uint64_t weights[] = { 0x4010f0, 0x401290,
					    0x7f1234029d90 };

	checksummed_header(o);
	std_info(o);
	rec_hot1(o, LW_REC_THREAD, PID);
	rec_context(o, LW_API_CUDA_MALLOC, 0, 0);
	rec_stack(o, 1, weights, 3);
	rec_stack(o, 2, temp, 3);
	rec_stack(o, 3, leak, 3);
	rec_alloc(o, LW_MEM_DEVICE, 0x7d0000000000, 64 * MiB, 1);
	seal_block(o);
	for (unsigned i = 0; i < 40; i++) {
		uint64_t t = 0x7f0000000000 + i * 0x200000ull;

		rec_hot1(o, LW_REC_TIME, 1000000);
		rec_alloc(o, LW_MEM_DEVICE, t, 1 * MiB, 2);
		if (leak_offsets) /* the block's record comes in front */
			leak_offsets[i] = o->len + LW_CHECKSUM_RECORD_SIZE;
		rec_alloc(o, LW_MEM_DEVICE, 0x7e0000000000 + i * 0x1000ull,
			  4096, 3);
		rec_free(o, t);
		rec_simple(o, LW_REC_STEP);
		if (i % 10 == 9)
			seal_block(o);
	}
	rec_free(o, 0x7d0000000000);
	rec_end(o, 0);
	seal_block(o);
}

static void scenario_checksummed(struct out *o)
{
	checksummed_loop(o, NULL);
}

/* One bit of the size of step 25's leaking buffer flipped: 4096 bytes
 * become 4097. Without its checksum the trace reads as complete. */
static void scenario_checksum_damaged(struct out *o)
{
	size_t leak[40], p;

	checksummed_loop(o, leak);
	/* The ALLOC record: tag, address delta (2 bytes at most here),
	 * then the size's varint 0x80 0x20: its low bit. */
	p = leak[25] + 1;
	while (o->data[p] & 0x80)
		p++;
	o->data[p + 1] ^= 1;
}

/* The file ends inside block 5: a write that stopped part-way. */
static void scenario_checksum_cut(struct out *o)
{
	size_t leak[40];

	checksummed_loop(o, leak);
	o->len = leak[35];
}

/* The "symbols" scenario: real return addresses in this program. */
__attribute__((noinline)) static uint64_t return_address(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

/* Keeps the call above from being a tail call (its return address would
 * then lie in our caller). */
#define NO_TAIL_CALL(v) __asm__ volatile("" : "+r"(v))

__attribute__((noinline)) uint64_t lw_gen_leaky_function(void);
uint64_t lw_gen_leaky_function(void)
{
	uint64_t a = return_address();

	NO_TAIL_CALL(a);
	return a;
}

static inline __attribute__((always_inline)) uint64_t lw_gen_inlined(void)
{
	uint64_t a = return_address();

	NO_TAIL_CALL(a);
	return a;
}

__attribute__((noinline)) uint64_t lw_gen_outer_function(void);
uint64_t lw_gen_outer_function(void)
{
	uint64_t a = lw_gen_inlined();

	NO_TAIL_CALL(a);
	return a;
}

/* A C function under a C++ symbol name, to see it demangled. */
__attribute__((noinline)) uint64_t lw_gen_cxx_named(void)
	__asm__("_ZN9leakwatch4test8functionEi");
uint64_t lw_gen_cxx_named(void)
{
	uint64_t a = return_address();

	NO_TAIL_CALL(a);
	return a;
}

struct module_range {
	uint64_t bias, start, end;
	bool found;
};

static int find_main_program(struct dl_phdr_info *info, size_t size,
			     void *data)
{
	struct module_range *r = data;

	(void)size;
	if (r->found)
		return 1;
	r->bias = info->dlpi_addr;
	r->start = UINT64_MAX;
	r->end = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < r->start)
			r->start = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > r->end)
			r->end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	r->found = true;
	return 1; /* the first entry is the main program */
}

static void scenario_symbols(struct out *o)
{
	struct module_range r = { 0 };
	char exe[PATH_MAX];
	uint64_t frames[3];

	if (!realpath("/proc/self/exe", exe)) {
		perror("gen-trace: /proc/self/exe");
		exit(1);
	}
	dl_iterate_phdr(find_main_program, &r);
	std_header(o);
	rec_info_str(o, "exe", exe);
	rec_module(o, r.bias, r.start, r.end, exe);
	frames[0] = lw_gen_leaky_function();
	frames[1] = lw_gen_outer_function();
	frames[2] = lw_gen_cxx_named();
	rec_stack(o, 1, frames, 3);
	rec_alloc(o, LW_MEM_DEVICE, 0x7f0000000000, 4096, 1);
	rec_end(o, 0);
}

static const struct {
	const char *name;
	void (*make)(struct out *o);
} scenarios[] = {
	{ "leak-loop", scenario_leak_loop },
	{ "evidence-frees", scenario_evidence_frees },
	{ "kinds", scenario_kinds },
	{ "phases", scenario_phases },
	{ "truncated", scenario_truncated },
	{ "truncated-ext", scenario_truncated_ext },
	{ "zero-tail", scenario_zero_tail },
	{ "header-only", scenario_header_only },
	{ "no-leak", scenario_no_leak },
	{ "host-only", scenario_host_only },
	{ "many-sites", scenario_many_sites },
	{ "escapes", scenario_escapes },
	{ "big-header", scenario_big_header },
	{ "python", scenario_python },
	{ "python-location", scenario_python_location },
	{ "python-finalize", scenario_python_finalize },
	{ "pystack-undefined", scenario_pystack_undefined },
	{ "corrupt-tag", scenario_corrupt_tag },
	{ "bad-magic", scenario_bad_magic },
	{ "newer-version", scenario_newer_version },
	{ "short-header", scenario_short_header },
	{ "empty", scenario_empty },
	{ "huge-frames", scenario_huge_frames },
	{ "undefined-stack", scenario_undefined_stack },
	{ "stack-order", scenario_stack_order },
	{ "bad-varint", scenario_bad_varint },
	{ "ext-overrun", scenario_ext_overrun },
	{ "after-end", scenario_after_end },
	{ "header-skips-to-end", scenario_header_skips_to_end },
	{ "end-miscount", scenario_end_miscount },
	{ "record-too-long", scenario_record_too_long },
	{ "record-past-end", scenario_record_past_end },
	{ "died-before-step", scenario_died_before_step },
	{ "checksummed", scenario_checksummed },
	{ "checksum-damaged", scenario_checksum_damaged },
	{ "checksum-cut", scenario_checksum_cut },
	{ "symbols", scenario_symbols },
	{ "formats", scenario_formats },
	{ "formats-fixed", scenario_formats_fixed },
	{ "formats-worse", scenario_formats_worse },
	{ "formats-rank0", scenario_formats_rank0 },
	{ "formats-rank1", scenario_formats_rank1 },
	{ "formats-rank2", scenario_formats_rank2 },
	{ "step-linear", scenario_step_linear },
	{ "step-tiny", scenario_step_tiny },
	{ "step-sawtooth-flat", scenario_step_sawtooth_flat },
	{ "step-sawtooth-rising", scenario_step_sawtooth_rising },
	{ "step-plateau", scenario_step_plateau },
	{ "step-warmup", scenario_step_warmup },
	{ "step-lazy-optimizer", scenario_step_lazy_optimizer },
	{ "step-grad-accum", scenario_step_grad_accum },
	{ "step-eval", scenario_step_eval },
	{ "step-cache-fill", scenario_step_cache_fill },
	{ "step-few", scenario_step_few },
	{ "step-new-site", scenario_step_new_site },
	{ "step-one-time", scenario_step_one_time },
	{ "step-long", scenario_step_long },
	{ "step-phase-leak", scenario_step_phase_leak },
	{ "step-phase-epochs", scenario_step_phase_epochs },
};

static int write_file(const char *path, const struct out *o)
{
	FILE *f = fopen(path, "wb");

	if (!f || (o->len && fwrite(o->data, 1, o->len, f) != o->len) ||
	    fclose(f) != 0) {
		fprintf(stderr, "gen-trace: %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct out o = { 0 };
	int rc;

	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
			printf("%s\n", scenarios[i].name);
		printf("large\n");
		return 0;
	}
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: gen-trace SCENARIO OUT\n"
				"       gen-trace large OUT [EVENTS [SLOTS]]\n"
				"       gen-trace --list\n");
		return 2;
	}
	if (strcmp(argv[1], "large") == 0) {
		uint64_t events = argc >= 4 ? strtoull(argv[3], NULL, 10)
					    : 1000000;
		unsigned slots = argc >= 5 ? (unsigned)strtoul(argv[4], NULL, 10)
					   : 8192;

		trace_build_large(&o, events, slots);
	} else {
		size_t i;

		for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
			if (strcmp(argv[1], scenarios[i].name) == 0)
				break;
		}
		if (i == sizeof(scenarios) / sizeof(scenarios[0])) {
			fprintf(stderr, "gen-trace: unknown scenario '%s'\n",
				argv[1]);
			return 2;
		}
		scenarios[i].make(&o);
	}
	rc = write_file(argv[2], &o);
	free(o.data);
	return rc;
}
