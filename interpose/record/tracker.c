/* SPDX-License-Identifier: MIT */
#include "tracker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "backward.h"
#include "bounded.h"
#include "config.h"
#include "events.h"
#include "kept.h"
#include "live-table.h"
#include "lw-cells.h"
#include "lw-hash.h"
#include "modules.h"
#include "pyframes.h"
#include "real.h"
#include "segments.h"
#include "stacks.h"
#include "unwind.h"
#include "writer.h"

static __thread pid_t thread_id __attribute__((tls_model("initial-exec")));

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Notebook cells whose text one trace holds, at most. */
#define LW_CELLS_WRITTEN_MAX 1024

/* The process's configuration (process.c reads it). */
static const struct lw_config *config;
static struct lw_writer writer;
static enum { TRACE_NONE, TRACE_OPEN, TRACE_FAILED } trace_state;
/* The process that opened the trace (see lw_flush_before_exec()). */
static pid_t trace_pid;
static uint32_t trace_gen = 1;
static char trace_path[PATH_MAX];

/*
 * The open trace's state, under the lock: what its records depend on and
 * what it has recorded live. Reset in one place, trace_context_reset(),
 * when a trace opens (the process's first or a forked child's) and in a
 * forked child at once (the parent's allocations are not the child's).
 */
static struct trace_context {
	/* STEP records written; phases open now, and closed so far. */
	uint32_t steps_written, phases_open, phases_closed;
	unsigned step_source_in_trace;	/* enum lw_step_source, 0: none */
	int runtimes_in_trace;	/* the list of CUDA runtimes is written */
	unsigned warnings_in_trace_mask;
	/* What the last records said, so that unchanged context is not
	 * repeated. */
	pid_t last_tid;
	unsigned last_api;
	int64_t last_device;
	uint64_t last_stream;
	uint64_t last_time_ns, last_flush_ns;
	/* The allocations live now (live-table.h), their totals by kind,
	 * frees of memory the trace never saw allocated. */
	struct lw_addr_table live;
	uint64_t live_bytes[LW_MEM_KIND_MAX + 1];
	uint64_t live_count[LW_MEM_KIND_MAX + 1];
	uint64_t unknown_frees;
	/* Of those, PyTorch's blocks (a bounded trace reports their peak). */
	uint64_t torch_live_bytes;
	/* Inside a pass of Python's cycle collector (its GC marks). */
	bool in_gc;
	/* After a phase ends, a search for what it left live, once its
	 * steps have gone by: due at step phase_search_at. */
	uint32_t phase_search_at;
	int phase_search_due;
	/* Passes of Python's cycle collector ended, and the steps written
	 * when the last one ended. */
	uint64_t gc_passes;
	uint32_t last_gc_step;
	/* Allocations recorded (read without the lock: atomic stores). */
	uint64_t recorded_allocations;
	/* The context of the latest allocation (of a failed free's, made
	 * again). */
	unsigned recent_api;
	int64_t recent_device;
	uint64_t recent_stream;
	/* What was live when the program's code finished (PROGRAM_END). */
	int have_program_end_summary;	/* taken (LW_EVENT_SUMMARY) */
	/* The PROGRAM_END mark was written: no step is unfinished. */
	bool code_finished;
	/* The notebook cells whose text is written (hashes of name and
	 * length): once each. */
	uint64_t cells_written[LW_CELLS_WRITTEN_MAX];
	unsigned cells_written_count;
	/* Optimizer STEP records written; no STEP record written so far
	 * may be void any more (INFO "steps_settled" is in the trace). */
	uint32_t optimizer_steps_written;
	bool steps_settled;
	/* The loop's steps (stacks.h) not written yet (an optimizer's came
	 * first), whether those so far are void (an enclosing loop was
	 * found), and where the loop is ("file\tline\tfunction"), to be
	 * written before its next step when where_due. */
	uint32_t loop_steps_due;
	bool loop_void_due, where_due;
	/* The loop's last step is due at the program's end. */
	bool loop_last_at_end;
	/* A loop after another (setup, then the loop that serves): the
	 * STEP records before its first, the steps of the loops before it
	 * and its own so far. The one with more iterations is the loop:
	 * once it has as many, those before it are void. */
	uint32_t loop_prefix, loop_steps_before, loop_steps;
	char where[768];
} tc;

/* The program makes a new optimizer every iteration (pyhooks.c). */
static int optimizer_remade;
/* The thread's latest allocation was on LEAKWATCH_STEP_AT's line, and
 * that frame's locals then (lw_py_locals_hash()). */
static __thread int on_step_line;
static __thread uint64_t step_line_locals;

/* Allocation calls that failed, and the first (counted whether or not a
 * trace could be opened). */
static uint64_t failed_allocations;
static unsigned first_failed_api;
static int first_failed_error;

/* Set by a signal's handler (lw_record_request()): the live view's line
 * and a flush, at the next event. */
static volatile sig_atomic_t requested;

/* The holder searches during the run, and their time (holders.c tells). */
static unsigned in_run_searches;
static double in_run_seconds;

/* What an event that tells nothing more says. */
static const struct lw_event no_detail;

static int python_frames;      /* CPython frames can be read */
static int python_process;     /* running inside CPython */

/*
 * An optimizer step is written at the next event the trace records, not at
 * once: if the program marks its steps itself, its first explicit step
 * comes after the first optimizer step of that iteration, and must replace
 * it rather than count a step twice. The step keeps its place among the
 * allocations either way. Steps are counted, not flagged: under a caching
 * allocator whole steps go by without a CUDA call, and each one is a step.
 */
static int explicit_steps;
static unsigned optimizer_steps_pending;


#define FLUSH_INTERVAL_NS 1000000000ull

static uint64_t coarse_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Copies warnings printed so far into the trace. Under the lock. */
static void record_warnings_locked(void)
{
	unsigned pending = __atomic_load_n(&lw_warned_mask, __ATOMIC_ACQUIRE) &
			   ~tc.warnings_in_trace_mask;

	for (unsigned k = 0; pending && k < LW_WARN_COUNT; k++) {
		if (!(pending & (1u << k)))
			continue;
		lw_writer_ext(&writer, LW_REC_WARNING,
			      (const uint8_t *)lw_warning_text(k),
			      strlen(lw_warning_text(k)));
		tc.warnings_in_trace_mask |= 1u << k;
		pending &= ~(1u << k);
	}
}

static pid_t current_tid(void)
{
	if (!thread_id)
		thread_id = (pid_t)syscall(SYS_gettid);
	return thread_id;
}

/* ---- the trace file ---- */

/*
 * The command line, whole up to LW_WRITER_INFO_MAX bytes. A longer one is
 * cut after the last argument that fits (inside the first one if none
 * does), and a last argument says so, so that every report shows the cut:
 * "[cut by leakwatch: the command line has N bytes in M arguments; K bytes
 * are recorded]". Under the lock (the buffer is static: no stack of a hook
 * holds 32 KiB).
 */
