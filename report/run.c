/* SPDX-License-Identifier: MIT */
/*
 * `leakwatch run`: runs a program with libleakwatch.so preloaded, waits for
 * it, then reports every trace its processes wrote.
 *
 * The shim learns where to write from LEAKWATCH_OUT and appends the absolute
 * path of each trace it opens, one line per write(), to the private file
 * named by LEAKWATCH_MANIFEST: that is how the traces of child processes
 * (each exec'd process writes its own) are found.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "formats.h"
#include "lw-size.h"
#include "lw-report-config.h"
#include "output.h"
#include "trace-file.h"

#define LIBRARY_NAME "libleakwatch.so"


extern char **environ;

static const int forwarded_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define N_FORWARDED (sizeof(forwarded_signals) / sizeof(forwarded_signals[0]))

static volatile sig_atomic_t child_pid;

void lw_run_usage(FILE *out)
{
	fputs("usage: " LW_SYNOPSIS_RUN
	      "\n"
	      "Runs CMD with the leakwatch shim preloaded, then reports the GPU memory that\n"
	      "each of its processes left allocated (on standard error, or in FILE).\n"
	      "\n"
	      "  --trace PATTERN     where traces go (default: $LEAKWATCH_OUT, or\n"
	      "                      leakwatch-%p.trace; %p is the process id)\n"
	      "  --format FORMAT     report format: text (default), json, html, perfetto,\n"
	      "                      folded, github (see `leakwatch help report`)\n"
	      "  -o, --output FILE   write the report to FILE\n"
	      "  --top N, --frames N, --native, --sites  as for `leakwatch report`\n"
	      "  --no-report         only list the traces written\n"
	      "  --max-growth SIZE, --max-reserved-growth SIZE, --max-peak SIZE,\n"
	      "  --max-reserved-peak SIZE, --fail-on KINDS\n"
	      "                      also judge the traces as `leakwatch check` does (also\n"
	      "                      $LEAKWATCH_MAX_GROWTH, $LEAKWATCH_MAX_RESERVED_GROWTH,\n"
	      "                      $LEAKWATCH_MAX_PEAK, $LEAKWATCH_MAX_RESERVED_PEAK,\n"
	      "                      $LEAKWATCH_FAIL_ON); when CMD succeeded but failed\n"
	      "                      the gate, exit with 23\n"
	      "  --min-steps N       steps needed before a trace is judged (default 10)\n"
	      "  --rules FILE, --suppressions FILE, --user-code DIR\n"
	      "                      as for `leakwatch report`\n"
	      "  --torch-allocator async|keep\n"
	      "                      keep (default): leave PyTorch's allocator as it is\n"
	      "                      configured (its tensors are seen through its hooks);\n"
	      "                      async: unless PYTORCH_CUDA_ALLOC_CONF or\n"
	      "                      PYTORCH_ALLOC_CONF is set, run PyTorch with\n"
	      "                      backend:cudaMallocAsync\n"
	      "                      (sets LEAKWATCH_TORCH_ALLOCATOR)\n"
	      "  --trace-detail bounded|full\n"
	      "                      bounded (default): from the first step mark on, what a\n"
	      "                      step makes and frees again is summed per call stack,\n"
	      "                      the rest written whole; full: every allocation and\n"
	      "                      free (sets LEAKWATCH_TRACE_DETAIL)\n"
	      "  -h, --help          show this help\n"
	      "\n"
	      "The shim is $LEAKWATCH_LIB, or " LIBRARY_NAME " from the build tree or the\n"
	      "installation. The exit status is CMD's (128+N if a signal N killed it; 127\n"
	      "if CMD was not found, 126 if it could not be run; 2 for bad usage; 23 when\n"
	      "CMD exited 0 but failed the gate; 24 when CMD exited 0, a gate was\n"
	      "asked for and could not judge: no trace was written, a trace could not\n"
	      "be written or is damaged, every CUDA allocation failed, or no trace has\n"
	      "--min-steps steps).\n",
	      out);
}

static bool readable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, R_OK) == 0;
}

/* Tries dir/rel; on success stores its real path in out (PATH_MAX). */
static bool try_library(const char *dir, const char *rel, char *out,
			char *looked, size_t looked_size)
{
	char path[PATH_MAX];
	size_t used = strlen(looked);

	if (snprintf(path, sizeof(path), "%s%s%s", dir, dir[0] ? "/" : "",
		     rel) >= (int)sizeof(path))
		return false;
	if (readable(path) && realpath(path, out))
		return true;
	snprintf(looked + used, looked_size - used, "%s%s", used ? ", " : "",
		 path);
	return false;
}

