/* SPDX-License-Identifier: MIT */
/*
 * The real CUDA functions behind the hooks, found lazily at first use. The
 * shim never links against the CUDA libraries (pip-installed ones are not
 * on the loader's path), so it looks them up in whatever the process has
 * loaded.
 */
#ifndef LW_REAL_H
#define LW_REAL_H

enum lw_fn {
	LW_FN_CUDA_MALLOC,
	LW_FN_CUDA_FREE,
	LW_FN_CUDA_MALLOC_ASYNC,
	LW_FN_CUDA_MALLOC_ASYNC_PTSZ,
	LW_FN_CUDA_FREE_ASYNC,
	LW_FN_CUDA_FREE_ASYNC_PTSZ,
	LW_FN_CUDA_MALLOC_FROM_POOL_ASYNC,
	LW_FN_CUDA_MALLOC_FROM_POOL_ASYNC_PTSZ,
	LW_FN_CUDA_MALLOC_MANAGED,
	LW_FN_CUDA_MALLOC_PITCH,
	LW_FN_CUDA_MALLOC_3D,
	LW_FN_CUDA_MALLOC_HOST,
	LW_FN_CUDA_HOST_ALLOC,
	LW_FN_CUDA_FREE_HOST,
	LW_FN_CUDA_HOST_REGISTER,
	LW_FN_CUDA_HOST_UNREGISTER,
	LW_FN_CUDA_GET_DEVICE,
	LW_FN_COUNT,
};

/* A function pointer of no particular type: cast it to the right one. */
typedef void (*lw_fnptr)(void);

extern lw_fnptr lw_real_table[LW_FN_COUNT];

/* Looks fn up (slow path of lw_real()); NULL if no runtime provides it. */
lw_fnptr lw_real_resolve(enum lw_fn fn);

/* The real function, or NULL if the process has no CUDA runtime loaded. */
static inline lw_fnptr lw_real(enum lw_fn fn)
{
	lw_fnptr p = __atomic_load_n(&lw_real_table[fn], __ATOMIC_ACQUIRE);
	return p ? p : lw_real_resolve(fn);
}

/* The CUDA name of fn. */
const char *lw_real_name(enum lw_fn fn);

/*
 * The path of the CUDA runtime the real functions come from, once one was
 * found by searching the loaded objects; NULL if found through RTLD_NEXT
 * (or not yet).
 */
const char *lw_real_runtime_path(void);

#endif
