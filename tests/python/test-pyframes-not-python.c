/* SPDX-License-Identifier: MIT */
/* In a process without Python, the frame reader says so and reads nothing. */
#include <stdint.h>

#include "../lw-test.h"
#include "pyframes.h"

int main(void)
{
	struct lw_py_frame frames[4];
	char file[16] = "x", qualname[16] = "x";
	int first_line = 7;

	CHECK(lw_py_init() == LW_PY_NOT_PYTHON);
	CHECK(lw_py_init() == LW_PY_NOT_PYTHON);
	CHECK(lw_py_version()[0] == '\0');
	CHECK(lw_py_capture(frames, 4) == 0);
	CHECK(lw_py_code_info(frames, file, sizeof(file), qualname, sizeof(qualname),
			      &first_line) == -1);
	CHECK(file[0] == '\0' && qualname[0] == '\0' && first_line == 7);
	CHECK(!lw_py_is_eval_address((uintptr_t)main));
	return lw_test_done("pyframes-not-python");
}