static void write_cmdline_locked(void)
{
	static char cmdline[LW_WRITER_INFO_MAX];
	char rest[4096], mark[160];
	size_t len = 0, total = 0, args = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	for (;;) {
		char *to = len < sizeof(cmdline) ? cmdline + len : rest;
		size_t room = len < sizeof(cmdline) ? sizeof(cmdline) - len
						    : sizeof(rest);
		ssize_t n = read(fd, to, room);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			args += to[i] == '\0';
		total += (size_t)n;
		if (to != rest)
			len += (size_t)n;
	}
	close(fd);
	if (total > len) {
		size_t room = sizeof(cmdline) - sizeof(mark) - 1;
		size_t keep = room;

		while (keep > 0 && cmdline[keep - 1] != '\0')
			keep--;
		if (keep == 0) /* one argument longer than the room: cut it */
			for (keep = room; keep > 0 &&
			     (cmdline[keep] & 0xc0) == 0x80; keep--)
				;
		else
			keep--; /* the argument's NUL: the mark's separator */
		int m = snprintf(mark, sizeof(mark),
				 "[cut by leakwatch: the command line has %zu "
				 "bytes in %zu arguments; %zu bytes are "
				 "recorded]", total, args, keep);
		cmdline[keep] = '\0';
		memcpy(cmdline + keep + 1, mark, (size_t)m);
		len = keep + 1 + (size_t)m;
	}
	while (len > 0 && cmdline[len - 1] == '\0')
		len--;
	lw_writer_info(&writer, "cmdline", cmdline, len);
}

static void write_process_info_locked(void)
{
	char buf[8192];
	ssize_t n;

	n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n > 0)
		lw_writer_info(&writer, "exe", buf, (size_t)n);

	write_cmdline_locked();
	if (getcwd(buf, sizeof(buf)))
		lw_writer_info(&writer, "cwd", buf, strlen(buf));
	lw_writer_info(&writer, "leakwatch", LW_VERSION, strlen(LW_VERSION));
	if (config->rank[0])
		lw_writer_info(&writer, "rank", config->rank,
			       strlen(config->rank));
	if (python_frames) {
		lw_writer_info(&writer, "python", lw_py_version(),
			       strlen(lw_py_version()));
		int eval_len = snprintf(buf, sizeof(buf), "0x%" PRIxPTR,
				 lw_py_eval_address());
		lw_writer_info(&writer, "python_eval", buf, (size_t)eval_len);
	}
	const char *cudart = lw_real_runtime_path();
	if (cudart)
		lw_writer_info(&writer, "cudart", cudart, strlen(cudart));
	lw_events_emit(LW_EVENT_TRACE_INFO,
		       &(struct lw_event){ .writer = &writer });
}

/*
 * Appends the trace's path to LEAKWATCH_MANIFEST, created if need be (0600:
 * it lists the user's trace paths); a trace that could not be written is
 * listed too, its line starting with a NUL byte (which no path holds), so
 * that `leakwatch run` can say why there is no report rather than guess.
 */
static void append_to_manifest(const char *path, int failed)
{
	char line[PATH_MAX + 2];
	size_t len = strlen(path), at = failed ? 1 : 0;

	if (!config->manifest[0] || len >= PATH_MAX)
		return;
	int fd = open(config->manifest,
		      O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		      0600);
	if (fd < 0) {
		lw_warn_once(LW_WARN_MANIFEST,
			     "LEAKWATCH_MANIFEST=%s cannot be opened: %s; the "
			     "trace's path is not listed there",
			     config->manifest, strerror(errno));
		return;
	}
	line[0] = 0;
	memcpy(line + at, path, len);
	line[at + len] = '\n';
	/* One write with O_APPEND: lines of concurrent processes never mix. */
	while (write(fd, line, at + len + 1) < 0 && errno == EINTR)
		;
	close(fd);
}

/* Device and managed memory live now, as the reports count it. */
static uint64_t device_live_bytes(void)
{
	return tc.live_bytes[LW_MEM_DEVICE] + tc.live_bytes[LW_MEM_MANAGED];
}

static uint64_t device_live_count(void)
{
	return tc.live_count[LW_MEM_DEVICE] + tc.live_count[LW_MEM_MANAGED];
}

static void bounded_context(unsigned api, int64_t device, uint64_t stream);

static void trace_context_reset(void)
{
	lw_bounded_reset(config && config->bounded, &writer, &tc.live,
			 bounded_context);
	lw_kept_reset();
	lw_live_table_clear(&tc.live);
	memset(&tc, 0, sizeof(tc));
	tc.last_api = UINT_MAX;
	tc.last_device = INT64_MIN;
	tc.last_time_ns = tc.last_flush_ns = coarse_now_ns();
}

/* Opens the trace at the first event. Under the lock. */
static int ensure_trace_locked(void)
{
	if (trace_state == TRACE_OPEN)
		return 1;
	if (trace_state == TRACE_FAILED)
		return 0;

	pid_t pid = getpid();
	__atomic_store_n(&trace_pid, pid, __ATOMIC_RELEASE);
	if (lw_config_trace_path(config, pid, trace_path,
				 sizeof(trace_path)) < 0) {
		trace_state = TRACE_FAILED;
		lw_warn_once(LW_WARN_TRACE_OPEN,
			     "LEAKWATCH_OUT gives a trace path that is too long;"
			     " nothing is recorded");
		return 0;
	}

	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t start_ns = (uint64_t)now.tv_sec * 1000000000ull +
			    (uint64_t)now.tv_nsec;
	int err = lw_writer_open(&writer, trace_path, sizeof(trace_path),
				 start_ns, (uint32_t)pid);
	if (err < 0) {
		trace_state = TRACE_FAILED;
		lw_warn_once(LW_WARN_TRACE_OPEN,
			     "cannot write the trace %s: %s; nothing is "
			     "recorded, the program runs as without leakwatch",
			     trace_path, strerror(-err));
		append_to_manifest(trace_path, 1);
		lw_events_emit(LW_EVENT_TRACE_FAILED,
			       &(struct lw_event){ .path = trace_path });
		return 0;
	}
	trace_state = TRACE_OPEN;
	trace_context_reset();
	write_process_info_locked();
	if (config->bounded)
		lw_writer_info(&writer, "trace_detail", "bounded", 7);
	else
		lw_writer_info(&writer, "trace_detail", "full", 4);
	record_warnings_locked();
	append_to_manifest(trace_path, 0);
	lw_events_emit(LW_EVENT_TRACE_OPENED,
		       &(struct lw_event){ .path = trace_path });
	return 1;
}

static void write_step_locked(enum lw_step_source source);
static void note_loop_locked(struct lw_stack_entry *s,
			     const void *const *py_frames);

/* Says once, on stderr and in the trace, that an RTLD_DEEPBIND load was
 * seen (resolve.c). At flushes: off the path of each event. */
static void note_deepbind_locked(void)
{
	if (!lw_deepbind_loaded() ||
	    (__atomic_load_n(&lw_warned_mask, __ATOMIC_ACQUIRE) &
	     (1u << LW_WARN_DEEPBIND)))
		return;
	lw_warn_once(LW_WARN_DEEPBIND,
		     "a library was loaded with RTLD_DEEPBIND: the CUDA calls "
		     "it binds to its own dependencies bypass leakwatch's "
		     "hooks, and the trace may miss their allocations");
	record_warnings_locked();
}

/* Says once per trace which CUDA runtimes calls went to, once there was
 * more than one (real.c). At flushes, as above. */

static void note_runtimes_locked(void)
{
	const char *list;

	if (tc.runtimes_in_trace || !(list = lw_real_runtimes()))
		return;
	lw_writer_info(&writer, "cudart_runtimes", list, strlen(list));
	tc.runtimes_in_trace = 1;
}

