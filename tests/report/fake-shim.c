/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libleakwatch.so in the tests of `leakwatch run`: preloaded
 * through LEAKWATCH_LIB, it follows the shim's side of the contract (write a
 * trace to LEAKWATCH_OUT with %p replaced by the pid, append its absolute
 * path to LEAKWATCH_MANIFEST in one write) without any CUDA.
 *
 * The trace holds one live 4 KiB device allocation and INFO records of what
 * the process saw: "exe", "cmdline", "ld_preload", "quiet", "out".
 * LW_FAKE_SHIM_MODE: "none" writes nothing, "corrupt" a corrupt trace.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lw-format.h"

static uint8_t trace[8192];
static size_t trace_len;

static void put(const void *p, size_t n)
{
	if (trace_len + n <= sizeof(trace)) {
		memcpy(trace + trace_len, p, n);
		trace_len += n;
	}
}

static void put_byte(uint8_t b)
{
	put(&b, 1);
}

static void put_varint(uint64_t v)
{
	uint8_t buf[LW_VARINT_MAX];

	put(buf, lw_varint_put(buf, v));
}

static void put_le(uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		put_byte((uint8_t)(v >> (8 * i)));
}

static void put_info(const char *key, const void *value, size_t len)
{
	uint8_t payload[4096];
	size_t n = 0;

	if (len > 2048)
		len = 2048;
	n += lw_varint_put(payload + n, strlen(key));
	memcpy(payload + n, key, strlen(key));
	n += strlen(key);
	n += lw_varint_put(payload + n, len);
	memcpy(payload + n, value, len);
	n += len;
	put_byte(LW_REC_INFO);
	put_varint(n);
	put(payload, n);
}

static void put_info_env(const char *key, const char *var)
{
	const char *v = getenv(var);

	if (v)
		put_info(key, v, strlen(v));
}

/* pattern with each %p replaced by the pid, made absolute. */
static int trace_path(const char *pattern, char *out, size_t size)
{
	size_t n = 0;

	if (pattern[0] != '/') {
		if (!getcwd(out, size - 1))
			return -1;
		n = strlen(out);
		out[n++] = '/';
	}
	for (const char *p = pattern; *p && n + 16 < size; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n += (size_t)snprintf(out + n, size - n, "%d",
					      (int)getpid());
			p++;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = 0;
	return 0;
}

__attribute__((constructor)) static void fake_shim_start(void)
{
	const char *mode = getenv("LW_FAKE_SHIM_MODE");
	const char *pattern = getenv("LEAKWATCH_OUT");
	const char *manifest = getenv("LEAKWATCH_MANIFEST");
	char path[PATH_MAX + 2], exe[PATH_MAX], cmdline[2048];
	ssize_t n;
	int fd;

	if (!pattern || (mode && strcmp(mode, "none") == 0))
		return;
	if (trace_path(pattern, path, sizeof(path) - 1) < 0)
		return;

	put(LW_TRACE_MAGIC, LW_TRACE_MAGIC_SIZE);
	put_le(LW_TRACE_VERSION, 2);
	put_le(LW_TRACE_HEADER_SIZE, 2);
	put_le(0, 4);
	put_le(0, 8);
	put_le((uint64_t)getpid(), 4);
	put_le(0, 4);
	n = readlink("/proc/self/exe", exe, sizeof(exe));
	if (n > 0)
		put_info("exe", exe, (size_t)n);
	fd = open("/proc/self/cmdline", O_RDONLY);
	if (fd >= 0) {
		n = read(fd, cmdline, sizeof(cmdline));
		if (n > 0)
			put_info("cmdline", cmdline, (size_t)n);
		close(fd);
	}
	put_info_env("ld_preload", "LD_PRELOAD");
	put_info_env("quiet", "LEAKWATCH_QUIET");
	put_info_env("out", "LEAKWATCH_OUT");
	if (mode && strcmp(mode, "corrupt") == 0)
		put_byte(0x17);
	put_byte(LW_REC_ALLOC_DEVICE);
	put_varint(lw_zigzag_encode(0x7f0000000000));
	put_varint(4096);
	put_varint(0);
	put_byte(LW_REC_END);
	put_varint(2);
	put_varint(1);
	put_varint(0);

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, trace, trace_len) != (ssize_t)trace_len) {
		close(fd);
		return;
	}
	close(fd);
	if (manifest && manifest[0]) {
		size_t len = strlen(path);

		fd = open(manifest, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd < 0)
			return;
		path[len] = '\n';
		if (write(fd, path, len + 1) < 0)
			path[len] = 0;
		close(fd);
	}
}
