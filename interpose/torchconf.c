/* SPDX-License-Identifier: MIT */
#include "torchconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>

#include "config.h"
#include "tracker.h"
#include "writer.h"

/* Tells the shim in a child process that the configuration it inherits
 * was leakwatch's choice, not the user's. */
#define SET_BY_LEAKWATCH "LEAKWATCH_TORCH_ALLOC_CONF_SET"

static char conf[256];
static const char *source; /* NULL: not chosen (disabled, secure) */

void lw_torch_choose(void)
{
	const char *mode = getenv("LEAKWATCH_TORCH_ALLOCATOR");
	const char *disable = getenv("LEAKWATCH_DISABLE");
	const char *cuda_conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
	const char *any_conf = getenv("PYTORCH_ALLOC_CONF");
	int keep = 0;

	if (getauxval(AT_SECURE) || (disable && lw_parse_bool(disable) == 1))
		return;
	if (mode && strcasecmp(mode, "keep") == 0) {
		keep = 1;
	} else if (mode && mode[0] && strcasecmp(mode, "async") != 0) {
		lw_warn_once(LW_WARN_BAD_ENV,
			     "LEAKWATCH_TORCH_ALLOCATOR='%.64s' is neither "
			     "'async' nor 'keep'; using async", mode);
	}
	if (cuda_conf && strcmp(cuda_conf, LW_TORCH_ASYNC_CONF) == 0 &&
	    getenv(SET_BY_LEAKWATCH) && !any_conf) {
		/* Inherited from a parent process's shim: still leakwatch's
		 * choice, which "keep" undoes. */
		if (keep) {
			unsetenv("PYTORCH_CUDA_ALLOC_CONF");
			unsetenv(SET_BY_LEAKWATCH);
			source = "kept";
			return;
		}
		snprintf(conf, sizeof(conf), "%s", cuda_conf);
		source = "leakwatch";
	} else if (cuda_conf || any_conf) {
		/* The user's choice, whatever it is; PyTorch reads both. */
		snprintf(conf, sizeof(conf), "%s", cuda_conf ? cuda_conf : any_conf);
		source = "user";
	} else if (getenv("PYTORCH_NO_CUDA_MEMORY_CACHING")) {
		/* One cudaMalloc per tensor already. */
		source = "no_caching";
	} else if (keep) {
		source = "kept";
	} else if (setenv("PYTORCH_CUDA_ALLOC_CONF", LW_TORCH_ASYNC_CONF, 0) == 0) {
		setenv(SET_BY_LEAKWATCH, "1", 1);
		snprintf(conf, sizeof(conf), "%s", LW_TORCH_ASYNC_CONF);
		source = "leakwatch";
	}
}

void lw_torch_write_info(struct lw_writer *writer)
{
	if (!source)
		return;
	lw_writer_info(writer, "torch_alloc_conf", conf, strlen(conf));
	lw_writer_info(writer, "torch_alloc_conf_source", source,
		       strlen(source));
}
