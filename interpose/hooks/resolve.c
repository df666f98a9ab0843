/* SPDX-License-Identifier: MIT */
/*
 * How the driver hooks are handed out when a program does not call the
 * driver by name: dlsym() on a handle to libcuda, cuGetProcAddress and
 * cudaGetDriverEntryPoint* (driver.c calls lw_resolve_swap() on what the
 * real resolvers return).
 *
 * A function is swapped only when it is the very function libcuda exports
 * under a name leakwatch hooks: the real resolver picks the variant for
 * the caller's name, version and flags, and leakwatch never builds a _vN
 * name itself, so a driver that adds a cuMemAlloc_v3 hands its callers
 * that function, untouched.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "real.h"
#include "tracker.h"

#define LW_STRINGIFY_(x) #x
#define LW_STRINGIFY(x) LW_STRINGIFY_(x)

void *lw_dlsym_handle(void *handle, const char *name);

/* libcuda's function for each hooked driver name, found at first need. */
static void *exports[LW_FN_COUNT];

static void *export_of(void *driver, enum lw_fn fn)
{
	void *p = __atomic_load_n(&exports[fn], __ATOMIC_ACQUIRE);

	if (!p) {
		p = lw_dlsym_real(driver, lw_real_name(fn));
		if (p)
			__atomic_store_n(&exports[fn], p, __ATOMIC_RELEASE);
	}
	return p;
}

void *lw_resolve_swap(void *fn)
{
	int missing = 0;

	if (!fn || __atomic_load_n(&lw_state, __ATOMIC_ACQUIRE) == LW_STATE_OFF)
		return fn;
	void *driver = lw_real_driver_handle();
	if (!driver)
		return fn;
	for (int f = LW_FN_FIRST_DRIVER; f < LW_FN_COUNT; f++) {
		void *real = export_of(driver, (enum lw_fn)f);
		missing |= !real;
		if (real != fn)
			continue;
		lw_fnptr as_fn;
		memcpy(&as_fn, &fn, sizeof(as_fn));
		__atomic_store_n(&lw_real_table[f], as_fn, __ATOMIC_RELEASE);
		memcpy(&fn, &lw_driver_hooks[f], sizeof(fn));
		break;
	}
	/* A name this driver lacks must not leave an error behind for a
	 * caller who checks dlerror() after a successful lookup. */
	if (missing)
		(void)dlerror();
	return fn;
}

/*
 * The exported dlsym, for a handle that names a library: swap in a hook
 * for a driver function leakwatch wraps.
 */
__attribute__((used)) void *lw_dlsym_handle(void *handle, const char *name)
{
	void *p = lw_dlsym_real(handle, name);

	if (p && name && name[0] == 'c' && name[1] == 'u')
		p = lw_resolve_swap(p);
	return p;
}

/*
 * dlsym(RTLD_DEFAULT) and dlsym(RTLD_NEXT) depend on who calls: glibc reads
 * its caller's return address. The exported dlsym therefore jumps to
 * glibc's for those handles, leaving the caller's return address in place
 * (a call from C would make every RTLD_NEXT lookup relative to leakwatch,
 * and send another preloaded library's lookups of its own functions back
 * to itself). They need no swap: they find leakwatch's hooks first anyway.
 * Other handles go to lw_dlsym_handle(). On other architectures the shim
 * does not export dlsym.
 */
