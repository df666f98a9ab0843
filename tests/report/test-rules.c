/* SPDX-License-Identifier: MIT */
/*
 * The diagnosis rules parser (report/analyse/rules.c): the shipped rules.conf
 * and good lines read; what they say is what the lookups answer; each bad
 * line is refused with a one-line message naming its line and what is wrong,
 * and leaves what was read before it intact.
 *
 *     test-rules RULES.CONF DIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lw-test.h"
#include "rules.h"

static char dir[4096];

static const char *write_file(const char *name, const char *text)
{
	static char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	REQUIRE(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void good_lines(void)
{
	struct lw_rules r;
	char message[256] = "";
	const char *path = write_file("good.rules",
		"# a comment\n"
		"\n"
		"tag loss   my_loss   */train.py   # trailing comment\n"
		"tag cache  *         */cache.py\n"
		"transient-phase  Text_Encoder*\n"
		"fix retained-loss keep loss.item()\n"
		"fix retained-loss keep loss.item() instead\n"
		"fix cache-growth bucket the lengths\n");

	lw_rules_init(&r);
	CHECK(lw_rules_add_file(&r, path, message, sizeof(message)) == 0);
	CHECK(lw_rules_frame_tags(&r, "my_loss", "/job/train.py", NULL) ==
	      LW_TAG_LOSS);
	/* The last part of a qualified name matches too. */
	CHECK(lw_rules_frame_tags(&r, "Trainer.my_loss", "/job/train.py",
				  NULL) == LW_TAG_LOSS);
	CHECK(lw_rules_frame_tags(&r, "my_loss", "/job/other.py", NULL) == 0);
	CHECK(lw_rules_frame_tags(&r, "get", "/x/cache.py", NULL) ==
	      LW_TAG_CACHE);
	/* Phases match their glob whatever the case. */
	CHECK(lw_rules_transient_phase(&r, "text_encoder_1"));
	CHECK(!lw_rules_transient_phase(&r, "train"));
	/* A later fix replaces an earlier one. */
	CHECK(r.fixes[LW_CATEGORY_RETAINED_LOSS] &&
	      strcmp(r.fixes[LW_CATEGORY_RETAINED_LOSS],
		     "keep loss.item() instead") == 0);
	/* The pool's verdict by the name it had before. */
	CHECK(r.fixes[LW_CATEGORY_CACHE_GROWTH] &&
	      strcmp(r.fixes[LW_CATEGORY_CACHE_GROWTH],
		     "bucket the lengths") == 0);
	CHECK(strcmp(lw_category_name(LW_CATEGORY_CACHE_GROWTH),
		     "pool-fragmentation") == 0);
	lw_rules_fini(&r);
}

static void shipped(const char *conf)
{
	struct lw_rules r;
	char message[256] = "";

	lw_rules_init(&r);
	CHECK(lw_rules_add_file(&r, conf, message, sizeof(message)) == 0);
	if (message[0])
		lw_test_fail("rules.conf: %s", message);
	CHECK(lw_rules_frame_tags(&r, "_call_impl",
				  "/v/site-packages/torch/nn/modules/module.py",
				  NULL) & LW_TAG_FORWARD);
	CHECK(r.fixes[LW_CATEGORY_RETAINED_LOSS] != NULL);
	lw_rules_fini(&r);
}

/* A file of good lines and, at line 3, one bad line: refused, naming the
 * line and what is wrong in one line. */
static void bad_line(const char *bad, const char *what)
{
	struct lw_rules r;
	char text[512], message[256] = "";
	const char *path;

	snprintf(text, sizeof(text),
		 "tag loss my_loss */train.py\n# fine so far\n%s\n"
		 "tag copy deepcopy */copy.py\n", bad);
	path = write_file("bad.rules", text);
	lw_rules_init(&r);
	if (lw_rules_add_file(&r, path, message, sizeof(message)) >= 0)
		lw_test_fail("'%s' was accepted", bad);
	else if (strncmp(message, "line 3: ", 8) != 0 ||
		 !strstr(message, what) ||
		 strchr(message, '\n'))
		lw_test_fail("'%s': message '%s', expected line 3 and '%s'",
			     bad, message, what);
	lw_rules_fini(&r);
}

static void suppressions(void)
{
	struct lw_rules r;
	char message[256] = "";
	char good[4200], bad[4200];

	snprintf(good, sizeof(good), "%s", write_file("good.supp",
		 "# ours\nleak:warm_cache\nleak:*lru*\n"));
	snprintf(bad, sizeof(bad), "%s", write_file("bad.supp",
		 "leak:ok\nleak warm\n"));

	lw_rules_init(&r);
	CHECK(lw_rules_add_suppressions(&r, good, message,
					sizeof(message)) == 0);
	CHECK(lw_rules_frame_suppressed(&r, "warm_cache", "/a.py", NULL));
	CHECK(lw_rules_frame_suppressed(&r, "functools.lru_wrapper", NULL,
					NULL));
	CHECK(!lw_rules_frame_suppressed(&r, "train_step", "/a.py", NULL));
	CHECK(lw_rules_add_suppressions(&r, bad, message, sizeof(message)) < 0);
	if (strncmp(message, "line 2: ", 8) != 0)
		lw_test_fail("bad suppression: message '%s'", message);
	/* What was read before stays. */
	CHECK(lw_rules_frame_suppressed(&r, "warm_cache", "/a.py", NULL));
	lw_rules_fini(&r);
	message[0] = '\0';
	lw_rules_init(&r);
	CHECK(lw_rules_add_file(&r, "/nonexistent/x.rules", message,
				sizeof(message)) == -ENOENT);
	CHECK(message[0] != '\0');
	lw_rules_fini(&r);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-rules RULES.CONF DIR\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[2]);
	good_lines();
	shipped(argv[1]);
	bad_line("tag sparkle my_loss */train.py", "sparkle");
	bad_line("tag loss", "tag");
	bad_line("fix no-such-category do something", "no-such-category");
	bad_line("fix retained-loss", "fix");
	bad_line("transient-phase", "transient-phase");
	bad_line("frobnicate everything", "frobnicate");
	suppressions();
	return lw_test_done("test-rules");
}
