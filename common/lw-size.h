/* SPDX-License-Identifier: MIT */
/* Sizes written by people: "512KiB", "1.5GiB", "10MB", "100". */
#ifndef LW_SIZE_H
#define LW_SIZE_H

#include <stdint.h>

/*
 * Parses a size: a decimal number (digits, optionally a '.' and more
 * digits) followed directly by an optional unit: none or "B" (bytes),
 * "KiB", "MiB", "GiB", "TiB", "PiB" (powers of 1024), "kB"/"KB", "MB",
 * "GB", "TB", "PB" (powers of 1000), also "K", "M", "G", "T", "P" for the
 * binary ones; unit letters in any case. A fraction is rounded down to
 * whole bytes; a plain byte count cannot have one. No signs, spaces or
 * trailing characters. Returns 0 with the size in *out (untouched on
 * failure), or -EINVAL when the text is not a size or does not fit in 64
 * bits.
 */
int lw_parse_size(const char *text, uint64_t *out);

/*
 * Sizes written for people, the same everywhere (the shim's exit summary,
 * live view and growth gate; every report): "512 B", "1.5 MiB" (binary
 * units, one decimal). buf is returned.
 */
#define LW_SIZE_BUF 32
const char *lw_format_size(char buf[LW_SIZE_BUF], uint64_t bytes);

/* "+1.2 MiB": a rate in bytes per step, rounded to whole bytes ("-..."
 * when negative). */
const char *lw_format_rate(char buf[LW_SIZE_BUF], double bytes_per_step);

#endif
