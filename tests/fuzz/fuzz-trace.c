/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: any bytes, read as a trace into the model, then the
 * model's views and growth judged as a report would. A bad trace must be
 * refused with a message; nothing may crash, read out of bounds, overflow
 * or allocate in proportion to a count the input claims.
 *
 * Without -fsanitize=fuzzer (the regression build), main() runs the
 * target once on each file named on the command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "growth.h"
#include "model.h"
#include "trace-reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_model(const struct lw_model *model)
{
	struct lw_growth_report growth;
	uint32_t *sites = NULL, *growing = NULL;
	size_t count = 0, ngrowing = 0;

	for (unsigned kind = 0; kind <= LW_MEM_KIND_MAX; kind++)
		(void)lw_model_kind_totals(model, kind);
	(void)lw_model_device_live_bytes(model);
	(void)lw_model_device_live_bytes_at_end(model);
	if (lw_model_live_sites(model, &sites, &count) == 0) {
		for (size_t i = 0; i < count; i++) {
			(void)lw_model_site_totals(model, sites[i]);
			(void)lw_model_site_live_at_end(model, sites[i]);
			(void)lw_model_site_native_thread(model, sites[i]);
		}
	}
	if (lw_model_growth(model, 2, &growth) == 0 &&
	    lw_growing_sites(&growth, &growing, &ngrowing) == 0)
		free(growing);
	lw_growth_report_fini(&growth);
	free(sites);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t empty[1];
	struct lw_trace_result result;
	struct lw_model model;

	if (lw_model_init(&model) < 0)
		return 0;
	memset(&result, 0, sizeof(result));
	int rc = lw_trace_read(size ? data : empty, size, &lw_model_ops, &model,
			       &result);
	if (rc < 0) {
		/* A refused trace says why, in one line. */
		if (!result.message[0] || strchr(result.message, '\n'))
			abort();
	} else {
		walk_model(&model);
	}
	lw_model_fini(&model);
	return 0;
}

#ifndef LW_LIBFUZZER
static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		perror(path);
		return 1;
	}
	do {
		if (len == cap) {
			cap = cap ? 2 * cap : 65536;
			uint8_t *p = realloc(buf, cap);
			if (!p) {
				free(buf);
				fclose(f);
				return 1;
			}
			buf = p;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int status = 0;

	for (int i = 1; i < argc; i++)
		status |= run_file(argv[i]);
	return status;
}
#endif