static int find_library(char *out)
{
	const char *env = getenv("LEAKWATCH_LIB");
	char exe_dir[PATH_MAX], looked[2048] = "";
	ssize_t n;

	if (env && env[0]) {
		if (readable(env) && realpath(env, out))
			return 0;
		lw_error("LEAKWATCH_LIB=%s: %s", env,
			 errno ? strerror(errno) : "not a readable file");
		return -ENOENT;
	}
	n = readlink("/proc/self/exe", exe_dir, sizeof(exe_dir) - 1);
	if (n > 0) {
		char *slash;

		exe_dir[n] = 0;
		slash = strrchr(exe_dir, '/');
		if (slash)
			*slash = 0;
		/* The build tree: build/report/leakwatch beside
		 * build/interpose/libleakwatch.so. */
		if (try_library(exe_dir, "../interpose/" LIBRARY_NAME, out,
				looked, sizeof(looked)))
			return 0;
		/* The installation, wherever it was moved or unpacked. */
		if (LW_SHIM_FROM_BINDIR[0] &&
		    try_library(exe_dir, LW_SHIM_FROM_BINDIR "/" LIBRARY_NAME,
				out, looked, sizeof(looked)))
			return 0;
	}
	if (try_library(LW_LIBDIR, LIBRARY_NAME, out, looked, sizeof(looked)))
		return 0;
	lw_error("cannot find " LIBRARY_NAME " (looked for %s; set LEAKWATCH_LIB to its path)",
		 looked);
	return -ENOENT;
}

static int set_environment(const char *library, const char *trace_pattern,
			   const char *manifest, const char *torch_allocator,
			   const char *trace_detail)
{
	const char *preload = getenv("LD_PRELOAD");
	char *value = NULL;
	int rc;

	/* ld.so splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(library, " :")) {
		lw_error("cannot preload %s: its path has a space or a colon",
			 library);
		return -EINVAL;
	}
	if (preload && preload[0])
		rc = asprintf(&value, "%s:%s", library, preload);
	else
		rc = asprintf(&value, "%s", library);
	if (rc < 0)
		return -ENOMEM;
	rc = setenv("LD_PRELOAD", value, 1);
	free(value);
	if (rc == 0 && trace_pattern)
		rc = setenv("LEAKWATCH_OUT", trace_pattern, 1);
	if (rc == 0)
		rc = setenv("LEAKWATCH_OUT", "leakwatch-%p.trace", 0);
	if (rc == 0)
		rc = setenv("LEAKWATCH_MANIFEST", manifest, 1);
	if (rc == 0)
		rc = setenv("LEAKWATCH_QUIET", "1", 1);
	/* The gate is judged here, from the traces: the shim's own would
	 * change the status this command reads as the program's. */
	if (rc == 0)
		rc = unsetenv("LEAKWATCH_MAX_GROWTH");
	if (rc == 0)
		rc = unsetenv("LEAKWATCH_MAX_RESERVED_GROWTH");
	if (rc == 0)
		rc = unsetenv("LEAKWATCH_MAX_PEAK");
	if (rc == 0)
		rc = unsetenv("LEAKWATCH_MAX_RESERVED_PEAK");
	if (rc == 0)
		rc = unsetenv("LEAKWATCH_FAIL_ON");
	if (rc == 0 && torch_allocator)
		rc = setenv("LEAKWATCH_TORCH_ALLOCATOR", torch_allocator, 1);
	if (rc == 0 && trace_detail)
		rc = setenv("LEAKWATCH_TRACE_DETAIL", trace_detail, 1);
	return rc == 0 ? 0 : -errno;
}

/*
 * A signal meant for the program. One the terminal generated (Ctrl-C, a
 * hangup: si_code SI_KERNEL) already went to the whole foreground process
 * group, the program included: sending it again would interrupt its
 * clean-up. One sent to leakwatch alone (kill PID) is passed on.
 */
static void forward_signal(int sig, siginfo_t *info, void *context)
{
	pid_t pid = (pid_t)child_pid;
	int saved_errno = errno;

	(void)context;
	if (pid > 0 && (!info || info->si_code != SI_KERNEL))
		kill(pid, sig);
	errno = saved_errno;
}

