/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: any bytes, read as a trace into the model, then the
 * model's views and growth judged as a report would. A bad trace must be
 * refused with a message; nothing may crash, read out of bounds, overflow
 * or allocate in proportion to a count the input claims.
 *
 * A trace with checksummed blocks (lw-format.h) is read as it is, which
 * fuzzes the checks, and read again with every block's checksum made right
 * for its bytes, which fuzzes what lies behind them: a mutant almost never
 * passes a checksum by chance. A read that passes every checksum must not
 * call the trace damaged.
 *
 * Without -fsanitize=fuzzer (the regression build), main() runs the
 * target once on each file named on the command line.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "growth.h"
#include "lw-checksum.h"
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

static void read_one(const uint8_t *data, size_t size, bool resealed)
{
	static const uint8_t empty[1];
	struct lw_trace_result result;
	struct lw_model model;

	if (lw_model_init(&model) < 0)
		return;
	memset(&result, 0, sizeof(result));
	int rc = lw_trace_read(size ? data : empty, size, &lw_model_ops, &model,
			       &result);
	if (rc < 0) {
		/* A refused trace says why, in one line. */
		if (!result.message[0] || strchr(result.message, '\n'))
			abort();
	} else {
		/* Damage says which block, in one line. */
		if (result.damaged &&
		    (!result.message[0] || strchr(result.message, '\n') ||
		     result.damaged_block == 0))
			abort();
		/* Blocks whose checksums were all made right fail none. */
		if (resealed && result.damaged &&
		    strstr(result.message, "fails its checksum"))
			abort();
		walk_model(&model);
	}
	lw_model_fini(&model);
}

/*
 * Makes every checksum of a checksummed trace right for its block's bytes,
 * as far as its CHECKSUM records can be followed from the header; returns
 * whether the copy is worth reading (it has such blocks).
 */
static bool reseal(uint8_t *p, size_t size)
{
	size_t header, at;
	uint64_t chain;
	bool any = false;

	if (size < LW_TRACE_HEADER_SIZE)
		return false;
	header = (size_t)(p[10] | p[11] << 8);
	if (header < LW_TRACE_HEADER_SIZE || header > size)
		return false;
	chain = lw_checksum(0, p, header);
	for (at = header; size - at >= LW_CHECKSUM_RECORD_SIZE &&
			  p[at] == LW_REC_CHECKSUM &&
			  p[at + 1] == LW_CHECKSUM_PAYLOAD;) {
		size_t len = (size_t)p[at + 2] | (size_t)p[at + 3] << 8 |
			     (size_t)p[at + 4] << 16 | (size_t)p[at + 5] << 24;
		size_t start = at + LW_CHECKSUM_RECORD_SIZE;

		if (len > size - start || len > LW_TRACE_RECORD_MAX)
			break;
		chain = lw_checksum(chain, p + start, len);
		lw_checksum_record(p + at, (uint32_t)len, chain);
		at = start + len;
		any = true;
	}
	return any;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	read_one(data, size, false);
	if (size < LW_TRACE_HEADER_SIZE || !(copy = malloc(size)))
		return 0;
	memcpy(copy, data, size);
	if (reseal(copy, size))
		read_one(copy, size, true);
	free(copy);
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
