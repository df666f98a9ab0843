/* SPDX-License-Identifier: MIT */
/*
 * The leakwatch trace format, version 1.
 *
 * A trace is a fixed 32-byte header followed by a stream of records. Every
 * integer in a record is an unsigned LEB128 varint unless stated otherwise;
 * "zvarint" is a zigzag-encoded signed varint; "string" is a varint length
 * followed by that many bytes (UTF-8, not NUL-terminated).
 *
 * Header (little-endian):
 *   0  u8[8]  magic   "\x89LWTRACE" (LW_TRACE_MAGIC)
 *   8  u16    version (LW_TRACE_VERSION); a reader rejects a newer major one
 *   10 u16    header size in bytes (32); records start there
 *   12 u32    flags (enum lw_trace_flags; readers ignore those they do not
 *             know)
 *   16 u64    wall-clock start time, ns since the Unix epoch
 *   24 u32    pid of the writing process
 *   28 u32    reserved, zero
 *
 * Records begin with one tag byte.
 *
 * Hot records (tags 0x01..0x3f) have a fixed field list and no length, so
 * that an allocation costs a handful of bytes. A reader that meets a hot tag
 * it does not know cannot continue: that is corruption, or a trace from a
 * newer major version.
 *
 * Extension records (tags 0x40..0xff) are followed by a varint payload
 * length, so a reader skips the ones it does not know. New kinds of
 * information are added as extension records without a version change.
 *
 * Addresses in ALLOC, REALLOC-like and FREE records are delta-coded against
 * the previous address written in the trace (any of those records), starting
 * from 0: zvarint(addr - prev_addr). Stack frames are delta-coded against
 * the previous frame of the same stack, starting from 0.
 *
 * A trace that was closed cleanly ends with an END record; one without it
 * was cut short (killed, crashed or still running) and is readable up to its
 * last complete record.
 *
 * Bounded traces (INFO "trace_detail" "bounded", the shim's default). From
 * the first STEP record on, the writer keeps what happens between two
 * boundaries (the span it calls an interval) and writes it when the
 * interval ends: at a STEP, PHASE_BEGIN, PHASE_END, OOM or PROGRAM_END
 * mark, before HOLDER records, and when the trace is flushed on request or
 * as the process ends. What an interval kept is written in full and in its
 * order: the ALLOC of each allocation still live at the interval's end,
 * every FREE of an allocation made before the interval, the GC marks with
 * a record between them, and the first allocation of each stack and kind
 * and in each CONTEXT, freed or not. What it made and freed otherwise is
 * summed per stack in one SHORT_LIVED record, which ends the interval's
 * records (it is left out when the interval saw no allocation, free or
 * GC mark). The ALLOC records of an interval are written together at its
 * end: THREAD and TIME records do not apply to them. A reader that skips
 * SHORT_LIVED reads the trace as one whose short-lived allocations were
 * never made: what survives each step, growth, leaks and holders read the
 * same; counts of allocations, and peaks, come out lower.
 *
 * No record is longer than LW_TRACE_RECORD_MAX bytes, tag and length
 * included: a writer writes whole records from a buffer of that size, so a
 * longer declared length is damage, not a record cut by the end of the file.
 *
 * Blocks and checksums (LW_TRACE_FLAG_CHECKSUMS). The writer writes its
 * buffer a block at a time, each block led by a CHECKSUM record that gives
 * the block's length and a hash of its bytes (common/lw-checksum.h), chained:
 * the first block's hash continues from the hash of the header, every other
 * one from the hash its predecessor's CHECKSUM record holds, so that a block
 * changed, lost or moved is seen. The first record after the header is a
 * CHECKSUM record, each block ends where the next CHECKSUM record starts,
 * and no record spans two blocks. A reader checks a block before it reads
 * it: a block that fails its checksum is damage, and what came before it
 * is still sound. A file that ends inside a block was cut by a write that
 * stopped part-way (a full disk, a file size limit) or is still being
 * written. Older readers skip CHECKSUM records and ignore the flag.
 */
