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
 * Once per process: registers, from inside the interpreter, an atexit
 * callback that records LW_MARK_PROGRAM_END. CPython runs atexit callbacks
 * before it clears module globals, so the mark sees what the program's own
 * code left allocated. Returns 0 if the call was queued, -1 if this is not a
 * running CPython or the queue was full.
 */
int lw_py_schedule_program_end_mark(void);

#endif