static void flush_locked(void)
{
	int err;

	note_deepbind_locked();
	note_runtimes_locked();
	err = lw_writer_flush(&writer);

	if (err < 0 && writer.descriptor_lost)
		lw_warn_once(LW_WARN_TRACE_WRITE,
			     "the program closed or replaced the descriptor of "
			     "the trace %s, which could not be opened again; "
			     "the trace ends here, the program carries on",
			     trace_path);
	else if (err < 0)
		lw_warn_once(LW_WARN_TRACE_WRITE,
			     "writing the trace %s failed: %s; the trace ends "
			     "here, the program carries on",
			     trace_path, strerror(-err));
	tc.last_flush_ns = coarse_now_ns();
}

/* The live view's growing sites (kept.h). Under the lock. */
static void growing_now(unsigned *sites, double *fastest)
{
	lw_kept_growing_now(tc.steps_written, sites, fastest);
}

static __attribute__((noinline)) void write_pending_steps_locked(void)
{
	unsigned n = __atomic_exchange_n(&optimizer_steps_pending, 0,
					 __ATOMIC_ACQ_REL);

	while (n-- && !__atomic_load_n(&explicit_steps, __ATOMIC_ACQUIRE))
		write_step_locked(LW_STEP_OPTIMIZER);
}

/*
 * Writes the optimizer steps that are pending, before the event that
 * follows them is taken into the live table: the event belongs to the
 * next step.
 */
static inline void take_pending_steps_locked(void)
{
	/* A load first: the exchange, a locked instruction, only when a step
	 * is actually pending (once per optimizer step, not per event). */
	if (__atomic_load_n(&optimizer_steps_pending, __ATOMIC_RELAXED))
		write_pending_steps_locked();
}

/* Ends the interval of a bounded trace: what it kept is written, in
 * order, before the record that follows. */
static void settle_locked(void)
{
	if (lw_bounded_on())
		lw_bounded_settle(device_live_bytes(), tc.torch_live_bytes);
}

/* The bounded trace could not note an event: it is full from here on. */
static void bounded_stopped_locked(void)
{
	if (lw_bounded_stopped_by_contexts())
		lw_warn_once(LW_WARN_BOUNDED_CONTEXTS,
			     "allocations on more than %u (API, device, "
			     "stream) contexts, the most a bounded trace tells "
			     "apart; the trace is written in full from here on",
			     (unsigned)LW_BOUNDED_CONTEXTS_MAX);
	else
		lw_warn_once(LW_WARN_OUT_OF_MEMORY,
			     "leakwatch's own memory is exhausted; the trace "
			     "is written in full from here on");
}

/* The live view's line now, with the trace's figures. */
static void live_now_locked(const char *lead)
{
	lw_events_emit(LW_EVENT_LIVE_NOW, &(struct lw_event){
		.lead = lead, .path = trace_path,
		.live_bytes = device_live_bytes(),
		.live_count = device_live_count(),
		.pool_allocated = tc.torch_live_bytes,
		.pool_reserved = lw_segments_live_bytes(),
		.growth = growing_now,
	});
}

/* SIGUSR2's request: the trace flushed, what is live printed. */
static __attribute__((noinline)) void answer_request_locked(void)
{
	lw_events_emit(LW_EVENT_REQUEST, &no_detail);
	settle_locked();
	flush_locked();
	live_now_locked("SIGUSR2: ");
}

/* What every event does besides its record: the live view's request,
 * the warnings to copy into the trace. */
static inline void note_requests_locked(void)
{
	if (requested) {
		requested = 0;
		answer_request_locked();
	}
	if (lw_warned_mask != tc.warnings_in_trace_mask)
		record_warnings_locked();
}

/* Writes THREAD and TIME records when they changed; flushes now and then
 * so that a killed process leaves a trace readable up to the last second. */
static void note_thread_and_time_locked(void)
{
	pid_t tid = current_tid();

	take_pending_steps_locked();
	if (tid != tc.last_tid) {
		lw_writer_tag_u64(&writer, LW_REC_THREAD, (uint64_t)tid);
		tc.last_tid = tid;
	}
	uint64_t now = coarse_now_ns();
	if (now != tc.last_time_ns) {
		lw_writer_tag_u64(&writer, LW_REC_TIME, now - tc.last_time_ns);
		tc.last_time_ns = now;
		if (now - tc.last_flush_ns >= FLUSH_INTERVAL_NS)
			flush_locked();
	}
	note_requests_locked();
}

/* Inlined: it runs on every allocation of a trace in full. */
static inline __attribute__((always_inline)) void
note_context_locked(enum lw_api api, int64_t device, uint64_t stream)
{
	if (api == tc.last_api && device == tc.last_device && stream == tc.last_stream)
		return;
	lw_writer_context(&writer, api, device, stream);
	tc.last_api = api;
	tc.last_device = device;
	tc.last_stream = stream;
	lw_bounded_context_written(api, device, stream);
}

static void bounded_context(unsigned api, int64_t device, uint64_t stream)
{
	note_context_locked((enum lw_api)api, device, stream);
}

/* ---- stacks ---- */

/*
 * Finds or adds the stack, making sure the objects its addresses lie in are
 * in the trace. Called and returns with the lock held, but drops it to
 * list the loaded objects (that takes the dynamic loader's lock, which a
 * thread inside dlopen() holds while it may call into a hook).
 */
static struct lw_stack_entry *intern_stack_locked(const uintptr_t *frames,
						  unsigned depth,
						  unsigned py_depth,
						  uint64_t native_hash,
						  int *is_new)
{
	uint64_t hash = lw_stacks_hash_from(native_hash, frames, depth,
					    py_depth);
	struct lw_stack_entry *s = lw_stacks_find(hash, frames, depth, py_depth);

	if (!s) {
		if (!lw_modules_cover(frames, depth)) {
			struct lw_module_scan scan;
			pthread_mutex_unlock(&lock);
			int err = lw_modules_scan(&scan);
			pthread_mutex_lock(&lock);
			if (err == 0 && trace_state == TRACE_OPEN)
				lw_modules_merge(&scan, &writer);
			lw_modules_scan_release(&scan);
		}
		s = lw_stacks_find(hash, frames, depth, py_depth);
		if (!s) {
			s = lw_stacks_add(hash, frames, depth, py_depth);
			*is_new = 1;
		}
		if (!s) {
			lw_warn_once(LW_WARN_OUT_OF_MEMORY,
				     "leakwatch's own memory is exhausted; "
				     "new call stacks are not recorded");
			return NULL;
		}
	}
	if (trace_state == TRACE_OPEN)
		lw_stacks_write(s, &writer, trace_gen);
	return s;
}

/* ---- allocations ---- */

static inline void account_live(const struct lw_live *e, int sign)
{
	uint64_t count = 1, bytes = e->size;

	if (sign < 0) {
		tc.live_bytes[e->kind] -= bytes;
		tc.live_count[e->kind] -= count;
	} else {
		tc.live_bytes[e->kind] += bytes;
		tc.live_count[e->kind] += count;
	}
	if ((e->flags & LW_LIVE_TORCH) && sign < 0)
		tc.torch_live_bytes -= bytes;
	else if (e->flags & LW_LIVE_TORCH)
		tc.torch_live_bytes += bytes;
	if (e->stack && lw_mem_kind_is_device(e->kind)) {
		if (sign < 0) {
			e->stack->device_live_bytes -= bytes;
			e->stack->device_live_count -= count;
		} else {
			e->stack->device_live_bytes += bytes;
			e->stack->device_live_count += count;
		}
		lw_kept_account(e->stack, e->step, tc.steps_written, bytes,
				sign);
	}
}

static struct lw_live *find_live_locked(uintptr_t addr)
{
	return lw_live_table_find(&tc.live, addr);
}

