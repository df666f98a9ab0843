/* SPDX-License-Identifier: MIT */
#include "torchconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>

#include "config.h"
#include "events.h"
#include "real.h"
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
	int async = 0;

	if (getauxval(AT_SECURE) || (disable && lw_parse_bool(disable) == 1))
		return;
	if (mode && strcasecmp(mode, "async") == 0) {
		async = 1;
	} else if (mode && mode[0] && strcasecmp(mode, "keep") != 0) {
		lw_config_defer_problem("LEAKWATCH_TORCH_ALLOCATOR",
					"LEAKWATCH_TORCH_ALLOCATOR='%.64s' is "
					"neither 'async' nor 'keep'; keeping "
					"PyTorch's allocator", mode);
	}
	if (cuda_conf && strcmp(cuda_conf, LW_TORCH_ASYNC_CONF) == 0 &&
	    getenv(SET_BY_LEAKWATCH) && !any_conf) {
		/* Inherited from a parent process's shim: still leakwatch's
		 * choice, which a child without "async" undoes. */
		if (!async) {
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
	} else if (!async) {
		/* PyTorch's native allocator: its blocks are seen through
		 * c10::reportMemoryUsageToProfiler (torchhooks.c). */
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

/*
 * PYTORCH_NO_CUDA_MEMORY_CACHING (or its HIP twin) set to 1 makes PyTorch
 * cudaMalloc each tensor and call no report hook (c10::utils::check_env:
 * "1" is true, "0" false, anything else ignored with a warning). Read at
 * the first allocation from libc10_cuda, after PyTorch read it.
 */
static int uncached(void)
{
	static int answer = -1;
	int a = __atomic_load_n(&answer, __ATOMIC_RELAXED);

	if (a < 0) {
		const char *cuda = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
		const char *hip = getenv("PYTORCH_NO_HIP_MEMORY_CACHING");
		a = (cuda && strcmp(cuda, "1") == 0) ||
		    (hip && strcmp(hip, "1") == 0);
		__atomic_store_n(&answer, a, __ATOMIC_RELAXED);
	}
	return a;
}

int lw_torch_is_segment(const void *caller)
{
	return lw_real_caller_is_torch(caller) && !uncached();
}

static void on_trace_info(const struct lw_event *event, void *ctx)
{
	(void)ctx;
	lw_torch_write_info(event->writer);
}

void lw_torch_start(void)
{
	lw_events_subscribe(LW_EVENT_TRACE_INFO, on_trace_info, NULL);
}
