/* SPDX-License-Identifier: MIT */
/* Settings from the environment and trace path patterns. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "lw-test.h"

/*
 * Several bad settings at once: each is named in the one warning line (a
 * warning is printed once per process, so this runs first).
 */
static void check_bad_settings_all_named(void)
{
	struct lw_config config;
	char tmpl[] = "/tmp/lw-test-config-XXXXXX", text[512];
	int fd = mkstemp(tmpl), saved = dup(2);

	CHECK(fd >= 0 && saved >= 0);
	if (fd < 0 || saved < 0)
		return;
	setenv("LEAKWATCH_MAX_FRAMES", "lots", 1);
	setenv("LEAKWATCH_QUIET", "perhaps", 1);
	setenv("LEAKWATCH_DISABLE", "2", 1);
	dup2(fd, 2);
	lw_config_load(&config);
	dup2(saved, 2);
	close(saved);
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	unlink(tmpl);
	text[n > 0 ? n : 0] = '\0';
	CHECK(strncmp(text, "leakwatch: warning: LEAKWATCH_DISABLE='2'", 41) == 0);
	CHECK(strstr(text, "LEAKWATCH_QUIET") != NULL);
	CHECK(strstr(text, "LEAKWATCH_MAX_FRAMES") != NULL);
	CHECK(strchr(text, '\n') == text + strlen(text) - 1); /* one line */
	CHECK(config.disabled == 0 && config.quiet == 0);
	CHECK(config.max_frames == LW_DEFAULT_MAX_FRAMES);
	unsetenv("LEAKWATCH_DISABLE");
}

int main(void)
{
	struct lw_config config;
	char path[PATH_MAX], expected[PATH_MAX + 64], cwd[PATH_MAX];

	check_bad_settings_all_named();

	CHECK(lw_parse_bool("1") == 1);
	CHECK(lw_parse_bool("YES") == 1);
	CHECK(lw_parse_bool("off") == 0);
	CHECK(lw_parse_bool("0") == 0);
	CHECK(lw_parse_bool("2") == -1);
	CHECK(lw_parse_bool("maybe") == -1);

	unsetenv("LEAKWATCH_OUT");
	unsetenv("LEAKWATCH_MAX_FRAMES");
	setenv("LEAKWATCH_QUIET", "yes", 1);
	lw_config_load(&config);
	CHECK(config.quiet == 1);
	CHECK(config.max_frames == LW_DEFAULT_MAX_FRAMES);
	CHECK(strcmp(config.out_pattern, LW_DEFAULT_TRACE_PATTERN) == 0);

	/* A bad value warns and falls back to the default. */
	setenv("LEAKWATCH_MAX_FRAMES", "12x", 1);
	setenv("LEAKWATCH_QUIET", "perhaps", 1);
	lw_config_load(&config);
	CHECK(config.max_frames == LW_DEFAULT_MAX_FRAMES);
	CHECK(config.quiet == 0);
	setenv("LEAKWATCH_MAX_FRAMES", "500", 1);
	lw_config_load(&config);
	CHECK(config.max_frames == LW_DEFAULT_MAX_FRAMES);
	setenv("LEAKWATCH_MAX_FRAMES", "30", 1);
	lw_config_load(&config);
	CHECK(config.max_frames == 30);

	/* Patterns: %p, %%, and relative paths made absolute. */
	setenv("LEAKWATCH_OUT", "/tmp/lw-%p-100%%.trace", 1);
	lw_config_load(&config);
	CHECK(lw_config_trace_path(&config, 4242, path, sizeof(path)) == 0);
	CHECK(strcmp(path, "/tmp/lw-4242-100%.trace") == 0);

	setenv("LEAKWATCH_OUT", "sub/run-%p.trace", 1);
	lw_config_load(&config);
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(expected, sizeof(expected), "%s/sub/run-7.trace", cwd);
	CHECK(lw_config_trace_path(&config, 7, path, sizeof(path)) == 0);
	CHECK(strcmp(path, expected) == 0);

	/* An unknown % sequence is kept as written. */
	setenv("LEAKWATCH_OUT", "/tmp/a%zb", 1);
	lw_config_load(&config);
	CHECK(lw_config_trace_path(&config, 1, path, sizeof(path)) == 0);
	CHECK(strcmp(path, "/tmp/a%zb") == 0);

	/* A result that does not fit is an error, not a cut path. */
	setenv("LEAKWATCH_OUT", "/tmp/%p%p%p%p%p%p", 1);
	lw_config_load(&config);
	CHECK(lw_config_trace_path(&config, 123456, path, 20) == -ENAMETOOLONG);

	unsetenv("LEAKWATCH_OUT");
	lw_config_load(&config);
	CHECK(lw_config_trace_path(&config, 99, path, sizeof(path)) == 0);
	snprintf(expected, sizeof(expected), "%s/leakwatch-99.trace", cwd);
	CHECK(strcmp(path, expected) == 0);
	return lw_test_done("test-config");
}