static void remove_live_locked(struct lw_live *e)
{
	account_live(e, -1);
	lw_live_table_remove(&tc.live, e);
}

/* Adds a live allocation made through api; NULL if leakwatch's memory is
 * exhausted. */
static struct lw_live *add_live_locked(uintptr_t addr, uint64_t size,
				       struct lw_stack_entry *stack,
				       unsigned kind, unsigned api)
{
	bool found;
	struct lw_live *e = lw_live_table_put(&tc.live, addr, &found);

	if (!e)
		return NULL;
	if (found) {
		/* Freed through a path leakwatch does not see. Made in the
		 * running interval of a bounded trace, it is written first,
		 * as made and never freed. */
		if (e->flags & LW_LIVE_PENDING)
			settle_locked();
		account_live(e, -1);
	}
	e->size = size;
	e->stack = stack;
	e->kind = (uint8_t)kind;
	/* An allocation in place of one never freed is written whole: the
	 * trace says the address was taken again. */
	e->flags = (uint8_t)((api == LW_API_TORCH_BLOCK ? LW_LIVE_TORCH : 0) |
			     (found ? LW_LIVE_KEEP : 0));
	e->step = tc.steps_written;
	e->phase = tc.phases_open ? (uint8_t)(1 + tc.phases_closed % 255) : 0;
	account_live(e, +1);
	return e;
}

/* Writes an ALLOC record where it happens (a trace in full). */
static void write_alloc_locked(unsigned kind, uintptr_t addr, uint64_t size,
			       struct lw_stack_entry *stack, enum lw_api api,
			       int64_t device, uint64_t stream)
{
	note_thread_and_time_locked();
	note_context_locked(api, device, stream);
	lw_writer_alloc(&writer, kind, addr, size, stack ? stack->id : 0);
	if (stack)
		stack->short_lived.announced |= (uint8_t)(1u << kind);
}

/*
 * Notes an allocation just added to the live table (e, NULL when it could
 * not be): in a bounded trace in the running interval, else in the trace
 * at once.
 */
static void record_live_locked(struct lw_live *e, unsigned kind,
			       uintptr_t addr, uint64_t size,
			       struct lw_stack_entry *stack, enum lw_api api,
			       int64_t device, uint64_t stream)
{
	if (lw_bounded_on()) {
		if (e && lw_bounded_alloc(e, api, device, stream,
					  device_live_bytes(),
					  tc.torch_live_bytes)) {
			note_requests_locked();
			return;
		}
		if (lw_bounded_on())
			lw_bounded_stop();
		bounded_stopped_locked();
	}
	write_alloc_locked(kind, addr, size, stack, api, device, stream);
}

/* Appends the calling thread's Python frames as (code, line << 1 | entry)
 * word pairs; returns how many frames. */
static unsigned capture_python(uintptr_t *out, const void **frames)
{
	struct lw_py_frame py[LW_MAX_PY_FRAMES];
	unsigned n = lw_py_capture(py, LW_MAX_PY_FRAMES);

	for (unsigned i = 0; i < n; i++) {
		frames[i] = py[i].frame;
		out[2 * i] = (uintptr_t)py[i].code;
		out[2 * i + 1] = ((uintptr_t)(uint32_t)(py[i].line + 1) << 1) |
				 py[i].entry;
	}
	return n;
}

/* The device is not asked for (a cudaGetDevice per allocation, for a
 * figure no report shows): CONTEXT says -1, unknown, unless the caller
 * was told it, as PyTorch's allocator hook is. */
void lw_record_alloc(enum lw_api api, enum lw_mem_kind kind, const void *ptr,
		     uint64_t size, uint64_t stream)
{
	lw_record_alloc_on(api, kind, ptr, size, stream, -1);
}

void lw_record_alloc_on(enum lw_api api, enum lw_mem_kind kind,
			const void *ptr, uint64_t size, uint64_t stream,
			int64_t device)
{
	uintptr_t frames[LW_MAX_FRAMES + 2 * LW_MAX_PY_FRAMES];
	const void *py_frames[LW_MAX_PY_FRAMES];
	unsigned depth, py_depth = 0, own_py_depth = 0;
	uint64_t native_hash;
	int new_stack = 0;

	if (!ptr)
		return;
	/* The expensive part, done before taking any lock. */
	depth = lw_unwind(frames, config->max_frames, &native_hash);
	if (python_frames) {
		py_depth = own_py_depth = capture_python(frames + depth,
							 py_frames);
		py_depth = lw_backward_attribute(frames, depth,
						 frames + depth, py_depth);
	}

	pthread_mutex_lock(&lock);
	if (!ensure_trace_locked())
		goto out;
	take_pending_steps_locked();
	struct lw_stack_entry *stack = intern_stack_locked(
		frames, depth, py_depth, native_hash, &new_stack);
	if (trace_state != TRACE_OPEN)
		goto out;
	/* The loop is looked for in the thread's own frames (an autograd
	 * thread's are its caller's, copied); a step it ends ends before
	 * this allocation, which begins the next iteration. */
	if (stack && own_py_depth && stack->py_depth == own_py_depth)
		note_loop_locked(stack, py_frames);
	struct lw_live *e = add_live_locked((uintptr_t)ptr, size, stack, kind,
					    api);

	tc.recent_api = api;
	tc.recent_device = device;
	tc.recent_stream = stream;
	if (!e) {
		lw_warn_once(LW_WARN_OUT_OF_MEMORY,
			     "leakwatch's own memory is exhausted; the exit "
			     "summary may miss allocations");
	}
	record_live_locked(e, kind, (uintptr_t)ptr, size, stack, api, device,
			   stream);

	/* A plain increment under the lock; an atomic store, because
	 * lw_allocation_counts() reads it without the lock. */
	__atomic_store_n(&tc.recorded_allocations, tc.recorded_allocations + 1,
			 __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&lock);
	/* A new stack had its code objects' names read: the first
	 * backward()'s _make_grads may have just become known. */
	if (new_stack && py_depth)
		lw_backward_attribute(frames, depth, frames + depth, py_depth);
	/* New code is running: torch may have been imported since the last
	 * try to register PyTorch's optimizer hook. */
	if (new_stack && python_process)
		lw_events_emit(LW_EVENT_NEW_CODE, &no_detail);
	lw_events_poll();
}

void lw_record_alloc_failed(enum lw_api api, enum lw_mem_kind kind,
			    uint64_t size, int error)
{
	uint8_t payload[4 * LW_VARINT_MAX];
	size_t n = 0;

	pthread_mutex_lock(&lock);
	if (!failed_allocations) {
		first_failed_api = api;
		first_failed_error = error;
	}
	__atomic_store_n(&failed_allocations, failed_allocations + 1,
			 __ATOMIC_RELAXED);
	if (!ensure_trace_locked())
		goto out;
	note_thread_and_time_locked();
	n += lw_varint_put(payload + n, api);
	n += lw_varint_put(payload + n, kind);
	n += lw_varint_put(payload + n, size);
	n += lw_varint_put(payload + n, (uint64_t)(unsigned)error);
	lw_writer_ext(&writer, LW_REC_ALLOC_FAILED, payload, n);
out:
	pthread_mutex_unlock(&lock);
}

void lw_allocation_counts(uint64_t *recorded, uint64_t *failed)
{
	/* Without the lock: called at exit, where a thread still inside a
	 * hook may hold it. */
	*recorded = __atomic_load_n(&tc.recorded_allocations, __ATOMIC_RELAXED);
	*failed = __atomic_load_n(&failed_allocations, __ATOMIC_RELAXED);
}

