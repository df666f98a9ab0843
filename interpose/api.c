/* SPDX-License-Identifier: MIT */
/* The public C API of include/leakwatch.h. */
#include "leakwatch.h"

#include "export.h"
#include "tracker.h"

LW_EXPORT void leakwatch_step(void)
{
	lw_record_step(LW_STEP_API);
}

LW_EXPORT void leakwatch_phase_begin(const char *name)
{
	lw_record_phase_begin(name);
}

LW_EXPORT void leakwatch_phase_end(void)
{
	lw_record_phase_end();
}
