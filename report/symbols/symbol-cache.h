/* SPDX-License-Identifier: MIT */
/*
 * What symbolization found, kept by the GNU build id of each library so
 * that the next report of the same job (or the other ranks of a job in the
 * same report) reads no library again: for each address of the file (its
 * load bias taken off), the frames it resolved to. The library file's size
 * and modification time go with the build id: a build id given by hand
 * (-Wl,--build-id=0x...) stays the same when the library is rebuilt.
 *
 * Shared by every symbolizer of the process (reports of several traces
 * look up the same libraries), and kept on disk, one file per build id, in
 * LEAKWATCH_SYMBOL_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/leakwatch/symbols
 * (directories made 0700, files 0600; LEAKWATCH_SYMBOL_CACHE=1, yes, on or
 * true is the default directory, 0, no, off or false no cache). A file is
 * trusted only for the build id, size and modification time it names, and
 * only when it is ours, whole and well formed;
 * anything else is ignored and written over. Files are replaced with
 * rename(), so that readers see a whole file and concurrent writers each
 * write one: the last one stays. Nothing about the cache is ever an error
 * of the report: a cache that cannot be read or written is left alone.
 *
 * Thread-safe.
 */
#ifndef LW_SYMBOL_CACHE_H
#define LW_SYMBOL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize.h"

/* The frames of one build id. */
struct lw_symcache;

/* Which file of a build id: its size and modification time (st_mtim). */
struct lw_symcache_stamp {
	uint64_t size;
	uint64_t mtime_ns;
};

/*
 * The entries of build_id in the file stamp describes, read from its
 * cache file when no symbolizer holds them yet; takes a reference. NULL
 * when the cache is off (LEAKWATCH_SYMBOL_CACHE=0, no home directory) or
 * out of memory.
 */
struct lw_symcache *lw_symcache_get(const uint8_t *build_id, size_t len,
				    const struct lw_symcache_stamp *stamp);

/* Drops a reference; with the last one, new entries are written to the
 * file (merged with what other processes wrote there meanwhile). The
 * entries stay in memory, for the next symbolizer, until the process
 * exits. */
void lw_symcache_put(struct lw_symcache *cache);

/*
 * Copies the frames cached for address (an address of the file, its load
 * bias taken off) into sym (frames and frame_count, which must be empty).
 * Returns 1 when found, 0 when not, -ENOMEM.
 */
int lw_symcache_find(struct lw_symcache *cache, uint64_t address,
		     struct lw_symbol *sym);

/* Keeps the frames of sym for address. Returns 0 or -ENOMEM. */
int lw_symcache_add(struct lw_symcache *cache, uint64_t address,
		    const struct lw_symbol *sym);

/*
 * The directory the cache is in (malloc'ed into *out), or NULL there when
 * it is off. Returns 0 or -ENOMEM.
 */
int lw_symcache_dir(char **out);

#endif