/* A SEGMENT (with size and device) or SEGMENT_FREE record. */
static void write_segment_locked(enum lw_record_tag tag, uintptr_t key,
				 uint64_t size, int64_t device)
{
	uint8_t payload[3 * LW_VARINT_MAX];
	size_t n = lw_varint_put(payload, key);

	if (tag == LW_REC_SEGMENT) {
		n += lw_varint_put(payload + n, size);
		n += lw_varint_put(payload + n, lw_zigzag_encode(device));
	}
	lw_writer_ext(&writer, tag, payload, n);
}

void lw_record_segment(const void *key, uint64_t size, int64_t device)
{
	if (!key)
		return;
	pthread_mutex_lock(&lock);
	if (ensure_trace_locked()) {
		if (lw_segments_add((uintptr_t)key, size) < 0)
			lw_warn_once(LW_WARN_OUT_OF_MEMORY,
				     "leakwatch's own memory is exhausted; "
				     "reserved memory may be misreported");
		note_thread_and_time_locked();
		write_segment_locked(LW_REC_SEGMENT, (uintptr_t)key, size,
				     device);
	}
	pthread_mutex_unlock(&lock);
}

void lw_record_oom(uint64_t size, uint64_t allocated, uint64_t reserved,
		   int64_t device)
{
	uint8_t payload[4 * LW_VARINT_MAX];
	size_t n = lw_varint_put(payload, size);

	n += lw_varint_put(payload + n, allocated);
	n += lw_varint_put(payload + n, reserved);
	n += lw_varint_put(payload + n, lw_zigzag_encode(device));
	pthread_mutex_lock(&lock);
	if (ensure_trace_locked()) {
		note_thread_and_time_locked();
		/* What was live at it, whole. */
		settle_locked();
		lw_writer_ext(&writer, LW_REC_OOM, payload, n);
		/* The process may die of it right away. */
		flush_locked();
	}
	pthread_mutex_unlock(&lock);
}

/* segments: ptr may be a segment of PyTorch's allocator (a free from
 * CUDA, not from the allocator's report of a block, which may start at
 * the same address). */
static void free_begin(const void *ptr, struct lw_pending_free *pending,
		       int segments)
{
	uintptr_t addr = (uintptr_t)ptr;
	struct lw_live *e;

	pending->addr = addr;
	pending->known = 0;
	pending->segment = 0;
	pthread_mutex_lock(&lock);
	if (trace_state == TRACE_OPEN)
		take_pending_steps_locked();
	if (trace_state == TRACE_OPEN && segments &&
	    lw_segments_remove(addr, &pending->size)) {
		/* A segment of PyTorch's caching allocator given back. */
		pending->known = 1;
		pending->segment = 1;
		note_thread_and_time_locked();
		write_segment_locked(LW_REC_SEGMENT_FREE, addr, 0, 0);
	} else if (trace_state == TRACE_OPEN) {
		e = find_live_locked(addr);
		if (e) {
			int noted = 0;

			pending->known = 1;
			pending->size = e->size;
			pending->stack = e->stack;
			pending->kind = e->kind;
			if (lw_bounded_on()) {
				noted = lw_bounded_free(e, tc.in_gc) >= 0;
				if (!noted)
					bounded_stopped_locked();
			}
			remove_live_locked(e);
			if (noted) {
				note_requests_locked();
			} else {
				note_thread_and_time_locked();
				lw_writer_free(&writer, addr);
			}
		}
	}
	pthread_mutex_unlock(&lock);
}

void lw_free_begin(const void *ptr, struct lw_pending_free *pending)
{
	free_begin(ptr, pending, 1);
}

void lw_record_block_free(const void *ptr)
{
	struct lw_pending_free pending;

	free_begin(ptr, &pending, 0);
	lw_free_end(&pending, 1);
}

void lw_free_end(struct lw_pending_free *pending, int succeeded)
{
	if (pending->known == !!succeeded)
		return; /* a known free that worked, an unknown one that failed */

	pthread_mutex_lock(&lock);
	if (trace_state != TRACE_OPEN)
		goto out;
	if (lw_bounded_on() && !pending->segment)
		take_pending_steps_locked();
	else
		note_thread_and_time_locked();
	if (pending->segment) {
		/* The real free failed: the segment is still reserved. */
		lw_segments_add(pending->addr, pending->size);
		write_segment_locked(LW_REC_SEGMENT, pending->addr,
				     pending->size, -1);
	} else if (succeeded) {
		/* Memory leakwatch never saw allocated (before tracing, or on
		 * a path it does not hook): the report counts it as unknown. */
		tc.unknown_frees++;
		if (lw_bounded_on()) {
			if (lw_bounded_unknown_free(pending->addr)) {
				note_requests_locked();
				goto out;
			}
			bounded_stopped_locked();
			note_thread_and_time_locked();
		}
		lw_writer_free(&writer, pending->addr);
	} else {
		/* The real free failed: the allocation is still live (made
		 * again now, as the trace says, in the context in force). */
		struct lw_stack_entry *stack = pending->stack;
		struct lw_live *e = add_live_locked(pending->addr,
						    pending->size, stack,
						    pending->kind,
						    tc.recent_api);

		if (lw_bounded_on()) {
			record_live_locked(e, pending->kind, pending->addr,
					   pending->size, stack, tc.recent_api,
					   tc.recent_device, tc.recent_stream);
		} else {
			lw_writer_alloc(&writer, pending->kind, pending->addr,
					pending->size, stack ? stack->id : 0);
			if (stack)
				stack->short_lived.announced |=
					(uint8_t)(1u << pending->kind);
		}
	}
out:
	pthread_mutex_unlock(&lock);
	lw_events_poll();
}

/* The holder searches made during the run, and their time (INFO
 * "holder_searches_in_run": "N T", T in seconds), for the cost's record. */
static void note_holder_searches_locked(void)
{
	unsigned searches;
	double seconds;
	char value[64];
	int n;

	searches = __atomic_load_n(&in_run_searches, __ATOMIC_RELAXED);
	seconds = in_run_seconds;
	if (!searches)
		return;
	n = snprintf(value, sizeof(value), "%u %.6f", searches, seconds);
	if (n > 0)
		lw_writer_info(&writer, "holder_searches_in_run", value,
			       (size_t)n);
}

/* leakwatch's own memory, at its most: what the trace cost the process. */
static void note_own_memory_locked(void)
{
	char value[32];
	int n = snprintf(value, sizeof(value), "%zu", lw_arena_peak_bytes());

	if (n > 0)
		lw_writer_info(&writer, "shim_memory", value, (size_t)n);
}

/* ---- steps and phases ---- */

/* No STEP record written so far can be void from now on. */
static void settle_steps_locked(void)
{
	if (tc.steps_settled)
		return;
	tc.steps_settled = true;
	lw_writer_info(&writer, "steps_settled", "1", 1);
}

/* The STEP records so far end no step: a source that outranks theirs,
 * or a loop that encloses the one they came from, gives the steps from
 * now on. The report leaves them out. */
static void void_first_steps_locked(uint32_t count)
{
	char n[16];
	int len;

	if (!count || tc.steps_settled)
		return;
	len = snprintf(n, sizeof(n), "%" PRIu32, count);
	lw_writer_info(&writer, "steps_void", n, (size_t)len);
}

