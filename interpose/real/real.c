/* SPDX-License-Identifier: MIT */
#include "real.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lw-hash.h"
#include "warn.h"

lw_fnptr lw_real_table[LW_FN_COUNT];

static const char *const fn_names[LW_FN_COUNT] = {
#define LW_RUNTIME_HOOK(id, symbol) [LW_FN_##id] = #symbol,
#define LW_DRIVER_HOOK(id, symbol) [LW_FN_##id] = #symbol,
#include "hooks.def"
#undef LW_RUNTIME_HOOK
#undef LW_DRIVER_HOOK
};

static char runtime_path[PATH_MAX];
static void *runtime_handle, *driver_handle;

const char *lw_real_name(enum lw_fn fn)
{
	return fn_names[fn];
}

/* runtime_path holds the path: set once, by the first to claim it. */
static int runtime_path_claimed, runtime_path_ready;

const char *lw_real_runtime_path(void)
{
	return __atomic_load_n(&runtime_path_ready, __ATOMIC_ACQUIRE)
		       ? runtime_path : NULL;
}

static void note_runtime_path(const char *path)
{
	if (!path || !path[0] ||
	    __atomic_exchange_n(&runtime_path_claimed, 1, __ATOMIC_ACQ_REL))
		return;
	snprintf(runtime_path, sizeof(runtime_path), "%s", path);
	__atomic_store_n(&runtime_path_ready, 1, __ATOMIC_RELEASE);
}

static int has_base_name(const char *path, const char *prefix)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, prefix, strlen(prefix)) == 0;
}

struct library_search {
	const char *prefix;
	char path[PATH_MAX];
};

static int find_library(struct dl_phdr_info *info, size_t size, void *data)
{
	struct library_search *search = data;

	if (info->dlpi_name && has_base_name(info->dlpi_name, search->prefix)) {
		strncpy(search->path, info->dlpi_name, PATH_MAX - 1);
		search->path[PATH_MAX - 1] = '\0';
		return 1;
	}
	return 0;
}

/* Set by the exported dlopen (resolve.c) for an RTLD_DEEPBIND load. */
int lw_deepbind_seen;

int lw_deepbind_loaded(void)
{
	return __atomic_load_n(&lw_deepbind_seen, __ATOMIC_RELAXED);
}

/* glibc's dlsym; also the target of the exported one (resolve.c). */
lw_dlsym_fn lw_dlsym_target;

static void *no_dlsym(void *handle, const char *name)
{
	(void)handle;
	(void)name;
	return NULL;
}

/*
 * Finds glibc's dlsym (dlvsym is not interposed); never returns NULL. It
 * may run before a sanitizer's runtime is initialized (AddressSanitizer
 * looks up the functions it intercepts with dlsym(RTLD_NEXT) first thing),
 * so a sanitized build leaves it uninstrumented.
 */
LW_NO_SANITIZE lw_dlsym_fn lw_dlsym_load(void)
{
	static const char *const versions[] = {
		"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17",
	};
	lw_dlsym_fn fn = __atomic_load_n(&lw_dlsym_target, __ATOMIC_ACQUIRE);

	for (size_t i = 0; !fn && i < sizeof(versions) / sizeof(versions[0]);
	     i++) {
		void *p = dlvsym(RTLD_NEXT, "dlsym", versions[i]);
		memcpy(&fn, &p, sizeof(fn));
	}
	if (!fn)
		return no_dlsym;
	__atomic_store_n(&lw_dlsym_target, fn, __ATOMIC_RELEASE);
	return fn;
}

void *lw_dlsym_real(void *handle, const char *name)
{
	lw_dlsym_fn fn = __atomic_load_n(&lw_dlsym_target, __ATOMIC_ACQUIRE);
	return (fn ? fn : lw_dlsym_load())(handle, name);
}

/*
 * A runtime loaded with RTLD_LOCAL (the dependency of a Python extension
 * module, say) is invisible to dlsym(RTLD_NEXT): its callers still reach the
 * hooks, because the preloaded shim comes first in every lookup scope. Find
 * the loaded library itself and take the symbol from it.
 */
static lw_fnptr symbol(void *handle, const char *name)
{
	lw_fnptr fn;
	/* POSIX's way of turning dlsym()'s object pointer into a function. */
	*(void **)&fn = lw_dlsym_real(handle, name);
	return fn;
}

/* A handle on the loaded library whose file name starts with prefix,
 * kept in *cache; NULL if none is loaded. is_runtime: note its path as the
 * runtime's. */