#if defined(__x86_64__)
#define LW_HOOKS_DLSYM 1
__asm__(
	"	.text\n"
	"	.globl dlsym\n"
	"	.type dlsym, @function\n"
	"dlsym:\n"
#ifdef __CET__
	"	endbr64\n"
#endif
	"	cmpq $-1, %rdi\n"
	"	je 1f\n"
	"	testq %rdi, %rdi\n"
	"	je 1f\n"
	"	jmp lw_dlsym_handle\n"
	"1:	movq lw_dlsym_target(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	je 2f\n"
	"	jmp *%rax\n"
	"2:	pushq %rdi\n"
	"	pushq %rsi\n"
	"	subq $8, %rsp\n"
	"	call lw_dlsym_load\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	jmp *%rax\n"
	"	.size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
#define LW_HOOKS_DLSYM 1
__asm__(
	"	.text\n"
	"	.globl dlsym\n"
	"	.type dlsym, %function\n"
	"	.p2align 2\n"
	"dlsym:\n"
	"	hint #34\n" /* bti c, a no-op where BTI is off */
	"	cmn x0, #1\n"
	"	b.eq 1f\n"
	"	cbz x0, 1f\n"
	"	b lw_dlsym_handle\n"
	"1:	adrp x16, lw_dlsym_target\n"
	"	ldr x16, [x16, :lo12:lw_dlsym_target]\n"
	"	cbz x16, 2f\n"
	"	br x16\n"
	"2:	stp x29, x30, [sp, #-32]!\n"
	"	mov x29, sp\n"
	"	stp x0, x1, [sp, #16]\n"
	"	bl lw_dlsym_load\n"
	"	mov x16, x0\n"
	"	ldp x0, x1, [sp, #16]\n"
	"	ldp x29, x30, [sp], #32\n"
	"	br x16\n"
	"	.size dlsym, .-dlsym\n");
#endif

/*
 * A library loaded with RTLD_DEEPBIND binds its own references to its own
 * dependencies first: if one of them is a CUDA runtime, its calls never
 * reach leakwatch's hooks. The exported dlopen notes the flag and jumps to
 * glibc's with everything in place, the caller's return address included
 * (glibc reads it to find the caller's RUNPATH and $ORIGIN, so a call from
 * C would load libraries relative to leakwatch instead). The tracker warns
 * once, on its next record (lw_deepbind_seen). It also counts the load
 * (lw_load_generation), which drops what lw_real_for_caller() remembers of
 * return addresses: an object unloaded since may have been replaced at the
 * same addresses. x86-64 only.
 */
#if defined(__x86_64__)
typedef void *(*lw_dlopen_fn)(const char *file, int mode);

lw_dlopen_fn lw_dlopen_target;
lw_dlopen_fn lw_dlopen_load(void);

static void *no_dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	return NULL;
}

/* Finds glibc's dlopen (dlvsym is not interposed); never returns NULL.
 * Uninstrumented, as lw_dlsym_load() (real.c). */
__attribute__((used)) LW_NO_SANITIZE lw_dlopen_fn lw_dlopen_load(void)
{
	static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5" };
	lw_dlopen_fn fn = __atomic_load_n(&lw_dlopen_target, __ATOMIC_ACQUIRE);

	for (size_t i = 0; !fn && i < sizeof(versions) / sizeof(versions[0]);
	     i++) {
		void *p = dlvsym(RTLD_NEXT, "dlopen", versions[i]);
		memcpy(&fn, &p, sizeof(fn));
	}
	if (!fn)
		return no_dlopen;
	__atomic_store_n(&lw_dlopen_target, fn, __ATOMIC_RELEASE);
	return fn;
}

__asm__(
	"	.text\n"
	"	.globl dlopen\n"
	"	.type dlopen, @function\n"
	"dlopen:\n"
#ifdef __CET__
	"	endbr64\n"
#endif
	"	lock incl lw_load_generation(%rip)\n"
	"	testl $" LW_STRINGIFY(RTLD_DEEPBIND) ", %esi\n"
	"	je 1f\n"
	"	movl $1, lw_deepbind_seen(%rip)\n"
	"1:	movq lw_dlopen_target(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	je 2f\n"
	"	jmp *%rax\n"
	"2:	pushq %rdi\n"
	"	pushq %rsi\n"
	"	subq $8, %rsp\n"
	"	call lw_dlopen_load\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	jmp *%rax\n"
	"	.size dlopen, .-dlopen\n");
#endif
