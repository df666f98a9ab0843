/* SPDX-License-Identifier: MIT */
/*
 * Work the shim asks the Python interpreter to do for it. A hook never takes
 * the GIL; instead it queues a call with Py_AddPendingCall(), which any
 * thread may do, and the interpreter runs it in its main thread with the GIL
 * held, between two bytecodes.
 */
#ifndef LW_PYHOOKS_H
#define LW_PYHOOKS_H

/*
 * Queues the registration, from inside the interpreter, of what the shim
 * needs from Python and does not have yet:
 * - an atexit callback that records LW_MARK_PROGRAM_END: CPython runs
 *   atexit callbacks before it clears module globals, so the mark sees
 *   what the program's own code left allocated;
 * - a gc.callbacks entry that records LW_MARK_GC_START and _STOP around
 *   each pass of the cycle collector;
 * - once torch.optim is imported, PyTorch's optimizer step post-hook, which
 *   marks a training step (LW_STEP_OPTIMIZER) at each optimizer step.
 * Cheap when all is registered; call it again later (torch may be imported
 * after the first allocation). Returns 0 if a call is queued or nothing is
 * left to do, -1 if this is not a running CPython or it gave up.
 */
int lw_py_schedule_hooks(void);

/* Subscribes to the recorder's events (events.h): new code running is
 * when the hooks are tried again (lw_py_schedule_hooks()). */
void lw_py_hooks_start(void);

#endif