#ifndef LW_FORMAT_H
#define LW_FORMAT_H

#include <stdint.h>

#define LW_TRACE_MAGIC "\x89LWTRACE"
#define LW_TRACE_MAGIC_SIZE 8
#define LW_TRACE_VERSION 1
#define LW_TRACE_HEADER_SIZE 32
/* The longest record, and the longest block of a checksummed trace. */
#define LW_TRACE_RECORD_MAX (64 * 1024)

enum lw_trace_flags {
	/* The trace's blocks carry CHECKSUM records (see above). */
	LW_TRACE_FLAG_CHECKSUMS = 1,
};

/* The kind of memory an allocation is. */
enum lw_mem_kind {
	LW_MEM_DEVICE = 1,          /* cudaMalloc, cudaMallocAsync, ... */
	LW_MEM_MANAGED = 2,         /* cudaMallocManaged */
	LW_MEM_PINNED_HOST = 3,     /* cudaMallocHost, cudaHostAlloc */
	LW_MEM_HOST_REGISTERED = 4, /* cudaHostRegister of the caller's memory */
	LW_MEM_KIND_MAX = 4,
};

/* Memory on the device: what growth, leaks and holders are judged on. */
static inline int lw_mem_kind_is_device(unsigned kind)
{
	return kind == LW_MEM_DEVICE || kind == LW_MEM_MANAGED;
}

/* The API entry point that made an allocation (in CONTEXT records). */
enum lw_api {
	LW_API_UNKNOWN = 0,
	LW_API_CUDA_MALLOC = 1,
	LW_API_CUDA_MALLOC_ASYNC = 2,
	LW_API_CUDA_MALLOC_FROM_POOL_ASYNC = 3,
	LW_API_CUDA_MALLOC_MANAGED = 4,
	LW_API_CUDA_MALLOC_PITCH = 5,
	LW_API_CUDA_MALLOC_3D = 6,
	LW_API_CUDA_MALLOC_HOST = 7,
	LW_API_CUDA_HOST_ALLOC = 8,
	LW_API_CUDA_HOST_REGISTER = 9,
	LW_API_CU_MEM_ALLOC = 10,               /* cuMemAlloc_v2 */
	LW_API_CU_MEM_ALLOC_PITCH = 11,         /* cuMemAllocPitch_v2 */
	LW_API_CU_MEM_ALLOC_MANAGED = 12,
	LW_API_CU_MEM_ALLOC_HOST = 13,          /* cuMemAllocHost_v2 */
	LW_API_CU_MEM_HOST_ALLOC = 14,
	LW_API_CU_MEM_ALLOC_ASYNC = 15,
	LW_API_CU_MEM_ALLOC_FROM_POOL_ASYNC = 16,
	/* cuMemCreate: physical memory, keyed by its handle, not an address;
	 * cuMemRelease frees it. Mappings are not recorded. */
	LW_API_CU_MEM_CREATE = 17,
	/* A block (tensor) that PyTorch's native caching allocator handed
	 * out, seen at its c10::reportMemoryUsageToProfiler call; its memory
	 * lies inside a SEGMENT. */
	LW_API_TORCH_BLOCK = 18,
	LW_API_MAX = 18,
};

enum lw_record_tag {
	/*
	 * ALLOC_<kind>: zvarint addr delta, varint size, varint stack id.
	 * The tag is LW_REC_ALLOC_BASE + enum lw_mem_kind. Stack id 0 means
	 * "no stack captured".
	 */
	LW_REC_ALLOC_BASE = 0x00,
	LW_REC_ALLOC_DEVICE = 0x01,
	LW_REC_ALLOC_MANAGED = 0x02,
	LW_REC_ALLOC_PINNED_HOST = 0x03,
	LW_REC_ALLOC_HOST_REGISTERED = 0x04,
	/* FREE: zvarint addr delta. A free of an address not live in the trace
	 * is an unknown free (allocated before tracing, or elsewhere). */
	LW_REC_FREE = 0x08,
	/* STEP: no fields. The end of one training step. */
	LW_REC_STEP = 0x09,
	/* PHASE_END: no fields. Ends the innermost open phase. */
	LW_REC_PHASE_END = 0x0a,
	/* TIME: varint ns since the previous TIME record (or since the header's
	 * start time). Written when the coarse clock moved, not per event. */
	LW_REC_TIME = 0x0b,
	/* THREAD: varint kernel thread id of the records that follow. */
	LW_REC_THREAD = 0x0c,
	/* CONTEXT: varint enum lw_api, zvarint device (-1 unknown), varint stream
	 * handle (0 = legacy default stream). Applies to the ALLOC records that
	 * follow; written only when it changes. */
	LW_REC_CONTEXT = 0x0d,
	LW_REC_HOT_MAX = 0x3f,

