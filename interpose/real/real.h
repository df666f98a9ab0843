/* SPDX-License-Identifier: MIT */
/*
 * The real CUDA functions behind the hooks, found lazily at first use. The
 * shim never links against the CUDA libraries (pip-installed ones are not
 * on the loader's path), so it looks them up in whatever the process has
 * loaded.
 */
#ifndef LW_REAL_H
#define LW_REAL_H

/* The hooked functions (hooks.def): the runtime's, then the driver's. */
enum lw_fn {
#define LW_RUNTIME_HOOK(id, symbol) LW_FN_##id,
#define LW_DRIVER_HOOK(id, symbol)
#include "hooks.def"
#undef LW_RUNTIME_HOOK
#undef LW_DRIVER_HOOK
	LW_FN_FIRST_DRIVER,
	LW_FN_DRIVER_BEFORE_FIRST_ = LW_FN_FIRST_DRIVER - 1,
#define LW_RUNTIME_HOOK(id, symbol)
#define LW_DRIVER_HOOK(id, symbol) LW_FN_##id,
#include "hooks.def"
#undef LW_RUNTIME_HOOK
#undef LW_DRIVER_HOOK
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

/*
 * The real runtime function fn for a call made from caller (the hook's
 * return address): that of the runtime the calling object is linked
 * against, when the process has loaded more than one (an extension module
 * built against libcudart.so.12 beside one built against .13); else, and
 * for callers that name no runtime, lw_real(fn). NULL where that runtime
 * lacks fn. Answers come from a lock-free cache by return address, dropped
 * at every dlopen (lw_load_generation).
 */
lw_fnptr lw_real_for_caller(enum lw_fn fn, const void *caller);

/*
 * Whether caller (a hook's return address) lies in PyTorch's CUDA library,
 * libc10_cuda, whose caching allocator calls the runtime and the driver
 * for its segments. From the same cache as lw_real_for_caller().
 */
int lw_real_caller_is_torch(const void *caller);

/*
 * libc10's function called name (one of PyTorch's profiler hooks that the
 * shim defines too): the next definition after the shim's, else the one in
 * the loaded libc10.so (RTLD_LOCAL loads are invisible to RTLD_NEXT). NULL
 * when there is none. Slow: callers keep the answer.
 */
lw_fnptr lw_real_c10_symbol(const char *name);

/*
 * A function of PyTorch's libtorch_cpu.so (loaded RTLD_LOCAL, as a
 * dependency of torch._C) by its mangled name; NULL when the library is
 * not loaded or has no such symbol. Slow: callers keep the answer.
 */
lw_fnptr lw_real_torch_symbol(const char *name);

/* Bumped by the exported dlopen (resolve.c): an object unloaded since may
 * have been replaced at the same addresses. */
extern unsigned lw_load_generation;

/* The return address of the hook this is written in. */
#define LW_CALLER() __builtin_return_address(0)

/*
 * The CUDA runtimes calls were forwarded to, as a list of their names
 * ("libcudart.so.13, libcudart.so.12"), once more than one was; else NULL.
 */
const char *lw_real_runtimes(void);

/* The CUDA name of fn (the exported name, with its _v2 or _ptsz). */
const char *lw_real_name(enum lw_fn fn);

/*
 * The real dlsym(), as glibc's: the shim exports its own (resolve.c) to
 * hand out its driver hooks for handles on libcuda, and must not meet it.
 */
void *lw_dlsym_real(void *handle, const char *name);

typedef void *(*lw_dlsym_fn)(void *handle, const char *name);

/* For code that may run before a sanitizer's runtime is initialized. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
#define LW_NO_SANITIZE __attribute__((no_sanitize("address")))
#endif
#endif
#ifndef LW_NO_SANITIZE
#define LW_NO_SANITIZE
#endif
extern lw_dlsym_fn lw_dlsym_target;

/* Finds glibc's dlsym into lw_dlsym_target; never returns NULL. */
lw_dlsym_fn lw_dlsym_load(void);

/* Whether a library was dlopen()ed with RTLD_DEEPBIND (resolve.c). */
extern int lw_deepbind_seen;
int lw_deepbind_loaded(void);

/*
 * Given a function a real resolver (cuGetProcAddress, dlsym on libcuda,
 * cudaGetDriverEntryPoint) returned: if it is the very function libcuda
 * exports under one of the names leakwatch hooks, remembers it as the real
 * one and returns the hook; anything else comes back unchanged. (resolve.c)
 */
void *lw_resolve_swap(void *fn);

/* A handle on the loaded libcuda.so.1, or NULL. */
void *lw_real_driver_handle(void);

/* The hook leakwatch exports for a driver function (driver.c). */
extern const lw_fnptr lw_driver_hooks[LW_FN_COUNT];

/*
 * The path of the CUDA runtime the real functions come from, once one was
 * found by searching the loaded objects; NULL if found through RTLD_NEXT
 * (or not yet).
 */
const char *lw_real_runtime_path(void);

#endif
