/* SPDX-License-Identifier: MIT */
/*
 * Where the program's Python code comes from: the interpreter's facts
 * about its import path, read by pypaths.c and written to the trace as
 * PYPATH records (common/lw-format.h) by origins.c, for the report to tell
 * the user's code from libraries.
 *
 * Nothing of the program runs and nothing in it changes: no bytecode, no
 * Python function, no attribute access (which a __getattr__ or property
 * could answer), no Python object made (each would move the cycle
 * collector's count), no import. Objects are read with the GIL held through
 * the C API calls that only read (PyDict_Next, PyList_GetItem, ...) and
 * pyframes.h; files with the C library, each directory read to a bound.
 */
#ifndef LW_ORIGINS_H
#define LW_ORIGINS_H

/*
 * Records the facts this trace does not hold yet. In the interpreter's
 * main thread with the GIL held (a pending call, or the program-end
 * callback); runs none of the program's code. A failure is warned about
 * once, and the program carries on.
 */
void lw_origins_record(void);

/* Whether the early reading (once the first Python stack is seen) is
 * still to come, and that reading (lw_origins_record() the first time). */
int lw_origins_early_due(void);
void lw_origins_record_early(void);

/* In a forked child: its new trace holds none of the facts. */
void lw_origins_reset(void);

/* Subscribes to the recorder's events (events.h): a forked child resets. */
void lw_origins_start(void);

#endif
