/* SPDX-License-Identifier: MIT */
/*
 * Text from a program or a trace (function, file and library names, paths)
 * made safe to print: what the text report and the shim's exit summary
 * write for it, so that a name cannot move a terminal's cursor, change its
 * colours or start a line of its own.
 */
#ifndef LW_TEXT_H
#define LW_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* C0, DEL and C1 controls: what no format shows raw. */
static inline bool lw_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
}

/*
 * Length of the valid UTF-8 sequence at s (1 to 4), or 0 if s does not
 * start one (overlong forms, surrogates and code points above U+10FFFF
 * are invalid). *cp receives the code point.
 */
size_t lw_utf8_sequence(const uint8_t *s, size_t len, uint32_t *cp);

/* The longest escape of one character, with its NUL: a C1 control,
 * two bytes of "\xNN". */
#define LW_TEXT_ESCAPE_MAX 9

/*
 * The text escape of one character: the code point cp of the n bytes at s
 * or, when n is 0, the byte s[0], which starts no UTF-8 sequence. Controls
 * become "\n", "\t" or "\xNN" per byte, and so does a byte that is not
 * UTF-8. Writes the escape, NUL-terminated, to out (LW_TEXT_ESCAPE_MAX
 * bytes) and returns its length; returns 0, writing nothing, when the
 * character stands as it is.
 */
size_t lw_text_escape_char(char *out, uint32_t cp, const uint8_t *s,
			   size_t n);

/*
 * Writes the len bytes of text to out (size bytes, at least 1), each
 * character escaped as lw_text_escape_char() says, NUL-terminated; a
 * character that does not fit whole is left out with all that follows.
 * Returns the length written. Takes no lock and allocates nothing.
 */
size_t lw_text_escape(char *out, size_t size, const void *text, size_t len);

/*
 * Calls fn(item, ctx) for each item of a colon-separated list (a path
 * list: LEAKWATCH_RULES, --user-code...), empty items skipped, until fn
 * returns non-zero. list may be NULL. Returns fn's last return, 0, or
 * -ENOMEM (the list is copied).
 */
int lw_text_each_item(const char *list, int (*fn)(const char *item, void *ctx),
		      void *ctx);

#endif