static void *loaded_library(const char *prefix, void **cache, int is_runtime)
{
	void *handle = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	struct library_search search = { prefix, "" };

	if (handle)
		return handle;
	dl_iterate_phdr(find_library, &search);
	if (!search.path[0])
		return NULL;
	/* RTLD_NOLOAD: take a handle on what is loaded, load nothing. */
	handle = dlopen(search.path, RTLD_LAZY | RTLD_NOLOAD);
	if (!handle)
		return NULL;
	void *expected = NULL;
	if (__atomic_compare_exchange_n(cache, &expected, handle, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (is_runtime)
			note_runtime_path(search.path);
	} else {
		dlclose(handle);
		handle = expected;
	}
	return handle;
}

lw_fnptr lw_real_c10_symbol(const char *name)
{
	static void *c10_handle;
	lw_fnptr fn = symbol(RTLD_NEXT, name);

	if (!fn) {
		void *handle = loaded_library("libc10.so", &c10_handle, 0);
		fn = handle ? symbol(handle, name) : NULL;
	}
	return fn;
}

lw_fnptr lw_real_torch_symbol(const char *name)
{
	static void *torch_cpu_handle;
	void *handle = loaded_library("libtorch_cpu.so", &torch_cpu_handle,
				      0);

	return handle ? symbol(handle, name) : NULL;
}

void *lw_real_driver_handle(void)
{
	return loaded_library("libcuda.so", &driver_handle, 0);
}

static lw_fnptr resolve_in_loaded_library(enum lw_fn fn)
{
	void *handle = fn >= LW_FN_FIRST_DRIVER
			       ? lw_real_driver_handle()
			       : loaded_library("libcudart.so", &runtime_handle,
						1);
	return handle ? symbol(handle, fn_names[fn]) : NULL;
}

/*
 * The real functions are kept for the life of the process, so the object
 * they come from must stay loaded: a program that dlclose()s the runtime
 * (or the last library that needed it) and dlopen()s it again would
 * otherwise leave the shim calling into unmapped memory. A handle taken
 * here, and never given back, keeps it loaded; dlopen() again then finds
 * the same copy. The handle of resolve_in_loaded_library() does the same.
 */
static void keep_loaded(lw_fnptr fn, int is_runtime)
{
	Dl_info info;
	void *addr;

	*(lw_fnptr *)&addr = fn;
	if (dladdr(addr, &info) && info.dli_fname && info.dli_fname[0]) {
		dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
		if (is_runtime)
			note_runtime_path(info.dli_fname);
	}
}

lw_fnptr lw_real_resolve(enum lw_fn fn)
{
	lw_fnptr p = symbol(RTLD_NEXT, fn_names[fn]);

	if (p)
		keep_loaded(p, fn < LW_FN_FIRST_DRIVER);
	else
		p = resolve_in_loaded_library(fn);
	if (!p) {
		lw_warn_once(LW_WARN_NO_RUNTIME,
			     "no CUDA %s is loaded that provides %s; "
			     "the call fails as it would without one",
			     fn >= LW_FN_FIRST_DRIVER ? "driver" : "runtime",
			     fn_names[fn]);
		return NULL;
	}
	__atomic_store_n(&lw_real_table[fn], p, __ATOMIC_RELEASE);
	return p;
}

/* ---- more than one CUDA runtime ---- */

/*
 * The runtimes other than the default one (index 0, lw_real_table), found
 * by the sonames that calling objects name in DT_NEEDED. A slot is filled
 * once, under runtimes_lock, before runtime_count makes it visible.
 */
#define MAX_RUNTIMES 8

struct runtime {
	char soname[64];
	void *handle;
	int is_default; /* the same object as the default runtime */
	lw_fnptr fn[LW_FN_FIRST_DRIVER];
};

static struct runtime runtimes[MAX_RUNTIMES];
static unsigned runtime_count = 1; /* [0] stands for the default */
static pthread_mutex_t runtimes_lock = PTHREAD_MUTEX_INITIALIZER;
static char runtime_list[256];

unsigned lw_load_generation;

/*
 * The cache: one word per entry, so that threads share it without a lock
 * and never see half an entry: the return address (user space addresses
 * fit in 47 bits) above 12 bits of the load generation, a bit that says
 * the caller lies in PyTorch's libc10_cuda, and 3 of the runtime's index.
 * A torn or stale entry reads as a miss.
 */
#define CALLER_CACHE_BITS 10
#define GENERATION_BITS 12
#define TORCH_CALLER_BIT 8u

static uint64_t caller_cache[1u << CALLER_CACHE_BITS];

/* The soname of the CUDA runtime the object of map names in DT_NEEDED. */
static const char *runtime_needed(const struct link_map *map)
{
	const ElfW(Dyn) *d;
	uintptr_t strtab = 0;

	if (!map->l_ld)
		return NULL;
	for (d = map->l_ld; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			strtab = d->d_un.d_ptr;
	}
	if (!strtab)
		return NULL;
	/* The loader relocates the dynamic section in place on most
	 * targets, not on all, nor where it is read-only. */
	if (strtab < map->l_addr)
		strtab += map->l_addr;
	for (d = map->l_ld; d->d_tag != DT_NULL; d++) {
		const char *name;

		if (d->d_tag != DT_NEEDED)
			continue;
		name = (const char *)(strtab + d->d_un.d_val);
		if (strncmp(name, "libcudart.so", 12) == 0)
			return name;
	}
	return NULL;
}

/* Adds soname to the list the trace reports (lw_real_runtimes()). */
static void note_runtime_locked(const char *soname)
{
	size_t len = strlen(runtime_list);

	if (len == 0) {
		int n = snprintf(runtime_list, sizeof(runtime_list), "%.63s",
				 runtimes[0].soname[0] ? runtimes[0].soname
						       : "the first one found");
		len = n > 0 ? (size_t)n : 0;
	}
	if (len < sizeof(runtime_list))
		snprintf(runtime_list + len, sizeof(runtime_list) - len,
			 ", %.63s", soname);
}

/* The index of the runtime called soname; 0 for the default one. */
static unsigned runtime_index(const char *soname)
{
	struct link_map *mine = NULL, *def = NULL;
	Dl_info info;
	unsigned i, found = 0;
	void *handle, *p;
	lw_fnptr dflt = lw_real(LW_FN_CUDA_MALLOC);

	pthread_mutex_lock(&runtimes_lock);
	for (i = 1; i < runtime_count; i++) {
		if (strcmp(runtimes[i].soname, soname) == 0) {
			found = runtimes[i].is_default ? 0 : i;
			goto out;
		}
	}
	if (runtime_count == MAX_RUNTIMES || strlen(soname) >= 64)
		goto out;
	/* RTLD_NOLOAD: the one loaded under that name, nothing new. */
	handle = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
	if (!handle)
		goto out;
	memcpy(&p, &dflt, sizeof(p));
	if (dlinfo(handle, RTLD_DI_LINKMAP, &mine) != 0)
		mine = NULL;
	if (!p || !dladdr1(p, &info, (void **)&def, RTLD_DL_LINKMAP))
		def = NULL;
	i = runtime_count;
	snprintf(runtimes[i].soname, sizeof(runtimes[i].soname), "%s", soname);
	runtimes[i].handle = handle;
	runtimes[i].is_default = !mine || mine == def;
	if (!runtimes[i].is_default) {
		if (def && def->l_name && !runtimes[0].soname[0]) {
			const char *base = strrchr(def->l_name, '/');
			snprintf(runtimes[0].soname, sizeof(runtimes[0].soname),
				 "%s", base ? base + 1 : def->l_name);
		}
		note_runtime_locked(soname);
		found = i;
	}
	__atomic_store_n(&runtime_count, i + 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&runtimes_lock);
	return found;
}

static int is_c10_cuda(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	base = base ? base + 1 : path;
	return base && strncmp(base, "libc10_cuda.", 12) == 0;
}

/* What the cache knows of caller: the runtime's index, and
 * TORCH_CALLER_BIT for a caller in libc10_cuda. */
static unsigned caller_entry(const void *caller)
{
	uint64_t key = (uint64_t)(uintptr_t)caller;
	uint64_t gen = __atomic_load_n(&lw_load_generation, __ATOMIC_ACQUIRE) &
		       ((1u << GENERATION_BITS) - 1);
	size_t slot = (size_t)((key * LW_HASH_GOLDEN) >>
			       (64 - CALLER_CACHE_BITS));
	/* Acquire: the runtime's slot was filled before its index was
	 * cached (release, below). */
	uint64_t entry = __atomic_load_n(&caller_cache[slot], __ATOMIC_ACQUIRE);
	struct link_map *map = NULL;
	const char *soname;
	Dl_info info;
	unsigned idx = 0;

	if (entry && (entry >> 16) == key &&
	    ((entry >> 4) & ((1u << GENERATION_BITS) - 1)) == gen)
		return (unsigned)(entry & 15);
	if (dladdr1(caller, &info, (void **)&map, RTLD_DL_LINKMAP) && map) {
		if ((soname = runtime_needed(map)))
			idx = runtime_index(soname);
		if (is_c10_cuda(map->l_name))
			idx |= TORCH_CALLER_BIT;
	}
	if (key >> 47 == 0)
		__atomic_store_n(&caller_cache[slot],
				 key << 16 | gen << 4 | idx, __ATOMIC_RELEASE);
	return idx;
}

/* The runtime the object that holds caller is linked against. */
static unsigned runtime_of(const void *caller)
{
	return caller_entry(caller) & 7;
}

int lw_real_caller_is_torch(const void *caller)
{
	return !!(caller_entry(caller) & TORCH_CALLER_BIT);
}

lw_fnptr lw_real_for_caller(enum lw_fn fn, const void *caller)
{
	unsigned idx = runtime_of(caller);
	struct runtime *rt;
	lw_fnptr p;

	if (idx == 0)
		return lw_real(fn);
	rt = &runtimes[idx];
	p = __atomic_load_n(&rt->fn[fn], __ATOMIC_ACQUIRE);
	if (!p) {
		p = symbol(rt->handle, fn_names[fn]);
		__atomic_store_n(&rt->fn[fn], p, __ATOMIC_RELEASE);
	}
	return p;
}

const char *lw_real_runtimes(void)
{
	const char *list = NULL;

	pthread_mutex_lock(&runtimes_lock);
	if (runtime_list[0])
		list = runtime_list;
	pthread_mutex_unlock(&runtimes_lock);
	return list;
}