static void void_steps_locked(void)
{
	void_first_steps_locked(tc.steps_written);
	tc.loop_prefix = 0;
}

static void write_step_locked(enum lw_step_source source)
{
	static const char *const names[] = {
		[LW_STEP_API] = "api", [LW_STEP_OPTIMIZER] = "optimizer",
		[LW_STEP_LOOP] = "loop", [LW_STEP_LINE] = "line",
	};

	settle_locked();
	/* Steps from a loop are the weakest: any other source's first
	 * step makes them void. */
	if (source != LW_STEP_LOOP &&
	    tc.step_source_in_trace == LW_STEP_LOOP)
		void_steps_locked();
	if (tc.where_due &&
	    (source == LW_STEP_LOOP || source == LW_STEP_LINE)) {
		lw_writer_info(&writer, "step_loop", tc.where,
			       strlen(tc.where));
		tc.where_due = false;
	}
	if (tc.step_source_in_trace != source) {
		lw_writer_info(&writer, "step_source", names[source],
			       strlen(names[source]));
		tc.step_source_in_trace = source;
	}
	lw_writer_tag(&writer, LW_REC_STEP);
	/* A stack that has grown long enough gets its holder searched for
	 * while it is alive (the program's own code may let go of it when a
	 * function returns); asked again at each step end until it runs. */
	if (tc.phase_search_at && tc.steps_written >= tc.phase_search_at) {
		tc.phase_search_at = 0;
		tc.phase_search_due = 1;
	}
	if (lw_kept_step_end(tc.steps_written, device_live_bytes()) ||
	    tc.phase_search_due)
		lw_events_emit(LW_EVENT_SEARCH_DUE, &no_detail);
	tc.steps_written++;
	if (source == LW_STEP_OPTIMIZER)
		tc.optimizer_steps_written++;
	/* The program's own marks are never void; an optimizer's once it
	 * stepped twice (one made anew each iteration steps once). */
	if (source == LW_STEP_API || source == LW_STEP_LINE ||
	    tc.optimizer_steps_written >= 2 ||
	    tc.steps_written >= LW_STEPS_VOID_MAX)
		settle_steps_locked();
	/* A bounded trace sums what its steps make and free from the
	 * first step's end on: the first step (the warm-up) is whole. */
	lw_bounded_steps_begin(device_live_bytes(), tc.torch_live_bytes);
	flush_locked();
	lw_events_emit(LW_EVENT_STEP_END, &(struct lw_event){
		.step_bytes = device_live_bytes() - lw_kept_step_input_bytes(),
		.live_bytes = device_live_bytes(),
		.live_count = device_live_count(),
		.pool_allocated = tc.torch_live_bytes,
		.pool_reserved = lw_segments_live_bytes(),
		.growth = growing_now,
	});
}

/* Where the loop (or the marked line) is, for the trace: from the
 * stack s, whose Python frame at index at is its. */
static void note_where_locked(const struct lw_stack_entry *s, unsigned at,
			      int line)
{
	uintptr_t code = s->frames[s->depth + 2 * at];
	const char *file = lw_stacks_code_file(s, code);
	const char *name = lw_stacks_code_name(s, code);

	snprintf(tc.where, sizeof(tc.where), "%s\t%d\t%s", file ? file : "",
		 line, name ? name : "");
	tc.where_due = true;
}

/* Writes the loop's steps not written yet, when its steps are the
 * trace's: the program marks none and no optimizer steps (or each of its
 * optimizers stepped once). */
static void write_loop_steps_locked(void)
{
	if (__atomic_load_n(&explicit_steps, __ATOMIC_ACQUIRE) ||
	    (tc.optimizer_steps_written &&
	     !__atomic_load_n(&optimizer_remade, __ATOMIC_ACQUIRE)))
		return;
	if (tc.loop_void_due ||
	    tc.step_source_in_trace == LW_STEP_OPTIMIZER)
		void_steps_locked();
	tc.loop_void_due = false;
	for (; tc.loop_steps_due; tc.loop_steps_due--) {
		/* The loop's functions have returned by now, and let go of
		 * what they held: the step counts, its memory does not. */
		if (tc.loop_steps_due == 1 && tc.loop_last_at_end)
			lw_writer_info(&writer, "step_at_program_end", "1", 1);
		write_step_locked(LW_STEP_LOOP);
		if (++tc.loop_steps >= tc.loop_steps_before && tc.loop_prefix) {
			void_first_steps_locked(tc.loop_prefix);
			tc.loop_prefix = 0;
		}
	}
	tc.loop_last_at_end = false;
}

/* LEAKWATCH_STEP_AT: a step each time the thread reaches the line: from
 * another, or again with its frame's locals bound anew (consecutive
 * allocations of one run of the line are one reach). */
static void note_step_line_locked(const struct lw_stack_entry *s,
				  const void *const *py_frames)
{
	int at = s->step_at >= 0;
	uint64_t locals = 0;

	if (at)
		locals = lw_py_locals_hash(
			py_frames[s->step_at],
			(const void *)s->frames[s->depth + 2 * s->step_at]);
	if (at && (!on_step_line || locals != step_line_locals)) {
		__atomic_store_n(&explicit_steps, 1, __ATOMIC_RELEASE);
		if (tc.step_source_in_trace != LW_STEP_LINE)
			note_where_locked(s, (unsigned)s->step_at,
					  config->step_at_line);
		write_step_locked(LW_STEP_LINE);
	}
	on_step_line = at;
	step_line_locals = locals;
}

/* What the allocation from stack s (with Python frames) says of the
 * steps: LEAKWATCH_STEP_AT's line, or the loop's iterations. */
static void note_loop_locked(struct lw_stack_entry *s,
			     const void *const *py_frames)
{
	const char *step_file = config->step_at_file[0] ? config->step_at_file
							: NULL;
	uint64_t locals[LW_LOOP_LEVELS];
	enum lw_loop_event event;

	lw_stacks_note_frames(s, step_file, config->step_at_line);
	if (step_file) {
		note_step_line_locked(s, py_frames);
		return;
	}
	for (unsigned i = 0; i < s->user_count; i++) {
		unsigned at = s->user_at[i];

		locals[i] = lw_py_locals_hash(
			py_frames[at], (const void *)s->frames[s->depth + 2 * at]);
	}
	event = lw_loop_note(s, locals);
	if (event == LW_LOOP_NONE)
		return;
	if (event == LW_LOOP_NEW || event == LW_LOOP_NEXT) {
		note_where_locked(s, s->user_at[lw_loop_level()],
				  lw_loop_line());
		if (event == LW_LOOP_NEW) {
			tc.loop_void_due = true;
			tc.loop_steps_due = 0;
			tc.loop_steps_before = 0;
		} else {
			tc.loop_prefix = tc.steps_written + tc.loop_steps_due;
			tc.loop_steps_before += tc.loop_steps;
		}
		tc.loop_steps = 0;
	}
	tc.loop_steps_due++;
	write_loop_steps_locked();
}

void lw_record_optimizer_remade(void)
{
	__atomic_store_n(&optimizer_remade, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&optimizer_steps_pending, 0, __ATOMIC_RELEASE);
}

