/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of usercode.c: whose code a Python file is, from the facts a
 * trace holds about where the interpreter imported it (PYPATH records) and
 * the directories the user names, on hand-made traces:
 *  - a script run from its project: the project's tree is the user's, its
 *    PYTHONPATH=src too; libraries on PYTHONPATH elsewhere, installed with
 *    pip --target (even inside the project), editable elsewhere, the
 *    standard library and site directories are not; a virtual environment
 *    inside the project is not; a sys.path entry the program added
 *    elsewhere counts for nothing;
 *  - a launcher (pytest in the scripts directory): the working directory's
 *    tree is the user's;
 *  - named directories: they and the script are the user's, the rest of
 *    the import path is a library's (a vendored copy in the project);
 *  - the longest directory decides; a name in another directory that
 *    starts alike ("/proj2") is not under "/proj";
 *  - without facts, the path rule; "<string>" is the user's.
 */
#include <stdio.h>
#include <string.h>

#include "lw-test.h"
#include "model.h"
#include "trace-builder.h"
#include "trace-reader.h"
#include "usercode.h"

static const char *const names[] = { "user", "stdlib", "library" };

struct fact {
	uint64_t kind;
	const char *path, *name;
};

/* A model read from a trace of facts (and INFO cwd); returns the trace,
 * which its strings point into, for the caller to free after the model. */
static uint8_t *model_of(struct lw_model *m, const struct fact *facts,
			 size_t n, const char *cwd)
{
	struct out o = { 0 };
	struct lw_trace_result result;
	uint64_t id = 1;

	std_header(&o);
	if (cwd)
		rec_info_str(&o, "cwd", cwd);
	for (size_t i = 0; i < n; i++) {
		uint64_t path = id++, name = 0;

		rec_string(&o, path, facts[i].path);
		if (facts[i].name) {
			name = id++;
			rec_string(&o, name, facts[i].name);
		}
		rec_pypath(&o, facts[i].kind, path, name);
	}
	rec_end(&o, 0);
	REQUIRE(lw_model_init(m) == 0);
	REQUIRE(lw_trace_read(o.data, o.len, &lw_model_ops, m, &result) == 0);
	REQUIRE(lw_model_finish(m) == 0);
	return o.data;
}

static uint64_t code_id;

static void expect(struct lw_user_code *c, const char *file,
		   enum lw_code_origin want, int line)
{
	/* A new code object each time: the cache is checked apart. */
	enum lw_code_origin got =
		lw_user_code_origin(c, ++code_id, file, strlen(file));

	if (got != want)
		lw_test_fail("line %d: %s is %s, expected %s", line, file,
			     names[got], names[want]);
}

#define EXPECT(c, file, want) expect(c, file, want, __LINE__)

/* The facts of `python train.py` in /home/u/proj (a git tree), in a
 * virtual environment, with PYTHONPATH=/home/u/proj/src:/opt/libs. */
static const struct fact project[] = {
	{ LW_PYPATH_STDLIB, "/usr/lib/python3.11", NULL },
	{ LW_PYPATH_STDLIB, "/usr/lib/python3.11/lib-dynload", NULL },
	{ LW_PYPATH_SITE, "/home/u/venv/lib/python3.11/site-packages", NULL },
	{ LW_PYPATH_USER_SITE, "/home/u/.local/lib/python3.11/site-packages",
	  NULL },
	{ LW_PYPATH_SCRIPTS, "/home/u/venv/bin", NULL },
	{ LW_PYPATH_SYS_PATH, "/home/u/proj/tools", NULL },
	{ LW_PYPATH_PYTHONPATH, "/home/u/proj/src", NULL },
	{ LW_PYPATH_PYTHONPATH, "/opt/libs", NULL },
	{ LW_PYPATH_INSTALLED, "/home/u/proj/vendor", NULL },
	{ LW_PYPATH_SYS_PATH, "/home/u/proj/vendor", NULL },
	{ LW_PYPATH_EDITABLE, "/home/u/src/transformers/src",
	  "__editable__.transformers-4.0.pth" },
	{ LW_PYPATH_EDITABLE, "/home/u/proj/pkg/mine", "mine" },
	{ LW_PYPATH_PTH, "/home/u/other", "other.pth" },
	{ LW_PYPATH_SYS_PATH, "/home/u/experiments", NULL },
	{ LW_PYPATH_SCRIPT, "/home/u/proj/tools/train.py", NULL },
	{ LW_PYPATH_CWD, "/home/u/proj", NULL },
	{ LW_PYPATH_PROJECT, "/home/u/proj", "script" },
	{ LW_PYPATH_PROJECT, "/home/u/proj", "cwd" },
};

