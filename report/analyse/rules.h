/* SPDX-License-Identifier: MIT */
/*
 * Diagnosis rules and suppressions, read from text files.
 *
 * Rules give frames *tags* (what a frame means: a module's forward, a loss,
 * a deep copy, a module moved to the GPU...), name the phases that should
 * release what they load, and word the fix of each category. Everything
 * that depends on a framework lives in these files (data/rules.conf for
 * PyTorch), never in the classifier. Suppressions (LeakSanitizer-like
 * "leak:PATTERN" lines) silence findings whose stack has a matching frame.
 */
#ifndef LW_RULES_H
#define LW_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lw_category {
	LW_CATEGORY_NONE,
	LW_CATEGORY_RETAINED_LOSS,
	LW_CATEGORY_METRIC_COPY,
	LW_CATEGORY_RETAINED_GRAPH,
	LW_CATEGORY_LINGERING,
	LW_CATEGORY_UNRELEASED_MODULE,
	LW_CATEGORY_CYCLE_DELAYED,
	LW_CATEGORY_GROWTH,
	LW_CATEGORY_NOT_A_LEAK,
	/* PyTorch's pool reserves what its tensors do not use (pool.h):
	 * not a leak; named pool-fragmentation. */
	LW_CATEGORY_CACHE_GROWTH,
	/* One buffer made anew, larger, every step (torch.cat onto itself). */
	LW_CATEGORY_GROWING_BUFFER,
	/* Exceptions kept: each traceback keeps its frames and their locals. */
	LW_CATEGORY_KEPT_EXCEPTION,
	/* Reference cycles the collector never frees (it is off). */
	LW_CATEGORY_UNCOLLECTED_CYCLE,
	/* Outputs of a forward pass kept without their graph (a hook, a
	 * container of detached tensors). */
	LW_CATEGORY_KEPT_ACTIVATIONS,
	/* A model's outputs (logits, generated ids, embeddings) kept without
	 * a graph: a container of them, or one made of them. */
	LW_CATEGORY_KEPT_OUTPUTS,
	/* A cache keyed per request (a dict of string keys, an lru_cache
	 * with no bound): every new key adds an entry, none is evicted. */
	LW_CATEGORY_UNBOUNDED_CACHE,
	/* Input batches kept (copied to the device, or made there). */
	LW_CATEGORY_KEPT_INPUTS,
	/* A metric's list states (the batches it keeps to compute later)
	 * growing: never computed and reset. */
	LW_CATEGORY_METRIC_STATE,
	LW_CATEGORY_COUNT,
};

/* "retained-loss", ... "not-a-leak"; NULL for LW_CATEGORY_NONE. */
const char *lw_category_name(enum lw_category category);

/* The tags the classifier understands (bits of a frame's tag set). */
enum lw_tag {
	LW_TAG_FORWARD = 1u << 0,	/* a module's forward call */
	LW_TAG_LOSS = 1u << 1,		/* a loss function */
	LW_TAG_BACKWARD = 1u << 2,	/* back-propagation */
	LW_TAG_COPY = 1u << 3,		/* a deep copy */
	LW_TAG_METRIC = 1u << 4,	/* a metric object's code */
	LW_TAG_LOAD = 1u << 5,		/* loading a module, moving it */
	LW_TAG_OPTIMIZER = 1u << 6,	/* an optimizer's step */
	LW_TAG_WORKSPACE = 1u << 7,	/* a library's workspace */
	LW_TAG_CACHE = 1u << 8,		/* a cache meant to be kept */
	LW_TAG_INPUT = 1u << 9,		/* an input copied to the device */
	LW_TAG_HOOK = 1u << 10,		/* a module's hooks being run */
};

struct lw_tag_rule {
	uint32_t tag;
	char *function;	/* fnmatch glob over the function name */
	char *file;	/* over the file, or a native frame's module */
};

struct lw_rules {
	struct lw_tag_rule *tags;
	size_t tag_count, tag_capacity;
	char **transient_phases;	/* globs over phase names */
	size_t transient_count, transient_capacity;
	char *fixes[LW_CATEGORY_COUNT];	/* NULL: the generic wording */
	char **suppressions;		/* globs, matched as substrings */
	size_t suppression_count, suppression_capacity;
	/* The files read, for the report: rules, then suppressions. */
	char **files;
	size_t file_count, file_capacity;
	size_t first_suppression_file;
};

void lw_rules_init(struct lw_rules *rules);
void lw_rules_fini(struct lw_rules *rules);

/*
 * The most a rules or suppressions file may hold (docs/reference.md): the
 * shipped rules are a few KiB. A longer file, or a device or pipe that
 * gives more, is refused with -EFBIG, in bounded memory.
 */
#define LW_RULES_FILE_MAX (4u << 20)

/*
 * Adds the rules of a file: lines "tag TAG FUNCTION-GLOB FILE-GLOB",
 * "transient-phase GLOB", "fix CATEGORY TEXT"; '#' starts a comment. A later
 * fix replaces an earlier one. Returns 0, or a negative errno with message
 * ("LINE: what is wrong", the file too long, or the system's error)
 * filled in.
 */
int lw_rules_add_file(struct lw_rules *rules, const char *path,
		      char *message, size_t message_size);

/* Adds a suppressions file: lines "leak:PATTERN"; as lw_rules_add_file. */
int lw_rules_add_suppressions(struct lw_rules *rules, const char *path,
			      char *message, size_t message_size);

/*
 * The rules shipped with leakwatch: rules.conf beside the running command
 * (the build tree), else in the installed data directory. Returns a static
 * path, or NULL when neither exists.
 */
const char *lw_rules_default_path(void);

/*
 * The tags of a frame. Any of function, file and module may be NULL. The
 * function glob is tried on the whole name and on its last component
 * (after the last '.' or "::"), so "forward" matches "Linear.forward".
 */
uint32_t lw_rules_frame_tags(const struct lw_rules *rules,
			     const char *function, const char *file,
			     const char *module);

/* Whether a frame matches a suppression: a pattern found (as a glob, anywhere)
 * in the function, file or module. */
bool lw_rules_frame_suppressed(const struct lw_rules *rules,
			       const char *function, const char *file,
			       const char *module);

/* Whether a phase is one that should release what was loaded in it. */
bool lw_rules_transient_phase(const struct lw_rules *rules, const char *name);

#endif
