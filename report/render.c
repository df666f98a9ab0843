/* SPDX-License-Identifier: MIT */
/* Output helpers shared by the renderers. */
#include "render.h"

#include <inttypes.h>
#include <math.h>
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

void lw_put_text(FILE *out, const void *data, size_t len)
{
	const uint8_t *s = data;
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n = lw_utf8_sequence(s + i, len - i, &cp);

		if (n == 1 && cp >= 0x20 && cp != 0x7f) {
			putc((int)cp, out);
		} else if (n > 1 && !(cp >= 0x80 && cp < 0xa0)) {
			fwrite(s + i, 1, n, out);
		} else if (n == 1 && cp == '\n') {
			fputs("\\n", out);
		} else if (n == 1 && cp == '\t') {
			fputs("\\t", out);
		} else {
			/* A C0/C1 control or a byte that is not UTF-8: escape
			 * each byte. */
			for (size_t j = 0; j < (n ? n : 1); j++)
				fprintf(out, "\\x%02x", s[i + j]);
		}
		i += n ? n : 1;
	}
}

void lw_put_text_str(FILE *out, const char *s)
{
	lw_put_text(out, s, strlen(s));
}

void lw_put_json_string(FILE *out, const void *data, size_t len)
{
	const uint8_t *s = data;
	size_t i = 0;

	putc('"', out);
	while (i < len) {
		uint32_t cp;
		size_t n = lw_utf8_sequence(s + i, len - i, &cp);

		if (n == 0) {
			fputs("\\ufffd", out);
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\') {
			putc('\\', out);
			putc((int)cp, out);
		} else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
			/* C0, DEL and C1 controls: valid JSON raw, but not
			 * safe to show on a terminal. */
			fprintf(out, "\\u%04x", (unsigned)cp);
		} else {
			fwrite(s + i, 1, n, out);
		}
		i += n;
	}
	putc('"', out);
}
