/* SPDX-License-Identifier: MIT */
/*
 * The map of loaded objects (executable and shared libraries) that the
 * report needs to symbolize return addresses offline. It is refreshed only
 * when a newly seen stack holds an address outside every known object, so a
 * program that keeps allocating from the same places never pays for it.
 */
#ifndef LW_MODULES_H
#define LW_MODULES_H

#include <stdint.h>

struct lw_writer;

struct lw_module {
	uintptr_t start, end; /* [start, end) of its loaded segments */
	uintptr_t bias;       /* load bias (dlpi_addr) */
	char *path;           /* arena string */
};

struct lw_module_scan {
	struct lw_module *modules;
	unsigned count, capacity;
};

/* True if every address lies in a known object. Under the tracker lock. */
int lw_modules_cover(const uintptr_t *addrs, unsigned count);

/*
 * Lists the loaded objects with dl_iterate_phdr(). Takes the dynamic
 * loader's lock, so call it without holding the tracker lock. Returns 0 or
 * -ENOMEM.
 */
int lw_modules_scan(struct lw_module_scan *scan);

/* Adds the objects of scan not known yet and writes a MODULE record for
 * each. Under the tracker lock. */
void lw_modules_merge(struct lw_module_scan *scan, struct lw_writer *w);

/* Frees what lw_modules_scan() allocated (merged modules are kept). */
void lw_modules_scan_release(struct lw_module_scan *scan);

/* Forgets every known object (a new trace, after fork). */
void lw_modules_reset(void);

/* The known object holding addr, or NULL. Under the tracker lock. */
const struct lw_module *lw_modules_find(uintptr_t addr);

#endif