/* Installs forward_signal() for the signals not ignored (nohup). */
static void install_handlers(struct sigaction *old, bool *installed)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_FORWARDED; i++) {
		installed[i] = false;
		if (sigaction(forwarded_signals[i], NULL, &old[i]) < 0 ||
		    old[i].sa_handler == SIG_IGN)
			continue;
		installed[i] = sigaction(forwarded_signals[i], &sa, NULL) == 0;
	}
}

static void restore_handlers(const struct sigaction *old,
			     const bool *installed)
{
	for (size_t i = 0; i < N_FORWARDED; i++) {
		if (installed[i])
			sigaction(forwarded_signals[i], &old[i], NULL);
	}
}

/*
 * Runs argv; returns its wait status in *status, or a negative errno when
 * it could not be started.
 */
static int run_child(char **argv, int *status)
{
	struct sigaction old[N_FORWARDED];
	bool installed[N_FORWARDED];
	posix_spawnattr_t attr;
	sigset_t block, saved;
	siginfo_t info;
	pid_t pid;
	int rc;

	sigemptyset(&block);
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaddset(&block, forwarded_signals[i]);
	/* Blocked until child_pid is set, so that none is lost. */
	sigprocmask(SIG_BLOCK, &block, &saved);
	install_handlers(old, installed);

	rc = posix_spawnattr_init(&attr);
	if (rc == 0) {
		posix_spawnattr_setsigmask(&attr, &saved);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
		rc = posix_spawnp(&pid, argv[0], NULL, &attr, argv, environ);
		posix_spawnattr_destroy(&attr);
	}
	if (rc != 0) {
		restore_handlers(old, installed);
		sigprocmask(SIG_SETMASK, &saved, NULL);
		return -rc;
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &saved, NULL);

	/* Wait without reaping: until it is reaped, the pid cannot be reused
	 * by another process that a late signal would then hit. */
	do {
		rc = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT);
	} while (rc < 0 && errno == EINTR);
	sigprocmask(SIG_BLOCK, &block, NULL);
	child_pid = 0;
	restore_handlers(old, installed);
	sigprocmask(SIG_SETMASK, &saved, NULL);

	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/*
 * The list of traces, 0600, in a directory of its own (0700) in $TMPDIR.
 * The shim creates the list when it is missing: a process that outlives
 * the run (a daemon the program started) and opens its trace after the
 * run removed the list would make it again, left behind for good. With
 * the directory gone too it cannot, whatever the order.
 */
static int make_manifest(char *dir, size_t dir_size, char *path, size_t size)
{
	const char *tmp = getenv("TMPDIR");
	int fd, rc;

	if (!tmp || !tmp[0])
		tmp = "/tmp";
	if (snprintf(dir, dir_size, "%s/leakwatch-run-XXXXXX", tmp) >=
	    (int)dir_size)
		return -ENAMETOOLONG;
	if (!mkdtemp(dir))
		return -errno;
	if (snprintf(path, size, "%s/traces", dir) >= (int)size) {
		rmdir(dir);
		return -ENAMETOOLONG;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0) {
		rc = -errno;
		rmdir(dir);
		return rc;
	}
	close(fd);
	return 0;
}

static void remove_manifest(const char *dir, const char *path)
{
	/* A process that was opening the list as it was removed may make it
	 * again before the directory goes; each does so once, for its one
	 * trace, so a few tries see the directory empty. */
	for (int tries = 0; tries < 100; tries++) {
		unlink(path);
		if (rmdir(dir) == 0 || (errno != ENOTEMPTY && errno != EEXIST))
			return;
	}
}

/*
 * Reads the manifest into a list of distinct paths, in order: the traces
 * written first (*count of them), then those that could not be written
 * (*failed_count; the shim lists them on a line that starts with a NUL
 * byte). On success *paths (and *text, which the paths point into) are
 * malloc'ed.
 */
