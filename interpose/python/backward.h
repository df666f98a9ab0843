/* SPDX-License-Identifier: MIT */
/*
 * Autograd's device threads. For CUDA tensors, PyTorch runs backward on a
 * worker thread per device (torch::autograd::Engine::thread_main, in
 * libtorch_cpu), which has no Python frames, while the thread that called
 * backward() waits with the GIL released. The blocks allocated there are
 * attributed to the Python stack that called backward(): torch.autograd's
 * backward() and grad() first make the initial gradients in _make_grads()
 * (a CUDA tensor for a CUDA loss), on the calling thread; the Python frames
 * outside _make_grads() are kept, and lent to the allocations of autograd
 * threads until the calling thread allocates again outside backward().
 * Between its return and that allocation the frames are stale; the code
 * objects they name are then still those of the functions that called
 * backward(), which live as long as their module in all but exec'd code.
 */
#ifndef LW_BACKWARD_H
#define LW_BACKWARD_H

#include <stdint.h>

/* Tells about a code object whose names were read (stacks.c, under the
 * tracker's lock): torch.autograd's _make_grads is remembered. */
void lw_backward_note_code(const void *code, const char *file,
			   const char *name);

/*
 * Called for each allocation before the tracker's lock is taken, with its
 * native frames and py_depth Python frames (two words each, as in struct
 * lw_stack_entry) at py. With Python frames: notes whether the thread is
 * starting a backward() or left it, and returns py_depth. Without, on an
 * autograd thread during a backward(): writes the caller's Python frames
 * at py (room for LW_MAX_PY_FRAMES) and returns how many. Never blocks for long: a lock
 * held only to copy frames.
 */
unsigned lw_backward_attribute(const uintptr_t *native, unsigned depth,
			       uintptr_t *py, unsigned py_depth);

/* Forgets the caller (a forked child has no backward running). */
void lw_backward_reset(void);

#endif
