/* SPDX-License-Identifier: MIT */
/*
 * A Python training run of 120 steps with phases ("train" around every
 * step, "eval" every 20 steps) and names that a page or a terminal must not
 * take as markup: the loop keeps one 4 KiB tensor per step for logging
 * (stack 3, `log_loss` in a file whose name holds HTML), plus weights (1),
 * temporaries freed every step (2) and an evaluation cache that fills and
 * stops (4). Variants: "fixed" keeps nothing per step (the same frames
 * under other stack ids: sites are matched by name across runs), "worse"
 * keeps 8 KiB per step, its lines two further down, and three ranks of a
 * torchrun job (INFO "rank"), rank 1 keeping twice as much as ranks 0
 * and 2.
 */
#include "gen-formats.h"

#include "lw-format.h"

#define STEPS 120
#define KiB 1024ull

static const char hostile_file[] =
	"/home/user/job/</script><script>document.title='pwned'</script>,v2:a.py";
/* U+2028, U+2029, quotes, ampersand and an img tag in a function name. */
static const char hostile_function[] =
	"log_loss\xe2\x80\xa8<img src=x onerror=alert(1)>\xe2\x80\xa9\"&'";

/*
 * The four sites get stack ids first_id to first_id + 3 (weights,
 * temporaries, kept, cache); ids before them are stacks of no site. Lines
 * move down by line_shift, as after an edit above them.
 */
static void define_stacks(struct out *o, uint64_t first_id,
			  int64_t line_shift)
{
	static const uint64_t native[] = { 0x7f0000001000, 0x5000a0,
					   0x5000a0, 0x400500 };
	static const unsigned evals[] = { 1, 2 };
	struct py_frame py[2] = { { 0, 0, 1 }, { 1, 50, 1 } };
	static const int64_t lines[4] = { 12, 30, 41, 77 };

	rec_string(o, 1, "/home/user/job/train.py");
	rec_string(o, 2, "<module>");
	rec_string(o, 3, "train_step");
	rec_string(o, 4, hostile_file);
	rec_string(o, 5, hostile_function);
	rec_string(o, 6, "evaluate");
	rec_string(o, 7, "build_model");
	rec_pycode(o, 1, 1, 2, 1);
	rec_pycode(o, 2, 1, 7, 10);
	rec_pycode(o, 3, 1, 3, 25);
	rec_pycode(o, 4, 4, 5, 40);
	rec_pycode(o, 5, 1, 6, 70);
	static const uint64_t other[] = { 0x400900 };

	for (uint64_t id = 1; id < first_id; id++)
		rec_stack(o, id, other, 1);
	for (unsigned i = 0; i < 4; i++) {
		static const uint64_t codes[4] = { 2, 3, 4, 5 };

		rec_stack(o, first_id + i, native, 4);
		py[0].code = codes[i];
		py[0].line = lines[i] + line_shift;
		rec_pystack(o, first_id + i, py, 2, evals, 2);
	}
}

static void run(struct out *o, uint64_t kept_per_step, const char *rank,
		uint32_t pid, uint64_t first_id, int64_t line_shift)
{
	const uint64_t ids[4] = { first_id, first_id + 1, first_id + 2,
				  first_id + 3 };
	static const char cmdline[] = "/usr/bin/python3\0train.py";
	uint64_t addr = 0x7f0000000000;

	put_bytes(o, LW_TRACE_MAGIC, LW_TRACE_MAGIC_SIZE);
	put_le(o, LW_TRACE_VERSION, 2);
	put_le(o, LW_TRACE_HEADER_SIZE, 2);
	put_le(o, 0, 4);
	put_le(o, START_NS, 8);
	put_le(o, pid, 4);
	put_le(o, 0, 4);
	rec_info_str(o, "exe", "/usr/bin/python3.11");
	rec_info(o, "cmdline", cmdline, sizeof(cmdline) - 1);
	rec_info_str(o, "cwd", "/home/user/job");
	rec_info_str(o, "python", "3.11.7");
	if (rank)
		rec_info_str(o, "rank", rank);
	rec_hot1(o, LW_REC_THREAD, pid);
	rec_context(o, LW_API_CUDA_MALLOC_ASYNC, 0, 0);
	rec_string(o, 8, "train");
	rec_string(o, 9, "eval");
	define_stacks(o, first_id, line_shift);
	rec_alloc(o, LW_MEM_DEVICE, addr, 32 * 1024 * KiB, ids[0]);
	addr += 0x10000000;
	for (unsigned step = 0; step < STEPS; step++) {
		rec_phase_begin(o, 8);
		rec_alloc(o, LW_MEM_DEVICE, addr, (1 + step % 3) * 1024 * KiB,
			  ids[1]);
		rec_free(o, addr);
		addr += 0x400000;
		if (kept_per_step) {
			rec_alloc(o, LW_MEM_DEVICE, addr, kept_per_step, ids[2]);
			addr += 0x10000;
		}
		rec_simple(o, LW_REC_PHASE_END);
		if (step % 20 == 19) {
			rec_phase_begin(o, 9);
			if (step < 60) {
				rec_alloc(o, LW_MEM_DEVICE, addr, 2048 * KiB,
					  ids[3]);
				addr += 0x400000;
			}
			rec_hot1(o, LW_REC_TIME, 300000);
			rec_simple(o, LW_REC_PHASE_END);
		}
		rec_hot1(o, LW_REC_TIME, 1000000);
		rec_simple(o, LW_REC_STEP);
	}
	rec_mark(o, LW_MARK_PROGRAM_END);
	rec_end(o, 0);
}

void scenario_formats(struct out *o)
{
	run(o, 4 * KiB, NULL, PID, 1, 0);
}

void scenario_formats_fixed(struct out *o)
{
	run(o, 0, NULL, PID + 1, 3, 0);
}

void scenario_formats_worse(struct out *o)
{
	run(o, 8 * KiB, NULL, PID + 2, 2, 2);
}

void scenario_formats_rank0(struct out *o)
{
	run(o, 4 * KiB, "0", PID + 10, 1, 0);
}

void scenario_formats_rank1(struct out *o)
{
	run(o, 8 * KiB, "1", PID + 11, 1, 0);
}

void scenario_formats_rank2(struct out *o)
{
	run(o, 4 * KiB, "2", PID + 12, 1, 0);
}