static int read_manifest(const char *manifest, char **text, char ***paths,
			 size_t *count, size_t *failed_count)
{
	size_t capacity = 4096, len = 0, n = 0, failed = 0;
	char *buf = malloc(capacity), **list = NULL, **bad_list = NULL;
	int fd = open(manifest, O_RDONLY | O_CLOEXEC);

	*count = *failed_count = 0;
	if (!buf || fd < 0) {
		int err = fd < 0 ? -errno : -ENOMEM;

		if (fd >= 0)
			close(fd);
		free(buf);
		return err;
	}
	for (;;) {
		ssize_t got;

		if (len + 1 >= capacity) {
			char *p = realloc(buf, capacity * 2);

			if (!p)
				goto nomem;
			buf = p;
			capacity *= 2;
		}
		got = read(fd, buf + len, capacity - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	fd = -1;
	buf[len] = 0;
	list = calloc(len / 2 + 1, sizeof(*list));
	if (!list)
		goto nomem;
	bad_list = calloc(len / 2 + 1, sizeof(*bad_list));
	if (!bad_list)
		goto nomem;
	for (char *line = buf, *next; line < buf + len; line = next) {
		bool seen = false, bad = line[0] == 0;
		char **into = bad ? bad_list : list;
		size_t *used = bad ? &failed : &n;

		next = memchr(line, '\n', (size_t)(buf + len - line));
		next = next ? next + 1 : buf + len;
		next[-1] = 0;
		line += bad;
		if (!line[0])
			continue;
		for (size_t i = 0; i < *used && !seen; i++)
			seen = strcmp(into[i], line) == 0;
		if (!seen)
			into[(*used)++] = line;
	}
	memcpy(list + n, bad_list, failed * sizeof(*list));
	free(bad_list);
	*text = buf;
	*paths = list;
	*count = n;
	*failed_count = failed;
	return 0;

nomem:
	if (fd >= 0)
		close(fd);
	free(list);
	free(buf);
	return -ENOMEM;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/*
 * The gate on the traces of a run, judged as `check` judges them (on
 * stderr, after the report): from the report's own read and analysis of
 * each trace, as it is reported, its lines kept until the report is whole.
 */
struct run_gate {
	const struct lw_gate *limits;
	const char *const *paths;
	FILE *lines;		/* the verdicts, until the report is written */
	char *text;
	size_t len;
	size_t judged_count;	/* traces judged from the report's read */
	bool over, judged, few, unjudged;
};

static void note_verdict(struct run_gate *g, int rc)
{
	g->over |= rc == 1;
	g->judged |= rc == 0 || rc == 1;
	g->few |= rc == LW_CHECK_TOO_FEW_STEPS;
	g->unjudged |= rc == LW_CHECK_UNJUDGED;
}

static void judge_reported(void *ctx, size_t i, struct lw_trace_file *tf,
			   int rc, const char *message)
{
	struct run_gate *g = ctx;
	char problem[256];

	snprintf(problem, sizeof(problem), "%s", message);
	note_verdict(g, lw_check_trace(g->lines, g->lines, g->paths[i], tf, rc,
				       problem, sizeof(problem), g->limits));
	g->judged_count = i + 1;
}

/*
 * Reports the traces the run wrote; with a gate (its limits in gate, its
 * steps needed in options), also judges them as `check` does (on stderr).
 * Returns 0, or the exit status the gate asks for: LW_EXIT_GROWTH when one
 * failed it, LW_EXIT_UNJUDGED when one could not be judged (no trace was
 * written, its trace could not be written or is damaged, too few steps,
 * or every allocation failed).
 */
static int report_traces(struct lw_output *file, const char *manifest,
			 bool no_report,
			 const struct lw_output_options *options,
			 const struct lw_gate *gate_limits)
{
	bool gate = lw_gate_any(gate_limits);
	FILE *out = file->file ? file->file : stderr;
	char *text = NULL, **paths = NULL;
	size_t count = 0, failed = 0;
	struct run_gate g = { .limits = gate_limits };
	int rc;

	rc = read_manifest(manifest, &text, &paths, &count, &failed);
	if (rc < 0) {
		lw_error("cannot read the list of traces %s: %s", manifest,
			 strerror(-rc));
		lw_output_close(file, false, NULL, 0);
		return gate ? LW_EXIT_UNJUDGED : 0;
	}
	for (size_t i = 0; i < failed; i++) {
		fflush(out);
		fputs("leakwatch: the trace ", stderr);
		lw_put_text_str(stderr, paths[count + i]);
		fputs(" could not be written (see the warning above): nothing of that process was recorded\n",
		      stderr);
	}
	/* A gate that saw nothing does not pass: a program can allocate
	 * where the shim never ran. */
	if (count == 0 && failed == 0 && gate) {
		lw_error("cannot judge: no trace was written: no CUDA allocation reached the shim (the program made none, or the shim was not loaded where it did: LD_PRELOAD dropped by a launcher or a set-user-ID program, a statically linked program, CUDA reached by other means)");
		g.unjudged = true;
	} else if (count == 0 && failed == 0) {
		lw_error("no trace was written (the program made no CUDA allocation)");
	}
	if (no_report) {
		for (size_t i = 0; i < count; i++) {
			fputs("leakwatch: trace written to ", stderr);
			lw_put_text_str(stderr, paths[i]);
			putc('\n', stderr);
		}
	} else if (count || options->format == &lw_json_renderer) {
		struct lw_output_options o = *options;
		const struct lw_report_then then = {
			.trace = judge_reported,
			.ctx = &g,
		};

		o.json_list = count == 0;
		g.paths = (const char *const *)paths;
		if (gate && count)
			g.lines = open_memstream(&g.text, &g.len);
		rc = lw_report_files_then(out, (const char *const *)paths,
					  count, &o, g.lines ? &then : NULL);
		if (rc < 0)
			lw_error("cannot write the report: %s", strerror(-rc));
	}
	/* Never over a trace of the run, were -o one of them. */
	lw_output_close(file, rc >= 0, (const char *const *)paths, count);
	if (g.lines && fclose(g.lines) == 0 && g.text) {
		fflush(stdout);
		fwrite(g.text, 1, g.len, stderr);
		fflush(stderr);
	}
	free(g.text);
	/* Those the report did not read (--no-report, or it could not
	 * start) are read for the gate alone. */
	for (size_t i = g.judged_count; gate && i < count; i++)
		note_verdict(&g, lw_check_file(stderr, paths[i], gate_limits,
					       options->report.rules,
					       options->report.user_code));
	/* A helper process's trace (a compiler, a data loader worker) has no
	 * steps of its own: the run is judged by those that do, and by none
	 * is no verdict. */
	if (g.few && !g.judged)
		g.unjudged = true;
	if (gate && failed) {
		lw_error("cannot judge: %zu trace%s could not be written",
			 failed, failed == 1 ? "" : "s");
		g.unjudged = true;
	}
	free(paths);
	free(text);
	return g.over ? LW_EXIT_GROWTH : g.unjudged ? LW_EXIT_UNJUDGED : 0;
}

/* The command; options (its user code) released by the caller. */
static int run_command(int argc, char **argv,
		       struct lw_output_options *options)
{
	static const struct option long_options[] = {
		{ "trace", required_argument, NULL, 't' },
		LW_OUTPUT_LONG_OPTIONS,
		{ "no-report", no_argument, NULL, 'R' },
		LW_GATE_LONG_OPTIONS,
		{ "torch-allocator", required_argument, NULL, 'A' },
		{ "trace-detail", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *trace_pattern = NULL, *output = NULL, *torch_allocator = NULL;
	const char *trace_detail = NULL;
	char library[PATH_MAX], manifest[PATH_MAX], manifest_dir[PATH_MAX];
	bool no_report = false;
	struct lw_gate gate = { 0 };
	static const char *const gate_variables[] = {
		"LEAKWATCH_MAX_GROWTH", "LEAKWATCH_MAX_RESERVED_GROWTH",
		"LEAKWATCH_MAX_PEAK", "LEAKWATCH_MAX_RESERVED_PEAK",
		"LEAKWATCH_FAIL_ON",
	};
	struct lw_output file = { 0 };
	struct lw_rules rules;
	int c, rc, status = 0, exit_code;

	opterr = 0;
	/* "+": stop at the first argument that is not an option (CMD). */
	while ((c = getopt_long(argc, argv, "+:o:h", long_options, NULL)) != -1) {
		rc = lw_output_option(c, optarg, options, &output);
		if (rc == 0)
			rc = lw_gate_getopt(&gate, c, optarg);
		if (rc < 0)
			return LW_EXIT_USAGE;
		if (rc > 0)
			continue;
		switch (c) {
		case 't':
			trace_pattern = optarg;
			break;
		case 'R':
			no_report = true;
			break;
		case 'A':
			if (strcmp(optarg, "async") != 0 && strcmp(optarg, "keep") != 0) {
				lw_error("--torch-allocator: '%s' is neither async nor keep",
					 optarg);
				return LW_EXIT_USAGE;
			}
			torch_allocator = optarg;
			break;
		case 'D':
			if (strcmp(optarg, "bounded") != 0 && strcmp(optarg, "full") != 0) {
				lw_error("--trace-detail: '%s' is neither bounded nor full",
					 optarg);
				return LW_EXIT_USAGE;
			}
			trace_detail = optarg;
			break;
		default:
			return lw_last_option(c, argv, lw_run_usage);
		}
	}
	if (optind >= argc) {
		lw_error("run: no command given (usage: leakwatch run [OPTIONS] -- CMD [ARGS...])");
		return LW_EXIT_USAGE;
	}
	/* The gate's variables, each where its option did not say
	 * otherwise (a bad value fails before the run). */
	for (size_t i = 0; i < sizeof(gate_variables) / sizeof(*gate_variables);
	     i++) {
		const char *value = getenv(gate_variables[i]);
		struct lw_gate given = gate;

		if (!value)
			continue;
		if (lw_gate_option(&given, gate_variables[i], value) < 0)
			return LW_EXIT_USAGE;
		if (i == 0 && !gate.growth)
			gate.growth = true, gate.max_growth = given.max_growth;
		else if (i == 1 && !gate.reserved_growth)
			gate.reserved_growth = true,
			gate.max_reserved_growth = given.max_reserved_growth;
		else if (i == 2 && !gate.peak)
			gate.peak = true, gate.max_peak = given.max_peak;
		else if (i == 3 && !gate.reserved_peak)
			gate.reserved_peak = true,
			gate.max_reserved_peak = given.max_reserved_peak;
		else if (i == 4 && !gate.fail_on)
			gate = given;
	}
	gate.min_steps = options->report.min_steps ? options->report.min_steps
						   : LW_DEFAULT_MIN_STEPS;
	if (trace_pattern && !trace_pattern[0]) {
		lw_error("--trace needs a file name pattern");
		return LW_EXIT_USAGE;
	}
	if (find_library(library) < 0)
		return LW_EXIT_USAGE;
	/* Read before the run, so that a bad file fails before it. */
	if (lw_load_rules(options, &rules) < 0 ||
	    lw_load_user_code(options) < 0) {
		lw_rules_fini(&rules);
		return LW_EXIT_USAGE;
	}
	/* Opened before the run, so that a bad path fails before it. */
	if (output && lw_output_open(&file, output, NULL, 0) < 0) {
		lw_rules_fini(&rules);
		return LW_EXIT_USAGE;
	}
	rc = make_manifest(manifest_dir, sizeof(manifest_dir), manifest,
			   sizeof(manifest));
	if (rc < 0) {
		const char *tmp = getenv("TMPDIR");

		lw_error("cannot create a temporary file in %s: %s",
			 tmp && tmp[0] ? tmp : "/tmp", strerror(-rc));
		exit_code = LW_EXIT_USAGE;
		goto out;
	}
	rc = set_environment(library, trace_pattern, manifest,
			     torch_allocator, trace_detail);
	if (rc < 0) {
		if (rc != -EINVAL)
			lw_error("cannot set the environment: %s",
				 strerror(-rc));
		exit_code = LW_EXIT_USAGE;
		goto remove_manifest;
	}
	rc = run_child(argv + optind, &status);
	if (rc == -ENOENT && !strchr(argv[optind], '/')) {
		lw_error("%s: command not found", argv[optind]);
		exit_code = 127;
	} else if (rc == -ENOENT) {
		lw_error("%s: %s", argv[optind], strerror(-rc));
		exit_code = 127;
	} else if (rc == -ENOEXEC) {
		/* A script without a #! line: name its interpreter. */
		lw_error("%s: %s (a script needs a #! line, or its interpreter before it: leakwatch run -- %s %s)",
			 argv[optind], strerror(-rc),
			 has_suffix(argv[optind], ".py") ? "python3" : "sh",
			 argv[optind]);
		exit_code = 126;
	} else if (rc == -EACCES && has_suffix(argv[optind], ".py")) {
		/* A script not marked executable: the same hint. */
		lw_error("%s: %s (make it executable, or name its interpreter: leakwatch run -- python3 %s)",
			 argv[optind], strerror(-rc), argv[optind]);
		exit_code = 126;
	} else if (rc < 0) {
		lw_error("%s: %s", argv[optind], strerror(-rc));
		exit_code = 126;
	} else {
		int verdict = report_traces(&file, manifest, no_report,
					    options, &gate);
		exit_code = exit_status(status);
		/* The program's own failure is never masked. */
		if (verdict && exit_code == 0)
			exit_code = verdict;
	}
remove_manifest:
	remove_manifest(manifest_dir, manifest);
out:
	/* Where the report was not written: nothing left behind. */
	lw_output_close(&file, false, NULL, 0);
	lw_rules_fini(&rules);
	return exit_code;
}

int lw_cmd_run(int argc, char **argv)
{
	struct lw_output_options options = LW_OUTPUT_OPTIONS_DEFAULT;
	int rc = run_command(argc, argv, &options);

	lw_code_dirs_fini(&options.user_code);
	return rc;
}