void lw_record_step(enum lw_step_source source)
{
	if (source == LW_STEP_OPTIMIZER) {
		if (__atomic_load_n(&optimizer_remade, __ATOMIC_ACQUIRE))
			return;
		if (!__atomic_load_n(&explicit_steps, __ATOMIC_ACQUIRE))
			__atomic_add_fetch(&optimizer_steps_pending, 1,
					   __ATOMIC_ACQ_REL);
		return;
	}
	__atomic_store_n(&explicit_steps, 1, __ATOMIC_RELEASE);
	if (!lw_enter())
		return;
	pthread_mutex_lock(&lock);
	if (ensure_trace_locked()) {
		note_thread_and_time_locked();
		write_step_locked(source);
	}
	pthread_mutex_unlock(&lock);
	lw_events_poll();
	lw_leave();
}

void lw_record_phase_begin(const char *name)
{
	uint8_t payload[LW_VARINT_MAX];

	if (!lw_enter())
		return;
	if (!name)
		name = "(null)";
	pthread_mutex_lock(&lock);
	if (ensure_trace_locked()) {
		note_thread_and_time_locked();
		settle_locked();
		size_t n = lw_varint_put(payload, lw_strings_intern(
						  &writer, trace_gen, name));
		lw_writer_ext(&writer, LW_REC_PHASE_BEGIN, payload, n);
		tc.phases_open++;
		flush_locked();
	}
	pthread_mutex_unlock(&lock);
	lw_leave();
}

void lw_record_phase_end(void)
{
	if (!lw_enter())
		return;
	pthread_mutex_lock(&lock);
	if (ensure_trace_locked()) {
		note_thread_and_time_locked();
		settle_locked();
		lw_writer_tag(&writer, LW_REC_PHASE_END);
		if (tc.phases_open) {
			tc.phases_open--;
			tc.phases_closed++;
			/* What it made that is still live after min_steps
			 * steps is searched for its holder then. */
			if (!tc.phases_open)
				tc.phase_search_at = tc.steps_written +
						     config->min_steps;
		}
		flush_locked();
	}
	pthread_mutex_unlock(&lock);
	lw_leave();
}

/* The exit summary of the device memory live now is taken (when: a
 * literal). Under the lock. */
static void summarize_locked(const char *when)
{
	lw_events_emit(LW_EVENT_SUMMARY, &(struct lw_event){
		.lead = when, .path = trace_path,
		.live_bytes = device_live_bytes(),
		.live_count = device_live_count(),
		.unknown_frees = tc.unknown_frees,
		.steps = tc.steps_written,
	});
}

/* A GC mark in the interval of a bounded trace; false when the caller
 * writes it. */
static bool note_gc_mark_locked(enum lw_mark mark)
{
	if (!lw_bounded_on())
		return false;
	take_pending_steps_locked();
	if (!lw_bounded_gc_mark(mark)) {
		bounded_stopped_locked();
		return false;
	}
	note_requests_locked();
	return true;
}

void lw_record_mark(enum lw_mark mark)
{
	uint8_t payload[LW_VARINT_MAX];

	if (!lw_enter())
		return;
	pthread_mutex_lock(&lock);
	if (trace_state == TRACE_OPEN) {
		bool gc = mark == LW_MARK_GC_START || mark == LW_MARK_GC_STOP;

		if (gc)
			tc.in_gc = mark == LW_MARK_GC_START;
		/* A loop still running when the program's code finished
		 * ends its last step here. */
		if (mark == LW_MARK_PROGRAM_END && lw_loop_close()) {
			tc.loop_steps_due++;
			tc.loop_last_at_end = true;
			write_loop_steps_locked();
		}
		if (!gc || !note_gc_mark_locked(mark)) {
			note_thread_and_time_locked();
			settle_locked();
			size_t n = lw_varint_put(payload, mark);
			lw_writer_ext(&writer, LW_REC_MARK, payload, n);
		}
		if (mark == LW_MARK_GC_STOP) {
			tc.gc_passes++;
			tc.last_gc_step = tc.steps_written;
		}
		/* GC passes are frequent; only the program's end flushes. */
		if (mark == LW_MARK_PROGRAM_END) {
			tc.code_finished = true;
			flush_locked();
		}
		if (mark == LW_MARK_PROGRAM_END && !config->quiet) {
			summarize_locked("when the program's code finished");
			tc.have_program_end_summary = 1;
		}
	}
	pthread_mutex_unlock(&lock);
	lw_leave();
}

/*
 * Whether a live allocation is searched for during the run: what a
 * stack asked for kept (kept.h), or what a phase that ended a while ago
 * left live.
 */
static int wanted_target(const struct lw_live *e)
{
	uint8_t want = e->stack ? e->stack->kept.wanted : 0;

	if (tc.phase_search_due && e->phase &&
	    e->phase != 1 + tc.phases_closed % 255)
		return 1;
	if (e->step < 1 || e->step >= tc.steps_written)
		return 0;
	/* With a growth asked for, what else survived two step ends: its
	 * holder may be the growth's (a kept graph's saved inputs). */
	if (lw_kept_growth_asked() && e->step + 1 < tc.steps_written)
		return 1;
	/* What grows: survivors of two step ends (the last step's tensors
	 * are still in the loop's variables, loss and outputs, as the
	 * next step begins: no leak). What lingers: of one. */
	return ((want & LW_KEPT_WANT_GROWTH) &&
		e->step + 1 < tc.steps_written) ||
	       (want & (LW_KEPT_WANT_LINGER | LW_KEPT_WANT_SIZE));
}

size_t lw_holder_targets(uint64_t *pairs, size_t max, int wanted_only)
{
	size_t n = 0;

	pthread_mutex_lock(&lock);
	/* A search begins: its HOLDER records follow what happened before. */
	if (pairs && trace_state == TRACE_OPEN)
		settle_locked();
	for (size_t i = 0; i < lw_addr_table_slots(&tc.live); i++) {
		const struct lw_live *e = lw_live_table_slot(&tc.live, i);

		/* Device memory that outlived the step that made it (what
		 * the first step set up, weights and optimizer state, is not
		 * a suspect, nor what the unfinished step is using now, until
		 * the program's code has finished: then what the last step
		 * made after its mark is what the program kept), or the
		 * phase that made it. */
		if (!e || !lw_mem_kind_is_device(e->kind))
			continue;
		if ((e->step < 1 ||
		     (e->step >= tc.steps_written && !tc.code_finished)) &&
		    (!e->phase || e->phase == 1 + tc.phases_closed % 255))
			continue;
		if (wanted_only && !wanted_target(e))
			continue;
		if (n < max) {
			pairs[2 * n] = e->addr;
			pairs[2 * n + 1] = e->size;
		}
		n++;
	}
	/* Asked for and served: by this search, or by none when what was
	 * asked for is gone (else every step end would ask again). */
	if (wanted_only && (pairs || n == 0)) {
		lw_kept_clear_wanted();
		tc.phase_search_due = 0;
	}
	pthread_mutex_unlock(&lock);
	return n;
}

void lw_record_searches_in_run(unsigned searches, double seconds)
{
	in_run_seconds = seconds;
	__atomic_store_n(&in_run_searches, searches, __ATOMIC_RELAXED);
}

void lw_record_request(void)
{
	requested = 1;
}

bool lw_holders_first_of_its_reason(void)
{
	bool first;

	pthread_mutex_lock(&lock);
	first = lw_kept_first_of_its_reason();
	pthread_mutex_unlock(&lock);
	return first;
}

int64_t lw_steps_since_gc(void)
{
	int64_t steps = -1;

	pthread_mutex_lock(&lock);
	if (tc.gc_passes)
		steps = (int64_t)tc.steps_written - (int64_t)tc.last_gc_step;
	pthread_mutex_unlock(&lock);
	return steps;
}

