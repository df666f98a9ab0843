/* SPDX-License-Identifier: MIT */
#include "real.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <string.h>

#include "tracker.h"

lw_fnptr lw_real_table[LW_FN_COUNT];

static const char *const fn_names[LW_FN_COUNT] = {
	[LW_FN_CUDA_MALLOC] = "cudaMalloc",
	[LW_FN_CUDA_FREE] = "cudaFree",
	[LW_FN_CUDA_MALLOC_ASYNC] = "cudaMallocAsync",
	[LW_FN_CUDA_MALLOC_ASYNC_PTSZ] = "cudaMallocAsync_ptsz",
	[LW_FN_CUDA_FREE_ASYNC] = "cudaFreeAsync",
	[LW_FN_CUDA_FREE_ASYNC_PTSZ] = "cudaFreeAsync_ptsz",
	[LW_FN_CUDA_MALLOC_FROM_POOL_ASYNC] = "cudaMallocFromPoolAsync",
	[LW_FN_CUDA_MALLOC_FROM_POOL_ASYNC_PTSZ] = "cudaMallocFromPoolAsync_ptsz",
	[LW_FN_CUDA_MALLOC_MANAGED] = "cudaMallocManaged",
	[LW_FN_CUDA_MALLOC_PITCH] = "cudaMallocPitch",
	[LW_FN_CUDA_MALLOC_3D] = "cudaMalloc3D",
	[LW_FN_CUDA_MALLOC_HOST] = "cudaMallocHost",
	[LW_FN_CUDA_HOST_ALLOC] = "cudaHostAlloc",
	[LW_FN_CUDA_FREE_HOST] = "cudaFreeHost",
	[LW_FN_CUDA_HOST_REGISTER] = "cudaHostRegister",
	[LW_FN_CUDA_HOST_UNREGISTER] = "cudaHostUnregister",
	[LW_FN_CUDA_GET_DEVICE] = "cudaGetDevice",
};

static char runtime_path[PATH_MAX];
static void *runtime_handle;

const char *lw_real_name(enum lw_fn fn)
{
	return fn_names[fn];
}

const char *lw_real_runtime_path(void)
{
	return runtime_path[0] ? runtime_path : NULL;
}

static int is_cudart(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "libcudart.so", 12) == 0;
}

static int find_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
	char *out = data;

	if (info->dlpi_name && is_cudart(info->dlpi_name)) {
		strncpy(out, info->dlpi_name, PATH_MAX - 1);
		out[PATH_MAX - 1] = '\0';
		return 1;
	}
	return 0;
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
	*(void **)&fn = dlsym(handle, name);
	return fn;
}

static lw_fnptr resolve_in_loaded_runtime(const char *name)
{
	void *handle = __atomic_load_n(&runtime_handle, __ATOMIC_ACQUIRE);

	if (!handle) {
		char path[PATH_MAX] = "";
		dl_iterate_phdr(find_cudart, path);
		if (!path[0])
			return NULL;
		/* RTLD_NOLOAD: take a handle on what is loaded, load nothing. */
		handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
		if (!handle)
			return NULL;
		void *expected = NULL;
		if (__atomic_compare_exchange_n(&runtime_handle, &expected,
						handle, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			memcpy(runtime_path, path, sizeof(runtime_path));
		} else {
			dlclose(handle);
			handle = expected;
		}
	}
	return symbol(handle, name);
}

/*
 * The real functions are kept for the life of the process, so the object
 * they come from must stay loaded: a program that dlclose()s the runtime
 * (or the last library that needed it) and dlopen()s it again would
 * otherwise leave the shim calling into unmapped memory. A handle taken
 * here, and never given back, keeps it loaded; dlopen() again then finds
 * the same copy. The handle of resolve_in_loaded_runtime() does the same.
 */
static void keep_loaded(lw_fnptr fn)
{
	Dl_info info;
	void *addr;

	*(lw_fnptr *)&addr = fn;
	if (dladdr(addr, &info) && info.dli_fname && info.dli_fname[0])
		dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

lw_fnptr lw_real_resolve(enum lw_fn fn)
{
	lw_fnptr p = symbol(RTLD_NEXT, fn_names[fn]);

	if (p)
		keep_loaded(p);
	else
		p = resolve_in_loaded_runtime(fn_names[fn]);
	if (!p && fn == LW_FN_CUDA_GET_DEVICE)
		return NULL; /* optional: the device is then recorded as unknown */
	if (!p) {
		lw_warn_once(LW_WARN_NO_RUNTIME,
			     "no CUDA runtime is loaded that provides %s; "
			     "the call fails as it would without a runtime",
			     fn_names[fn]);
		return NULL;
	}
	__atomic_store_n(&lw_real_table[fn], p, __ATOMIC_RELEASE);
	return p;
}