	/* Extension records: tag, varint payload length, payload. */
	LW_REC_EXT_MIN = 0x40,
	/* STACK: varint id (ids start at 1, dense), varint frame count, then per
	 * frame zvarint delta of the return address (innermost frame first; the
	 * first frame is the caller of the CUDA entry point). */
	LW_REC_STACK = 0x40,
	/* MODULE: varint load bias, varint start address, varint end address,
	 * string path; then optionally string build-id (raw bytes). */
	LW_REC_MODULE = 0x41,
	/* STRING: varint id (ids start at 1), bytes to the end of the payload. */
	LW_REC_STRING = 0x42,
	/* PHASE_BEGIN: varint string id of the phase name. */
	LW_REC_PHASE_BEGIN = 0x43,
	/* INFO: string key, string value. Keys: "exe", "cmdline" (arguments
	 * separated by NUL; this shim writes at most 32 KiB, and a longer
	 * command line is cut after an argument and ends with one more,
	 * "[cut by leakwatch: ...]"), "cwd", "leakwatch", "cudart" (the runtime's path),
	 * "python" (the CPython version, when Python frames are recorded),
	 * "python_eval" (then also: the address of the interpreter's
	 * evaluation loop, "0x..."; the module that holds it is the
	 * interpreter's, whose frames a report folds),
	 * "step_source" ("api", "optimizer", "loop" or "line": where the
	 * STEP records that follow come from), "step_loop" (the loop they
	 * come from, or LEAKWATCH_STEP_AT's line: "file\tline\tfunction"),
	 * "steps_void" (a decimal count: the trace's first STEP records that
	 * end no step, taken before a source that outranks them, or an
	 * enclosing loop, was seen; never after LW_STEPS_VOID_MAX STEP
	 * records, and never after "steps_settled", which says none comes),
	 * "step_at_program_end" (the STEP record that follows ends the
	 * loop's last iteration when the program's code finished: a step
	 * counted, after the memory of its functions was let go),
	 * "torch_alloc_conf" (the PyTorch allocator
	 * configuration in effect at start, possibly empty) and
	 * "torch_alloc_conf_source" ("leakwatch": the shim selected it;
	 * "user": the user's PYTORCH_CUDA_ALLOC_CONF or PYTORCH_ALLOC_CONF;
	 * "no_caching": PYTORCH_NO_CUDA_MEMORY_CACHING is set; "kept": none
	 * set, and the user asked leakwatch to leave it so),
	 * "trace_detail" ("full": every allocation and free is written;
	 * "bounded": see bounded traces above), "source:NAME" (the text of
	 * the notebook cell whose code is named NAME, lw-cells.h, as the
	 * interpreter's linecache holds it, written at the holder searches
	 * of the whole heap), and as the trace closes
	 * "holder_searches_in_run" (the holder searches the shim ran during
	 * the run and the seconds they took, "N S") and "shim_memory" (the
	 * most memory, in bytes, the shim held for itself). */
	LW_REC_INFO = 0x44,
#define LW_STEPS_VOID_MAX 256
	/* WARNING: the text of a warning the shim printed (once). */
	LW_REC_WARNING = 0x45,
	/* END: varint number of events written (ALLOC, FREE, STEP and
	 * PHASE_END records; not what SHORT_LIVED records stand for: a
	 * reader checks it against what it read),
	 * varint events dropped. */
	LW_REC_END = 0x46,
	/* DROPPED: varint number of events that could not be recorded since the
	 * previous DROPPED record. Read, for a writer that would drop events
	 * while its trace is writable; this shim never does (it records every
	 * event or stops for good when a write fails, and then counts what the
	 * trace lacks on stderr at exit), so its END says 0. */
	LW_REC_DROPPED = 0x47,
	/* PYCODE: a Python code object, written before the first PYSTACK that
	 * uses it: varint code id (ids start at 1), varint file-name string
	 * id, varint qualified-name string id, varint first line. */
	LW_REC_PYCODE = 0x48,
	/* PYSTACK: the Python frames of a stack, written right after its
	 * STACK record: varint stack id, varint frame count, then per frame
	 * (innermost first) varint code id and varint ((line + 1) << 1 |
	 * entry), line -1 meaning unknown and entry set on the frame where
	 * an evaluation-loop activation was entered from C; then varint count
	 * of evaluation-loop native frames and, ascending, the index of each
	 * in the STACK's frames. A reader merges them: the Python frames up to
	 * and including each entry frame take the place of the corresponding
	 * evaluation-loop frame, in order. When the counts of activations and
	 * evaluation frames differ, it puts all Python frames innermost. */
	LW_REC_PYSTACK = 0x49,
	/* MARK: varint enum lw_mark, then nothing defined yet. */
	LW_REC_MARK = 0x4a,
	/* ALLOC_FAILED: an allocation call that returned an error: varint
	 * enum lw_api, varint enum lw_mem_kind, varint size asked for, varint
	 * error code (the API's own: cudaError_t for the runtime's functions,
	 * CUresult for the driver's). Older readers skip it. */
	LW_REC_ALLOC_FAILED = 0x4b,
	/* SEGMENT: memory a caching allocator reserved for itself (PyTorch's
	 * native allocator's cudaMalloc, or cuMemCreate of its expandable
	 * segments, keyed by the handle): varint address or handle, varint
	 * size, zvarint device. Not an allocation of the program: the blocks
	 * handed out of it are the ALLOC records with CONTEXT api
	 * LW_API_TORCH_BLOCK. Older readers skip it. */
	LW_REC_SEGMENT = 0x4c,
	/* SEGMENT_FREE: varint address or handle of a SEGMENT given back. */
	LW_REC_SEGMENT_FREE = 0x4d,
	/* OOM: PyTorch's allocator could not satisfy a request (its
	 * c10::reportOutOfMemoryToProfiler call): varint bytes requested,
	 * varint bytes allocated, varint bytes reserved (its own counters),
	 * zvarint device. The writer flushes right after it. */
	LW_REC_OOM = 0x4e,
	/* HOLDER: a live object of the program that keeps the allocation
	 * at an address alive, found by the holder search (who holds it):
	 * varint address, varint path string id (the reference path as the
	 * program would write it), varint root string id (where the path
	 * starts: "global of MODULE", "local of FUNCTION (FILE:LINE)"),
	 * varint objects found through the same holder, varint autograd
	 * graph nodes kept behind it, varint enum lw_holder_flags. Written
	 * at the report point, and during the run for the stacks that grow
	 * (the holder of memory a function lets go of when it returns).
	 * Older readers skip it. */
	LW_REC_HOLDER = 0x4f,
	/* CHECKSUM: leads each block of a trace with LW_TRACE_FLAG_CHECKSUMS:
	 * a payload of LW_CHECKSUM_PAYLOAD bytes, u32 little-endian length of
	 * the block that follows the record, u64 little-endian lw_checksum()
	 * of the block's bytes, continued from the previous block's hash (for
	 * the first block, from lw_checksum(0, header, header size)). */
	LW_REC_CHECKSUM = 0x50,
	/* PYPATH: a fact of the Python interpreter about where the
	 * program's code is imported from, for telling the user's code from
	 * libraries: varint enum lw_pypath_kind, varint path string id (an
	 * absolute path, as the interpreter spells it), varint name string
	 * id (0: none; see the kinds). Written once the first Python stack
	 * is seen and again at the program's end (each fact once per
	 * trace). Older readers skip it. */
	LW_REC_PYPATH = 0x51,
	/*
	 * SHORT_LIVED: the end of an interval of a bounded trace (see
	 * above). Fields: varint peak, the most device memory (device and
	 * managed kinds) live in the interval, what was live when it began
	 * included; varint after_peak, how many of the interval's ALLOC
	 * and FREE records (those since the previous boundary, right
	 * before this one) came after that peak was first reached; varint
	 * torch_peak, the most that ALLOC records under CONTEXT api
	 * LW_API_TORCH_BLOCK held live in it; varint gc_passes, passes of
	 * the cycle collector in it whose GC marks were left out (nothing
	 * was written between them); varint summed (1: the entries kept
	 * below count for this interval; 0: they do not, because the
	 * interval freed nothing it made, or because the record only
	 * carries changes, for a list too long for one record: the last
	 * record of the interval follows); varint change count, then per
	 * change: zvarint stack id (delta against the previous change's,
	 * from 0), varint enum lw_mem_kind, varint enum lw_api, zvarint
	 * device, varint stream, varint count, varint bytes, varint
	 * gc_count, varint gc_bytes.
	 *
	 * A reader keeps, per stack, the change last written for it (count
	 * 0 drops it). At each summed SHORT_LIVED, once its changes are
	 * taken, each stack kept made count allocations of that kind in
	 * that context (api, device, stream), bytes in all, in the
	 * interval, and freed them in it, gc_count of them (gc_bytes)
	 * inside a pass of the collector. A loop whose steps make the same
	 * writes no change. Its stacks and kinds have had an ALLOC record
	 * before, and its contexts a CONTEXT record. Older readers skip it.
	 */
	LW_REC_SHORT_LIVED = 0x52,
};