void lw_record_holder(uint64_t address, const char *path, const char *root,
		      uint64_t objects, uint64_t graph_nodes, unsigned flags)
{
	uint8_t payload[6 * LW_VARINT_MAX];
	size_t n;

	pthread_mutex_lock(&lock);
	if (trace_state == TRACE_OPEN) {
		note_thread_and_time_locked();
		n = lw_varint_put(payload, address);
		n += lw_varint_put(payload + n, lw_strings_intern(
					   &writer, trace_gen, path));
		n += lw_varint_put(payload + n, lw_strings_intern(
					   &writer, trace_gen, root));
		n += lw_varint_put(payload + n, objects);
		n += lw_varint_put(payload + n, graph_nodes);
		n += lw_varint_put(payload + n, flags);
		lw_writer_ext(&writer, LW_REC_HOLDER, payload, n);
		flush_locked();
	}
	pthread_mutex_unlock(&lock);
}

void lw_record_source(const char *name, const char *text, size_t len)
{
	char key[PATH_MAX];
	uint64_t h;
	unsigned i;

	if (snprintf(key, sizeof(key), "%s%s", LW_CELL_SOURCE_KEY, name) >=
	    (int)sizeof(key))
		return;
	/* Its own seed; compared within this run only. */
	h = lw_fnv1a_str(1469598103934665603ull, name) ^ len;
	pthread_mutex_lock(&lock);
	for (i = 0; i < tc.cells_written_count && tc.cells_written[i] != h; i++)
		;
	if (trace_state == TRACE_OPEN && i == tc.cells_written_count &&
	    i < LW_CELLS_WRITTEN_MAX) {
		tc.cells_written[tc.cells_written_count++] = h;
		lw_writer_info(&writer, key, text, len);
		flush_locked();
	}
	pthread_mutex_unlock(&lock);
}

int lw_record_pypath(unsigned kind, const char *path, const char *name)
{
	uint8_t payload[3 * LW_VARINT_MAX];
	size_t n;
	int rc = -1;

	pthread_mutex_lock(&lock);
	if (trace_state == TRACE_OPEN) {
		n = lw_varint_put(payload, kind);
		n += lw_varint_put(payload + n, lw_strings_intern(
					   &writer, trace_gen, path));
		n += lw_varint_put(payload + n, name[0] ? lw_strings_intern(
					   &writer, trace_gen, name) : 0);
		lw_writer_ext(&writer, LW_REC_PYPATH, payload, n);
		rc = 0;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

int lw_device_live(uint64_t *bytes, uint64_t *count)
{
	int rc = -1;

	lw_init();
	if (__atomic_load_n(&lw_state, __ATOMIC_ACQUIRE) != LW_STATE_ACTIVE)
		return -1;
	pthread_mutex_lock(&lock);
	if (trace_state != TRACE_FAILED) {
		*bytes = device_live_bytes();
		*count = device_live_count();
		rc = 0;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

int lw_snapshot_taken(char *path, size_t path_size, struct lw_snapshot *out)
{
	int rc = -1;

	lw_init();
	if (__atomic_load_n(&lw_state, __ATOMIC_ACQUIRE) != LW_STATE_ACTIVE)
		return -1;
	pthread_mutex_lock(&lock);
	if (trace_state == TRACE_OPEN) {
		/* The steps the program ended so far are its steps now. */
		take_pending_steps_locked();
		settle_locked();
		flush_locked();
		out->steps = tc.steps_written;
		out->live_bytes = device_live_bytes();
		out->live_count = device_live_count();
		growing_now(&out->growing_sites, &out->fastest);
		if (path && path_size)
			snprintf(path, path_size, "%s", trace_path);
		live_now_locked("snapshot: ");
		rc = 0;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

/* ---- process life (process.c) ---- */

void lw_tracker_start(const struct lw_config *c, enum lw_py_status py)
{
	config = c;
	python_process = py != LW_PY_NOT_PYTHON;
	python_frames = py == LW_PY_SUPPORTED;
}

void lw_tracker_flush_before_exec(void)
{
	/* getpid() asks the kernel: a vfork() child gets its own pid, not
	 * the one of the process whose trace this memory describes. */
	if (getpid() != __atomic_load_n(&trace_pid, __ATOMIC_ACQUIRE))
		return;
	if (pthread_mutex_trylock(&lock) == 0) {
		if (trace_state == TRACE_OPEN) {
			settle_locked();
			flush_locked();
		}
		pthread_mutex_unlock(&lock);
	}
}

void lw_tracker_flush_at_end(void)
{
	const struct timespec pause = { 0, 1000000 };

	/* A vfork() child: this memory is its parent's (see above). */
	if (getpid() != __atomic_load_n(&trace_pid, __ATOMIC_ACQUIRE))
		return;
	/* Inside a hook this thread may hold the lock itself, and then
	 * waiting is for nothing: a short wait, for another thread. */
	int limit = lw_in_hook ? 10 : 200;

	for (int waited = 0; pthread_mutex_trylock(&lock) != 0; waited++) {
		if (waited == limit)
			return;
		nanosleep(&pause, NULL);
	}
	if (trace_state == TRACE_OPEN) {
		settle_locked();
		lw_writer_flush(&writer);
	}
	pthread_mutex_unlock(&lock);
}

void lw_tracker_before_fork(void)
{
	pthread_mutex_lock(&lock);
}

void lw_tracker_after_fork_in_parent(void)
{
	pthread_mutex_unlock(&lock);
}

void lw_tracker_after_fork_in_child(void)
{
	thread_id = 0;
	if (trace_state == TRACE_OPEN)
		lw_writer_abandon(&writer);
	trace_state = TRACE_NONE;
	trace_gen++;
	/* The parent's allocations are not the child's; its stack, code and
	 * string ids start again at 1 in the child's trace. */
	trace_context_reset();
	failed_allocations = 0;
	requested = 0;
	lw_segments_reset();
	lw_backward_reset();
	lw_stacks_reset();
	lw_loop_reset();
	lw_modules_reset();
	lw_events_emit(LW_EVENT_FORK_CHILD, &no_detail);
	pthread_mutex_unlock(&lock);
}

void lw_shutdown(void)
{
	struct lw_event said = { 0 };
	int have_summary = 0;

	if (__atomic_load_n(&lw_state, __ATOMIC_ACQUIRE) != LW_STATE_ACTIVE)
		return;
	lw_in_hook = 1;
	pthread_mutex_lock(&lock);
	if (trace_state == TRACE_OPEN) {
		note_thread_and_time_locked();
		settle_locked();
		note_deepbind_locked();
		note_runtimes_locked();
		note_holder_searches_locked();
		note_own_memory_locked();
		lw_writer_close(&writer, 1, 0);
		if (tc.have_program_end_summary) {
			/* In a Python program, what its code left allocated;
			 * finalization frees much of it afterwards: the
			 * summary taken then is the one said. */
			have_summary = 1;
		} else if (!config->quiet) {
			summarize_locked("at exit");
			have_summary = 1;
		}
		trace_state = TRACE_FAILED; /* nothing more is written */
		if (have_summary) {
			said.failed_allocations = failed_allocations;
			said.failed_api = lw_api_name(first_failed_api);
			said.failed_error = first_failed_error;
			said.lost_events = writer.lost;
			said.descriptor_lost = writer.descriptor_lost;
		}
	}
	__atomic_store_n(&lw_state, LW_STATE_CLOSED, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
	if (have_summary)
		lw_events_emit(LW_EVENT_EXIT, &said);
	lw_in_hook = 0;
}
