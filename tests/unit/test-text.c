/* SPDX-License-Identifier: MIT */
/*
 * The text escape of common/lw-text.c, which the text report and the
 * shim's exit summary share: controls and bytes that are not UTF-8 are
 * escaped, everything else stands, and a cut never splits a character or
 * an escape.
 */
#include <string.h>

#include "lw-test.h"
#include "lw-text.h"

static void check_escape(const char *in, const char *want)
{
	char out[256];
	size_t n = lw_text_escape(out, sizeof(out), in, strlen(in));

	if (strcmp(out, want) != 0 || n != strlen(want))
		lw_test_fail("escape of \"%s\": \"%s\", expected \"%s\"", in,
			     out, want);
}

int main(void)
{
	char out[8];

	check_escape("plain name (file.py:12)", "plain name (file.py:12)");
	check_escape("a\nleakwatch: ok", "a\\nleakwatch: ok");
	check_escape("\x1b[31mred\ttab\r", "\\x1b[31mred\\ttab\\x0d");
	check_escape("\n::error::x", "\\n::error::x");
	check_escape("caf\xc3\xa9 \xe2\x80\xa8", "caf\xc3\xa9 \xe2\x80\xa8");
	check_escape("next\xc2\x85line", "next\\xc2\\x85line");
	check_escape("bad\xff\xc3", "bad\\xff\\xc3");
	/* Cut to the buffer: whole characters and whole escapes only. */
	CHECK_EQ_U64(lw_text_escape(out, sizeof(out), "abcdefghij", 10), 7);
	CHECK(strcmp(out, "abcdefg") == 0);
	CHECK_EQ_U64(lw_text_escape(out, sizeof(out), "abcde\x1b", 6), 5);
	CHECK(strcmp(out, "abcde") == 0);
	CHECK_EQ_U64(lw_text_escape(out, sizeof(out), "abcde\xc3\xa9x", 8), 7);
	CHECK(strcmp(out, "abcde\xc3\xa9") == 0);
	CHECK_EQ_U64(lw_text_escape(out, 1, "abc", 3), 0);
	CHECK(out[0] == '\0');
	return lw_test_done("text");
}