/* What a PYPATH record's path is. */
enum lw_pypath_kind {
	/* The standard library: sysconfig's stdlib and platstdlib, the
	 * directory of os.py, and the sys.path entries inside them. */
	LW_PYPATH_STDLIB = 1,
	/* A site-packages directory: site.getsitepackages() (of
	 * site.PREFIXES), sysconfig's purelib and platlib, and the
	 * site-packages and dist-packages entries of sys.path under a
	 * prefix. */
	LW_PYPATH_SITE = 2,
	/* The user's site-packages, site.getusersitepackages(). */
	LW_PYPATH_USER_SITE = 3,
	/* A sys.path entry that came from PYTHONPATH. */
	LW_PYPATH_PYTHONPATH = 4,
	/* A directory a .pth file of a site directory adds to sys.path;
	 * name: the .pth file's name. */
	LW_PYPATH_PTH = 5,
	/* An editable install's source: a directory a setuptools
	 * __editable__*.pth file adds (name: the file's name), or an entry
	 * of the MAPPING of an __editable___*_finder module (name: the
	 * package, path: its directory or file). */
	LW_PYPATH_EDITABLE = 6,
	/* A sys.path entry that holds installed distributions (*.dist-info),
	 * as `pip install --target` makes. */
	LW_PYPATH_INSTALLED = 7,
	/* Any other sys.path entry: the script's directory, the working
	 * directory ("" in sys.path), or one the program added. */
	LW_PYPATH_SYS_PATH = 8,
	/* The main script, __main__.__file__ (a file). */
	LW_PYPATH_SCRIPT = 9,
	/* The working directory. */
	LW_PYPATH_CWD = 10,
	/* The root of the version-controlled tree (.git, .hg, .svn) that
	 * holds the script's directory (name "script") or the working
	 * directory (name "cwd"); never / nor the home directory. */
	LW_PYPATH_PROJECT = 11,
	/* The interpreter's scripts directory (console-script launchers:
	 * pytest, torchrun): sysconfig's scripts, the interpreter's own, the
	 * bin beside a site directory's lib (/usr/local/bin, ~/.local/bin). */
	LW_PYPATH_SCRIPTS = 12,
	LW_PYPATH_KIND_MAX = 12,
};

