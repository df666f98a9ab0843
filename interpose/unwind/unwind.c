/* SPDX-License-Identifier: MIT */
#include "unwind.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "lw-hash.h"
#include "arena.h"
#include "cfi.h"

/* The shim's own loaded range: frames in it are leakwatch's, not the
 * program's. Skipping by range rather than by count is immune to inlining. */
static uintptr_t self_start, self_end;
static int fast_walk_enabled;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t probe = (uintptr_t)data;

	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && probe >= s &&
		    probe < s + ph->p_memsz) {
			self_start = s;
			self_end = s + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

static int in_self(uintptr_t ip)
{
	return ip >= self_start && ip < self_end;
}

unsigned lw_unwind_libunwind(uintptr_t *frames, unsigned max, uint64_t *hash)
{
	void *raw[LW_MAX_FRAMES + 16];
	unsigned skip = 0, depth = 0;
	uint64_t h = LW_HASH_SEED;
	int n;

	*hash = h;
	if (max > LW_MAX_FRAMES)
		max = LW_MAX_FRAMES;
	n = unw_backtrace(raw, (int)(max + 16));
	if (n <= 0)
		return 0;
	while (skip < (unsigned)n && in_self((uintptr_t)raw[skip]))
		skip++;
	for (unsigned i = skip; i < (unsigned)n && depth < max; i++) {
		frames[depth++] = (uintptr_t)raw[i];
		h = lw_hash_word(h, (uintptr_t)raw[i]);
	}
	*hash = h;
	return depth;
}

#if defined(__x86_64__) && defined(__linux__)
/*
 * The fast walk: x86-64 frames whose DWARF rule is "CFA = rsp or rbp plus a
 * constant, return address at CFA - 8, rbp unchanged or saved at a constant
 * offset" (what compilers emit for ordinary functions, with or without
 * frame pointers) are followed with the rule taken from a cache; the rule
 * is read from .eh_frame once per return address. It reads exactly the
 * words libunwind's own fast trace reads. Any other frame hands the whole
 * stack to libunwind, so correctness never rests on frame pointers.
 */

/* The registers of the caller right after the call returns. */
struct walk_regs {
	uintptr_t rip, rsp, rbp;
};

__attribute__((visibility("hidden"))) void
lw_capture_regs_x86_64(struct walk_regs *regs);
__asm__(".text\n"
	".globl lw_capture_regs_x86_64\n"
	".hidden lw_capture_regs_x86_64\n"
	".type lw_capture_regs_x86_64, @function\n"
	".p2align 4\n"
	"lw_capture_regs_x86_64:\n"
	".cfi_startproc\n"
	"movq (%rsp), %rax\n"
	"movq %rax, 0(%rdi)\n"
	"leaq 8(%rsp), %rax\n"
	"movq %rax, 8(%rdi)\n"
	"movq %rbp, 16(%rdi)\n"
	"ret\n"
	".cfi_endproc\n"
	".size lw_capture_regs_x86_64, .-lw_capture_regs_x86_64\n");

/*
 * A cache entry is one 64-bit word, so that threads share the cache
 * without a lock and never see half an entry: the return address (user
 * space addresses fit in 47 bits) above a 17-bit rule.
 */
#define CACHE_BITS 14
#define RULE_BITS 17
#define KIND_UNSUPPORTED 1u
#define KIND_FRAME 2u
#define KIND_OUTERMOST 3u
#define MAX_CFA_WORDS 1023u /* 10 bits */
#define MAX_RBP_SLOT 15u    /* 4 bits */
#define MAX_FRAME_BYTES (1u << 20)

static uint64_t rule_cache[1u << CACHE_BITS];

static unsigned cache_slot(uintptr_t ip)
{
	return (unsigned)(((uint64_t)ip * LW_HASH_GOLDEN) >>
			  (64 - CACHE_BITS));
}

/* Packs a rule: kind (2 bits), CFA from rbp (1), rbp slot (4), CFA
 * offset in words (10). A rule that does not fit is unsupported. */
static unsigned pack_rule(const struct lw_cfi_rule *rule)
{
	if (rule->kind == LW_CFI_OUTERMOST)
		return KIND_OUTERMOST;
	if (rule->kind != LW_CFI_FRAME || rule->cfa_offset <= 0 ||
	    rule->cfa_offset % 8 || rule->cfa_offset / 8 > MAX_CFA_WORDS)
		return KIND_UNSUPPORTED;
	unsigned slot = 0;
	if (rule->rbp_saved) {
		if (rule->rbp_offset >= 0 || rule->rbp_offset % 8 ||
		    -rule->rbp_offset / 8 > MAX_RBP_SLOT)
			return KIND_UNSUPPORTED;
		slot = (unsigned)(-rule->rbp_offset / 8);
	}
	return KIND_FRAME | (unsigned)rule->cfa_from_rbp << 2 | slot << 3 |
	       (unsigned)(rule->cfa_offset / 8) << 7;
}

static unsigned rule_for(uintptr_t ip)
{
	unsigned slot = cache_slot(ip);
	uint64_t entry = __atomic_load_n(&rule_cache[slot], __ATOMIC_RELAXED);

	if ((entry >> RULE_BITS) == ip)
		return (unsigned)entry & ((1u << RULE_BITS) - 1);
	if (ip >> (64 - RULE_BITS))
		return KIND_UNSUPPORTED;
	struct lw_cfi_rule rule;
	lw_cfi_rule_at(ip - 1, &rule);
	unsigned packed = pack_rule(&rule);
	__atomic_store_n(&rule_cache[slot], (uint64_t)ip << RULE_BITS | packed,
			 __ATOMIC_RELAXED);
	return packed;
}

/*
 * The previous walk of each thread. Consecutive allocations mostly come
 * from the same outer frames. A frame found at the same stack address with
 * the same return address and rbp as last time takes last time's rule
 * without a cache lookup; and from there on the walk can only repeat last
 * time's, as long as every stack word it read is unchanged: those words
 * are compared (independent loads, where the walk itself is a chain of
 * dependent ones) and last time's frames are taken whole. The comparison
 * stops at the first word that differs, so it reads no word the walk
 * itself would not read; then the walk goes on frame by frame.
 */
#define WALK_LIMIT (LW_MAX_FRAMES + 32)

struct walk_frame {
	uintptr_t rsp, rip, rbp;
	uint64_t hash;	/* the running hash before this frame */
	uint32_t rule;
};

struct walk {
	unsigned count;		/* frames walked */
	unsigned recorded_from;	/* the first outside the shim; count: none */
	unsigned depth;		/* frames recorded */
	uint64_t hash;		/* running hash of the recorded frames */
	/* The walk reached the end of the stack: an outermost frame, or a
	 * zero return address read at end_cfa - 8. */
	bool complete, ended_zero;
	uintptr_t end_cfa;
	struct walk_frame f[WALK_LIMIT];
};

struct walk_history {
	unsigned current; /* which one holds the last walk */
	struct walk w[2];
};

static __thread struct walk_history *history
	__attribute__((tls_model("initial-exec")));
static pthread_key_t history_key;
static int history_key_made;

/* What history holds once its thread's destructors freed it: a thread
 * may still allocate from a later destructor, and walks without one. */
#define HISTORY_GONE ((struct walk_history *)1)

static void free_history(void *data)
{
	lw_arena_free(data);
	history = HISTORY_GONE;
}

static struct walk_history *thread_history(void)
{
	if (history == HISTORY_GONE)
		return NULL;
	if (!history && history_key_made) {
		history = lw_arena_alloc(sizeof(*history));
		if (history) {
			history->w[0].count = history->w[1].count = 0;
			history->w[0].complete = history->w[1].complete = false;
			history->current = 0;
			pthread_setspecific(history_key, history);
		}
	}
	return history;
}

/*
 * Compares the stack words the walk read from frame j of prev to frame
 * last (inclusive; through the end of the stack when last is the final
 * frame of a complete walk) with what they held then. Returns last + 1
 * when all are the same, else the frame whose word differs: a comparison
 * starting at any frame up to that one would fail there again.
 */
static unsigned unchanged_from(const struct walk *prev, unsigned j,
			       unsigned last)
{
	for (unsigned i = j; i < last; i++) {
		const struct walk_frame *next = &prev->f[i + 1];
		unsigned rbp_slot = (prev->f[i].rule >> 3) & 15u;

		if (*(const uintptr_t *)(next->rsp - 8) != next->rip)
			return i;
		if (rbp_slot &&
		    *(const uintptr_t *)(next->rsp - 8 * rbp_slot) != next->rbp)
			return i;
	}
	if (last + 1 == prev->count && prev->ended_zero &&
	    *(const uintptr_t *)(prev->end_cfa - 8) != 0)
		return last;
	return last + 1;
}

__attribute__((noinline)) int lw_unwind_fast(uintptr_t *frames, unsigned max,
					    uint64_t *hash)
{
	struct walk_regs regs;
	struct walk_history *h = thread_history();
	struct walk *prev = NULL, *cur = NULL;
	unsigned depth = 0, walked = 0, j = 0, recorded_from = WALK_LIMIT;
	unsigned changed = 0; /* frames of prev below this one: no repeat */
	uint64_t stack_hash = LW_HASH_SEED;
	bool leading = true, complete = false, ended_zero = false;
	uintptr_t end_cfa = 0;

	if (h) {
		prev = &h->w[h->current];
		cur = &h->w[h->current ^ 1];
	}
	lw_capture_regs_x86_64(&regs);
	uintptr_t rip = regs.rip, rsp = regs.rsp, rbp = regs.rbp;
	while (depth < max && walked < WALK_LIMIT) {
		if (leading && !in_self(rip)) {
			leading = false;
			recorded_from = walked;
		}
		unsigned rule;
		while (prev && j < prev->count && prev->f[j].rsp < rsp)
			j++;
		if (prev && j < prev->count && prev->f[j].rsp == rsp &&
		    prev->f[j].rip == rip) {
			const struct walk_frame *pj = &prev->f[j];
			unsigned from = j, rec0, nrec, last;

			rule = pj->rule;
			/* The rest of the walk repeats the last one when it
			 * starts from the same registers, ends the same way,
			 * and skips the same frames as the shim's own. */
			if (j < changed || pj->rbp != rbp ||
			    leading != (j < prev->recorded_from))
				goto step;
			rec0 = leading ? prev->recorded_from : from;
			nrec = prev->count - rec0;
			last = prev->count - 1;
			if (depth + nrec > max) /* stops at max frames */
				last = rec0 + (max - depth) - 1;
			else if (!prev->complete && depth + nrec < max)
				goto step; /* goes on past where that one stopped */
			if (walked + (last - from) + 1 > WALK_LIMIT)
				goto step;
			changed = unchanged_from(prev, from, last);
			if (changed <= last) {
				changed++;
				goto step;
			}
			if (leading && rec0 <= last)
				recorded_from = walked + (rec0 - from);
			/* Where the walk is the same length as last time up
			 * to here (mostly), last time's record is kept and its
			 * start replaced; else its rest is copied. */
			struct walk *to = cur;
			if (walked == from) {
				memcpy(prev->f, cur->f, walked * sizeof(*cur->f));
				to = prev;
				h->current ^= 1; /* flipped back below */
			} else {
				memcpy(&cur->f[walked], &prev->f[from],
				       (last - from + 1) * sizeof(*cur->f));
			}
			if (stack_hash == pj->hash && last + 1 == prev->count) {
				/* The same frames inside too: the same hash. */
				for (unsigned i = rec0; i <= last; i++)
					frames[depth++] = prev->f[i].rip;
				stack_hash = prev->hash;
			} else {
				for (unsigned i = from; i <= last; i++) {
					to->f[walked + (i - from)].hash =
						stack_hash;
					if (i < rec0)
						continue;
					frames[depth++] = prev->f[i].rip;
					stack_hash = lw_hash_word(stack_hash,
								  prev->f[i].rip);
				}
			}
			walked += last - from + 1;
			complete = last + 1 == prev->count && prev->complete;
			ended_zero = complete && prev->ended_zero;
			end_cfa = prev->end_cfa;
			cur = to;
			goto done;
		}
		rule = rule_for(rip);
step:
		if (cur) {
			struct walk_frame *c = &cur->f[walked];

			c->rsp = rsp;
			c->rip = rip;
			c->rbp = rbp;
			c->rule = rule;
			c->hash = stack_hash;
		}
		walked++;
		if (!leading) {
			frames[depth++] = rip;
			stack_hash = lw_hash_word(stack_hash, rip);
		}
		unsigned kind = rule & 3u;
		if (kind == KIND_OUTERMOST) {
			complete = true;
			break;
		}
		if (kind != KIND_FRAME)
			return -1;
		uintptr_t cfa = ((rule & 4u) ? rbp : rsp) +
				(uintptr_t)(rule >> 7) * 8;
		/* The stack only grows down: a rule that points anywhere else
		 * is not followed. */
		if (cfa <= rsp || cfa - rsp > MAX_FRAME_BYTES)
			return -1;
		unsigned rbp_slot = (rule >> 3) & 15u;
		if (rbp_slot)
			rbp = *(const uintptr_t *)(cfa - 8 * rbp_slot);
		rip = *(const uintptr_t *)(cfa - 8);
		rsp = cfa;
		if (rip == 0) {
			complete = ended_zero = true;
			end_cfa = cfa;
			break;
		}
	}
done:
	if (h) {
		cur->count = walked;
		cur->recorded_from = recorded_from < walked ? recorded_from
							    : walked;
		cur->depth = depth;
		cur->hash = stack_hash;
		cur->complete = complete;
		cur->ended_zero = ended_zero;
		cur->end_cfa = end_cfa;
		h->current ^= 1;
	}
	*hash = stack_hash;
	return (int)depth;
}

static void start_history(void)
{
	if (pthread_key_create(&history_key, free_history) == 0)
		history_key_made = 1;
}
#else
int lw_unwind_fast(uintptr_t *frames, unsigned max, uint64_t *hash)
{
	return -1;
}

static void start_history(void)
{
}
#endif

void lw_unwind_init(int fast_walk)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&lw_unwind);
	fast_walk_enabled = fast_walk;
	if (fast_walk)
		start_history();
}


unsigned lw_unwind(uintptr_t *frames, unsigned max, uint64_t *hash)
{
	if (max > LW_MAX_FRAMES)
		max = LW_MAX_FRAMES;
	if (fast_walk_enabled) {
		int depth = lw_unwind_fast(frames, max, hash);
		if (depth >= 0)
			return (unsigned)depth;
	}
	return lw_unwind_libunwind(frames, max, hash);
}

uint64_t lw_hash_finish(uint64_t h, unsigned words)
{
	h ^= words;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h ? h : 1;
}

uint64_t lw_stack_hash(const uintptr_t *frames, unsigned depth)
{
	uint64_t h = LW_HASH_SEED;

	for (unsigned i = 0; i < depth; i++)
		h = lw_hash_word(h, frames[i]);
	return lw_hash_finish(h, depth);
}
