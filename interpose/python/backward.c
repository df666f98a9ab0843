/* SPDX-License-Identifier: MIT */
#include "backward.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "pyframes.h"
#include "real.h"

#define THREAD_MAIN \
	"_ZN5torch8autograd6Engine11thread_mainERKSt10shared_ptrINS0_9GraphTaskEE"
#define AUTOGRAD_FILE "torch/autograd/__init__.py"

/* torch.autograd._make_grads's code object, once its names were read. */
static const void *make_grads_code;

/* The Python frames of the thread in backward(), outer to _make_grads. */
static pthread_mutex_t caller_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t caller_frames[2 * LW_MAX_PY_FRAMES];
static unsigned caller_depth;
static pthread_t caller_thread;
static int have_caller; /* read without the lock as a hint */

/* Engine::thread_main's code: [start, end); end 0 until looked up, start 1
 * when it cannot be. */
static uintptr_t thread_main_start, thread_main_end;
static __thread int8_t autograd_thread; /* seen inside thread_main */

void lw_backward_note_code(const void *code, const char *file,
			   const char *name)
{
	size_t n = strlen(file), m = sizeof(AUTOGRAD_FILE) - 1;

	if (strcmp(name, "_make_grads") == 0 && n >= m &&
	    strcmp(file + n - m, AUTOGRAD_FILE) == 0)
		__atomic_store_n(&make_grads_code, code, __ATOMIC_RELEASE);
}

static void find_thread_main(void)
{
	const ElfW(Sym) *sym = NULL;
	uintptr_t start = 1, end = 1;
	Dl_info info;
	void *addr;

	*(lw_fnptr *)&addr = lw_real_torch_symbol(THREAD_MAIN);
	if (addr && dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) &&
	    sym && sym->st_size) {
		start = (uintptr_t)addr;
		end = start + sym->st_size;
	}
	__atomic_store_n(&thread_main_start, start, __ATOMIC_RELAXED);
	__atomic_store_n(&thread_main_end, end, __ATOMIC_RELEASE);
}

/* Whether this thread runs autograd's engine: once seen inside
 * thread_main, always (a later stack may be cut off before it). */
static int on_autograd_thread(const uintptr_t *native, unsigned depth)
{
	uintptr_t start, end;

	if (autograd_thread)
		return 1;
	if (!__atomic_load_n(&thread_main_end, __ATOMIC_ACQUIRE))
		find_thread_main();
	start = __atomic_load_n(&thread_main_start, __ATOMIC_RELAXED);
	end = __atomic_load_n(&thread_main_end, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < depth; i++) {
		/* Return addresses: the call lies just before them. */
		if (native[i] > start && native[i] <= end) {
			autograd_thread = 1;
			return 1;
		}
	}
	return 0;
}

/* A thread with Python frames: starting backward(), or past it. */
static void note_python(const uintptr_t *py, unsigned py_depth)
{
	const void *code = __atomic_load_n(&make_grads_code, __ATOMIC_ACQUIRE);
	unsigned k;

	for (k = 0; k < py_depth; k++)
		if ((const void *)py[2 * k] == code)
			break;
	if (k < py_depth) {
		pthread_mutex_lock(&caller_lock);
		caller_depth = py_depth - k - 1;
		memcpy(caller_frames, py + 2 * (k + 1),
		       caller_depth * 2 * sizeof(*py));
		caller_thread = pthread_self();
		__atomic_store_n(&have_caller, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&caller_lock);
		return;
	}
	/* caller_thread is written before have_caller is set. */
	if (!__atomic_load_n(&have_caller, __ATOMIC_ACQUIRE) ||
	    !pthread_equal(caller_thread, pthread_self()))
		return;
	pthread_mutex_lock(&caller_lock);
	/* The caller allocates again: its backward() returned, and the code
	 * objects of its frames may not outlive it. */
	if (have_caller && pthread_equal(caller_thread, pthread_self()))
		__atomic_store_n(&have_caller, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&caller_lock);
}

unsigned lw_backward_attribute(const uintptr_t *native, unsigned depth,
			       uintptr_t *py, unsigned py_depth)
{
	unsigned n = 0;

	if (py_depth) {
		if (__atomic_load_n(&make_grads_code, __ATOMIC_ACQUIRE))
			note_python(py, py_depth);
		return py_depth;
	}
	if (!__atomic_load_n(&have_caller, __ATOMIC_ACQUIRE))
		return 0;
	if (!on_autograd_thread(native, depth))
		return 0;
	pthread_mutex_lock(&caller_lock);
	if (have_caller) {
		n = caller_depth;
		memcpy(py, caller_frames, n * 2 * sizeof(*py));
	}
	pthread_mutex_unlock(&caller_lock);
	return n;
}

void lw_backward_reset(void)
{
	pthread_mutex_init(&caller_lock, NULL);
	have_caller = 0;
	caller_depth = 0;
}