#define LW_CHECKSUM_PAYLOAD 12
#define LW_CHECKSUM_RECORD_SIZE (2 + LW_CHECKSUM_PAYLOAD)

enum lw_holder_flags {
	/* The search ran out of its time budget: more may hold it. */
	LW_HOLDER_CUT = 1,
	/* The path runs through an autograd graph. */
	LW_HOLDER_GRAPH = 2,
	/* No root of the program reaches the holder: a reference cycle
	 * that waits for the cycle collector (the root string says how
	 * many objects, and when the collector last ran). */
	LW_HOLDER_UNREACHABLE = 4,
	/* ... and the program turned the collector off. */
	LW_HOLDER_GC_OFF = 8,
	/* PyTorch was loaded: a path that does not run through grad_fn
	 * keeps no autograd graph (without it, nothing is known of graphs). */
	LW_HOLDER_TORCH = 16,
	/* The path runs through a state a metric object declared (its
	 * _defaults and _reductions: torchmetrics' add_state()), which it
	 * keeps until it is reset. */
	LW_HOLDER_METRIC_STATE = 32,
};

enum lw_mark {
	/* The program's own code finished: for Python, the first atexit
	 * callback, before the interpreter clears module globals. What is
	 * live here is what the program leaked; what is live at the END
	 * record is what was still allocated when the process exited. */
	LW_MARK_PROGRAM_END = 1,
	/* Python's cycle collector starts and finishes a pass (gc.callbacks
	 * "start" and "stop"): frees between the two were held only by
	 * reference cycles. Older readers skip them. */
	LW_MARK_GC_START = 2,
	LW_MARK_GC_STOP = 3,
};

