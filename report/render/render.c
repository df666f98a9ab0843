/* SPDX-License-Identifier: MIT */
/* Output helpers shared by the renderers. */
#include "render.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "formats.h"

void lw_put_escaped(FILE *out, const void *text, size_t len,
		    lw_escape_fn escape, const void *ctx)
{
	const uint8_t *s = text;
	size_t i = 0;

	while (i < len) {
		uint32_t cp = 0;
		size_t n = lw_utf8_sequence(s + i, len - i, &cp);

		if (!escape(out, cp, s + i, n, ctx))
			fwrite(s + i, 1, n, out);
		i += n ? n : 1;
	}
}

/* For a terminal: controls and bytes that are not UTF-8 as \n, \t, \xNN,
 * so that a trace cannot move the cursor or change colours. */
static bool escape_text(FILE *out, uint32_t cp, const uint8_t *s, size_t n,
			const void *ctx)
{
	char escaped[LW_TEXT_ESCAPE_MAX];

	if (!lw_text_escape_char(escaped, cp, s, n))
		return false;
	fputs(escaped, out);
	return true;
}

void lw_put_text(FILE *out, const void *data, size_t len)
{
	lw_put_escaped(out, data, len, escape_text, NULL);
}

void lw_put_text_str(FILE *out, const char *s)
{
	lw_put_text(out, s, strlen(s));
}

/*
 * For JSON: quote and backslash escaped; controls (valid JSON raw, but not
 * safe to show on a terminal) as \u escapes; with ctx, also what may not
 * stand raw inside an HTML <script> element (see formats.h).
 */
static bool escape_json(FILE *out, uint32_t cp, const uint8_t *s, size_t n,
			const void *script)
{
	if (n == 0)
		fputs("\\ufffd", out);
	else if (cp == '"' || cp == '\\')
		fprintf(out, "\\%c", (char)cp);
	else if (lw_is_control(cp) ||
		 (script && (cp == '<' || cp == '>' || cp == '&' ||
			     cp == 0x2028 || cp == 0x2029)))
		fprintf(out, "\\u%04x", (unsigned)cp);
	else
		return false;
	return true;
}

void lw_put_json_string(FILE *out, const void *data, size_t len)
{
	putc('"', out);
	lw_put_escaped(out, data, len, escape_json, NULL);
	putc('"', out);
}

void lw_put_script_json_string(FILE *out, const void *data, size_t len)
{
	putc('"', out);
	lw_put_escaped(out, data, len, escape_json, "script");
	putc('"', out);
}
