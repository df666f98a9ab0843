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

LW_EXPORT int leakwatch_device_live(unsigned long long *bytes,
				    unsigned long long *count)
{
	uint64_t b, c;

	if (lw_device_live(&b, &c) < 0)
		return -1;
	if (bytes)
		*bytes = b;
	if (count)
		*count = c;
	return 0;
}
