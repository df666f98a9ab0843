/* SPDX-License-Identifier: MIT */
/*
 * Turns the return addresses of a trace's stacks into functions and source
 * lines, using the MODULE records of the trace and elfutils' libdwfl.
 *
 * Work is lazy: a module's ELF file is opened when the first address inside
 * it is asked for, and each address is resolved once. Without libdw (or when
 * a module's file is missing, has no symbols or changed since the trace was
 * written) addresses come back as module + offset, or as they are when no
 * module covers them.
 */
#ifndef LW_SYMBOLIZE_H
#define LW_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct lw_sym_frame {
	const char *function;	/* demangled; NULL when unknown */
	const char *file;	/* as the debug info names it; NULL */
	unsigned line;		/* 0 when unknown */
};

/* What one return address resolves to. */
struct lw_symbol {
	uint64_t address;
	/* The path of the module that covers the address, as recorded;
	 * NULL when none does. */
	const char *module;
	uint64_t offset;	/* address - the module's load bias */
	/*
	 * At least one. Several when the call was inlined: frames[0] is the
	 * innermost inlined function, the last one the function the machine
	 * code belongs to. All share the address.
	 */
	unsigned frame_count;
	struct lw_sym_frame *frames;
};

struct lw_symbolizer;

/*
 * Creates a symbolizer for the modules of model, which must outlive it.
 * Returns NULL when out of memory.
 */
struct lw_symbolizer *lw_symbolizer_new(const struct lw_model *model);
void lw_symbolizer_free(struct lw_symbolizer *symbolizer);

/*
 * Resolves a return address (the instruction looked up is the one before
 * it). *out stays owned by the symbolizer. Returns 0 or -ENOMEM.
 */
int lw_symbolize(struct lw_symbolizer *symbolizer, uint64_t address,
		 const struct lw_symbol **out);

/*
 * Lines about modules that could not be used for the addresses resolved so
 * far (missing file, changed file, no libdw), for the report to show; owned
 * by the symbolizer.
 */
size_t lw_symbolizer_notes(const struct lw_symbolizer *symbolizer,
			   const char *const **notes);

/* Whether this leakwatch was built with libdw. */
bool lw_symbolizer_have_libdw(void);

#endif