static void test_project(void)
{
	struct lw_model m;
	struct lw_user_code *c;
	uint8_t *trace;

	trace = model_of(&m, project, sizeof(project) / sizeof(project[0]), NULL);
	REQUIRE(lw_user_code_new(&m, NULL, &c) == 0);
	/* The program's tree. */
	EXPECT(c, "/home/u/proj/tools/train.py", LW_CODE_USER);
	EXPECT(c, "/home/u/proj/models/net.py", LW_CODE_USER);
	EXPECT(c, "/home/u/proj/src/mypkg/loss.py", LW_CODE_USER);
	EXPECT(c, "/home/u/proj/pkg/mine/core.py", LW_CODE_USER);
	EXPECT(c, "/home/u/proj/third_party/lib/x.py", LW_CODE_USER);
	/* Relative to the working directory. */
	EXPECT(c, "models/net.py", LW_CODE_USER);
	EXPECT(c, "<string>", LW_CODE_USER);
	EXPECT(c, "<frozen importlib._bootstrap>", LW_CODE_STDLIB);
	/* A virtual environment inside the project is not the user's. */
	EXPECT(c, "/home/u/proj/.venv/lib/python3.11/site-packages/a.py",
	       LW_CODE_PACKAGE);
	/* pip install --target ./vendor: a library, inside the tree. */
	EXPECT(c, "/home/u/proj/vendor/transformers/trainer.py",
	       LW_CODE_PACKAGE);
	/* Libraries outside the tree. */
	EXPECT(c, "/opt/libs/transformers/loss/loss_utils.py",
	       LW_CODE_PACKAGE);
	EXPECT(c, "/home/u/src/transformers/src/transformers/trainer.py",
	       LW_CODE_PACKAGE);
	EXPECT(c, "/home/u/other/o.py", LW_CODE_PACKAGE);
	EXPECT(c, "/home/u/venv/lib/python3.11/site-packages/torch/nn/f.py",
	       LW_CODE_PACKAGE);
	EXPECT(c, "/home/u/.local/lib/python3.11/site-packages/u.py",
	       LW_CODE_PACKAGE);
	EXPECT(c, "/usr/lib/python3.11/copy.py", LW_CODE_STDLIB);
	EXPECT(c, "/usr/lib/python3.11/lib-dynload/x.py", LW_CODE_STDLIB);
	/* Whole path components: /opt/libs2 is not under /opt/libs. */
	EXPECT(c, "/opt/libs2/x.py", LW_CODE_USER);
	EXPECT(c, "/home/u/proj2/x.py", LW_CODE_USER);
	/* A sys.path entry outside the tree (one the program added, as
	 * pytest does for its tests) counts for nothing. */
	EXPECT(c, "/home/u/experiments/try.py", LW_CODE_USER);
	/* Under no directory: the path decides. */
	EXPECT(c, "/tmp/ipykernel_1/12345.py", LW_CODE_USER);
	EXPECT(c, "/srv/dist-packages/y.py", LW_CODE_PACKAGE);
	/* The same code object asked again: the kept answer. */
	CHECK(lw_user_code_origin(c, 1, "/ignored.py", 11) == LW_CODE_USER);
	lw_user_code_free(c);
	lw_model_fini(&m);
	free(trace);
}

/* `pytest` from /home/u/proj (no version control): the launcher lives in
 * the scripts directory; the tests and the code are under the working
 * directory, on PYTHONPATH=. too. */
static const struct fact launcher[] = {
	{ LW_PYPATH_STDLIB, "/usr/lib/python3.11", NULL },
	{ LW_PYPATH_SITE, "/home/u/venv/lib/python3.11/site-packages", NULL },
	{ LW_PYPATH_SCRIPTS, "/home/u/venv/bin", NULL },
	{ LW_PYPATH_SYS_PATH, "/home/u/venv/bin", NULL },
	{ LW_PYPATH_PYTHONPATH, "/home/u/proj", NULL },
	{ LW_PYPATH_PYTHONPATH, "/opt/libs", NULL },
	{ LW_PYPATH_SCRIPT, "/home/u/venv/bin/pytest", NULL },
	{ LW_PYPATH_CWD, "/home/u/proj", NULL },
};

static void test_launcher(void)
{
	struct lw_model m;
	struct lw_user_code *c;
	uint8_t *trace;

	trace = model_of(&m, launcher, sizeof(launcher) / sizeof(launcher[0]), NULL);
	REQUIRE(lw_user_code_new(&m, NULL, &c) == 0);
	EXPECT(c, "/home/u/proj/tests/test_train.py", LW_CODE_USER);
	EXPECT(c, "/home/u/proj/mypkg/train.py", LW_CODE_USER);
	EXPECT(c, "/home/u/venv/bin/pytest", LW_CODE_PACKAGE);
	EXPECT(c, "/opt/libs/lib.py", LW_CODE_PACKAGE);
	lw_user_code_free(c);
	lw_model_fini(&m);
	free(trace);
}