/* The name of an enum lw_api entry point, or "?". */
static inline const char *lw_api_name(uint64_t api)
{
	static const char *const names[LW_API_MAX + 1] = {
		"?", "cudaMalloc", "cudaMallocAsync",
		"cudaMallocFromPoolAsync", "cudaMallocManaged",
		"cudaMallocPitch", "cudaMalloc3D", "cudaMallocHost",
		"cudaHostAlloc", "cudaHostRegister", "cuMemAlloc",
		"cuMemAllocPitch", "cuMemAllocManaged", "cuMemAllocHost",
		"cuMemHostAlloc", "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
		"cuMemCreate", "PyTorch allocator",
	};
	return api <= LW_API_MAX && names[api] ? names[api] : "?";
}

/* The name of an enum lw_pypath_kind, or "?". */
static inline const char *lw_pypath_kind_name(uint64_t kind)
{
	static const char *const names[LW_PYPATH_KIND_MAX + 1] = {
		"?", "stdlib", "site", "user_site", "pythonpath", "pth",
		"editable", "installed", "sys_path", "script", "cwd",
		"project", "scripts",
	};
	return kind <= LW_PYPATH_KIND_MAX && names[kind] ? names[kind] : "?";
}

/* Longest LEB128 encoding of a 64-bit value. */
#define LW_VARINT_MAX 10

static inline uint64_t lw_zigzag_encode(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t lw_zigzag_decode(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes v at p (room for LW_VARINT_MAX bytes); returns the bytes written. */
static inline unsigned lw_varint_put(uint8_t *p, uint64_t v)
{
	unsigned n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/*
 * Reads a varint from [*pp, end). Returns 0 and advances *pp on success,
 * -1 if the input ends inside the varint, -2 if it is longer than 64 bits.
 */
static inline int lw_varint_get(const uint8_t **pp, const uint8_t *end,
				uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;

	if (p < end && *p < 0x80) { /* the common one-byte case */
		*out = *p;
		*pp = p + 1;
		return 0;
	}
	for (;;) {
		if (p >= end)
			return -1;
		uint8_t b = *p++;
		if (shift == 63 && b > 1)
			return -2;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
		shift += 7;
		if (shift > 63)
			return -2;
	}
	*out = v;
	*pp = p;
	return 0;
}

#endif
