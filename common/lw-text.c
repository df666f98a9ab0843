/* SPDX-License-Identifier: MIT */
#include "lw-text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t lw_utf8_sequence(const uint8_t *s, size_t len, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t n;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

size_t lw_text_escape_char(char *out, uint32_t cp, const uint8_t *s,
			   size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = 0;

	if (n && !lw_is_control(cp))
		return 0;
	if (n == 1 && (cp == '\n' || cp == '\t')) {
		out[len++] = '\\';
		out[len++] = cp == '\n' ? 'n' : 't';
	} else {
		/* A C1 control is two bytes; anything else, one. */
		for (size_t j = 0; j < (n ? n : 1); j++) {
			out[len++] = '\\';
			out[len++] = 'x';
			out[len++] = hex[s[j] >> 4];
			out[len++] = hex[s[j] & 15];
		}
	}
	out[len] = '\0';
	return len;
}

size_t lw_text_escape(char *out, size_t size, const void *text, size_t len)
{
	const uint8_t *s = text;
	char escaped[LW_TEXT_ESCAPE_MAX];
	size_t i = 0, used = 0;

	while (i < len) {
		uint32_t cp = 0;
		size_t n = lw_utf8_sequence(s + i, len - i, &cp);
		size_t e = lw_text_escape_char(escaped, cp, s + i, n);
		const void *piece = e ? (const void *)escaped : s + i;
		size_t piece_len = e ? e : n;

		if (used + piece_len >= size)
			break;
		memcpy(out + used, piece, piece_len);
		used += piece_len;
		i += n ? n : 1;
	}
	out[used] = '\0';
	return used;
}

int lw_text_each_item(const char *list, int (*fn)(const char *item, void *ctx),
		      void *ctx)
{
	char *copy, *item, *save = NULL;
	int rc = 0;

	if (!list || !list[0])
		return 0;
	if (!(copy = strdup(list)))
		return -ENOMEM;
	for (item = strtok_r(copy, ":", &save); item && rc == 0;
	     item = strtok_r(NULL, ":", &save))
		rc = fn(item, ctx);
	free(copy);
	return rc;
}