/* A script without version control, run from its parent directory:
 * its directory and the working directory that holds it are the tree. */
static const struct fact plain[] = {
	{ LW_PYPATH_SYS_PATH, "/work/exp/scripts", NULL },
	{ LW_PYPATH_SYS_PATH, "/work/exp/lib", NULL },
	{ LW_PYPATH_PYTHONPATH, "/work/libs", NULL },
	{ LW_PYPATH_SCRIPT, "/work/exp/scripts/run.py", NULL },
	{ LW_PYPATH_CWD, "/work/exp", NULL },
};

static void test_plain(void)
{
	struct lw_model m;
	struct lw_user_code *c;
	uint8_t *trace;

	trace = model_of(&m, plain, sizeof(plain) / sizeof(plain[0]), NULL);
	REQUIRE(lw_user_code_new(&m, NULL, &c) == 0);
	EXPECT(c, "/work/exp/scripts/run.py", LW_CODE_USER);
	EXPECT(c, "/work/exp/lib/model.py", LW_CODE_USER);
	EXPECT(c, "/work/libs/l.py", LW_CODE_PACKAGE);
	lw_user_code_free(c);
	lw_model_fini(&m);
	free(trace);
}

/* Named directories: the project's models/ and the script are the
 * user's; the vendored copy its script's directory holds is not. */
static void test_named(void)
{
	struct lw_code_dirs dirs = { 0 };
	struct lw_model m;
	struct lw_user_code *c;
	uint8_t *trace;

	trace = model_of(&m, project, sizeof(project) / sizeof(project[0]), NULL);
	REQUIRE(lw_code_dirs_add(&dirs, "/home/u/proj/models/") == 0);
	REQUIRE(lw_code_dirs_add_list(&dirs, ":/home/u/./venv/lib/python3.11/site-packages/mine/../mine::") == 0);
	REQUIRE(dirs.count == 2);
	CHECK(strcmp(dirs.dirs[0], "/home/u/proj/models") == 0);
	CHECK(strcmp(dirs.dirs[1],
		     "/home/u/venv/lib/python3.11/site-packages/mine") == 0);
	REQUIRE(lw_user_code_new(&m, &dirs, &c) == 0);
	EXPECT(c, "/home/u/proj/tools/train.py", LW_CODE_USER);
	EXPECT(c, "/home/u/proj/models/net.py", LW_CODE_USER);
	/* Installed in the site directory, and named: the user's. */
	EXPECT(c, "/home/u/venv/lib/python3.11/site-packages/mine/a.py",
	       LW_CODE_USER);
	EXPECT(c, "/home/u/venv/lib/python3.11/site-packages/torch/f.py",
	       LW_CODE_PACKAGE);
	/* Vendored next to the script, on sys.path: not named, a library. */
	EXPECT(c, "/home/u/proj/tools/third_party/lib.py", LW_CODE_PACKAGE);
	EXPECT(c, "/home/u/experiments/try.py", LW_CODE_PACKAGE);
	EXPECT(c, "/home/u/proj/src/mypkg/loss.py", LW_CODE_PACKAGE);
	EXPECT(c, "/usr/lib/python3.11/copy.py", LW_CODE_STDLIB);
	EXPECT(c, "<stdin>", LW_CODE_USER);
	lw_user_code_free(c);
	lw_code_dirs_fini(&dirs);
	lw_model_fini(&m);
	free(trace);
}

/* A trace without facts: the path rule, and named directories win. */
static void test_no_facts(void)
{
	struct lw_code_dirs dirs = { 0 };
	struct lw_model m;
	struct lw_user_code *c;
	uint8_t *trace;

	trace = model_of(&m, NULL, 0, "/home/u/proj");
	REQUIRE(lw_user_code_new(&m, NULL, &c) == 0);
	EXPECT(c, "/opt/libs/transformers/loss_utils.py", LW_CODE_USER);
	EXPECT(c, "/home/u/venv/lib/python3.11/site-packages/t.py",
	       LW_CODE_PACKAGE);
	EXPECT(c, "/usr/lib/python3.11/copy.py", LW_CODE_STDLIB);
	lw_user_code_free(c);
	REQUIRE(lw_code_dirs_add(&dirs, "/home/u/venv/lib/python3.11/site-packages/t.py") == 0);
	REQUIRE(lw_user_code_new(&m, &dirs, &c) == 0);
	EXPECT(c, "/home/u/venv/lib/python3.11/site-packages/t.py",
	       LW_CODE_USER);
	EXPECT(c, "/opt/libs/transformers/loss_utils.py", LW_CODE_USER);
	lw_user_code_free(c);
	lw_code_dirs_fini(&dirs);
	lw_model_fini(&m);
	free(trace);
}

int main(void)
{
	test_project();
	test_launcher();
	test_plain();
	test_named();
	test_no_facts();
	return lw_test_done("test-usercode");
}
