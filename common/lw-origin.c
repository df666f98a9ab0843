/* SPDX-License-Identifier: MIT */
/* Whose code a frame is: see lw-origin.h. */
#include "lw-origin.h"

#include <string.h>

/* memmem and memcmp want non-null pointers even for empty ranges. */
static bool contains(const char *s, size_t len, const char *needle)
{
	return memmem(s, len, needle, strlen(needle)) != NULL;
}

static bool starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && memcmp(s, prefix, n) == 0;
}

enum lw_code_origin lw_python_file_origin(const void *file, size_t len)
{
	const char *s = file ? file : "";

	/* Before the standard library: a virtual environment's packages
	 * live under lib/python3.X/site-packages too. */
	if (contains(s, len, "/site-packages/") ||
	    contains(s, len, "/dist-packages/"))
		return LW_CODE_PACKAGE;
	if (contains(s, len, "/lib/python3.") ||
	    contains(s, len, "/lib/python2.") ||
	    contains(s, len, "/lib64/python3.") ||
	    starts_with(s, len, "<frozen "))
		return LW_CODE_STDLIB;
	return LW_CODE_USER;
}

bool lw_module_is_cuda(const char *path)
{
	static const char *const prefixes[] = {
		"libcudart", "libcuda.", "libcuda-", "libleakwatch",
		"libnvidia", "libc10",
	};
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (starts_with(name, strlen(name), prefixes[i]))
			return true;
	}
	return false;
}

bool lw_module_is_framework(const char *path)
{
	static const char *const prefixes[] = {
		/* PyTorch's libraries, its allocator among them. */
		"libtorch", "libc10", "libshm.", "libcaffe2",
		/* CUDA's runtime, driver and libraries. */
		"libcudart", "libcuda.", "libcuda-", "libnvidia", "libcublas",
		"libcudnn", "libcufft", "libcufile", "libcurand",
		"libcusolver", "libcusparse", "libnccl", "libnvrtc",
		"libnvJitLink", "libnvToolsExt", "libnvtx", "libcupti",
	};
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (starts_with(name, strlen(name), prefixes[i]))
			return true;
	}
	/* torch._C, the extension module over libtorch_python. */
	return strstr(path, "/torch/_C.") != NULL;
}
