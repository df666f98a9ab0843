/* SPDX-License-Identifier: MIT */
/*
 * Symbolization of return addresses with libdwfl, in an offline session:
 * each module of the trace is reported with dwfl_report_elf() at the load
 * bias the trace recorded, on first use. Inlined calls are expanded the way
 * eu-addr2line -i does: the DWARF scopes around the address give one frame
 * per inlined function, each placed at the call site recorded in the next.
 *
 * What it costs lies in the frameworks' libraries: hundreds of thousands of
 * symbols, and no DWARF. Function names come from the symbol table read
 * directly (elf-symbols.h), for every frame of the trace in that library
 * in one pass, instead of libdwfl's pass over the whole table and its
 * names for each address. What an address resolved to is kept by the
 * library's build id (symbol-cache.h): the next report of the job, and the
 * other traces of a report, find it there without opening the library.
 *
 * libdw is not known to be safe from several threads: every use of it
 * (and of a symbolizer's modules) is under one lock, so that traces read
 * on several threads (trace-pool.h) may each symbolize.
 */
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-symbols.h"
#include "lw-coderoots.h"
#include "lw-hash.h"
#include "lw-report-config.h"
#include "symbol-cache.h"

#if LW_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#endif

#if LW_HAVE_CXA_DEMANGLE
/* From libstdc++ (<cxxabi.h>, which is C++); it has C linkage. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);
#endif

enum module_state {
	MODULE_UNTRIED,
	MODULE_READY,
	MODULE_UNUSABLE,
};

struct sym_module {
	const struct lw_trace_module *record;
	char *path;		/* NUL-terminated copy of the recorded path */
	const char *basename;
	enum module_state state;
#if LW_HAVE_LIBDW
	Dwfl_Module *dwfl_module;
	/* The file, opened once its first address is asked for (checked):
	 * its symbol table read directly, and, keyed by its build id, its
	 * entries in the symbol cache (NULL: none). */
	bool checked;
	int fd;			/* -1: not open */
	struct lw_elf *elf;
	struct lw_symcache *cache;
	/* Every frame of the trace in the module, and the symbol each is
	 * in (lw_elf_lookup), once one is asked for. */
	uint64_t *pcs;
	struct lw_elf_match *matches;
	size_t pc_count;
	bool looked_up;
#endif
};

struct cache_slot {
	uint64_t address;
	struct lw_symbol *symbol;	/* NULL: empty slot */
};

struct lw_symbolizer {
	const struct lw_model *model;
	struct sym_module *modules;
	size_t module_count;
#if LW_HAVE_LIBDW
	Dwfl *dwfl;
#endif
	struct cache_slot *cache;
	size_t cache_capacity;	/* a power of two */
	size_t cache_used;
	char **notes;
	size_t note_count;
	bool noted_no_libdw;
};

static pthread_mutex_t symbolize_lock = PTHREAD_MUTEX_INITIALIZER;

bool lw_symbolizer_have_libdw(void)
{
	return LW_HAVE_LIBDW;
}

__attribute__((format(printf, 2, 3)))
static int add_note(struct lw_symbolizer *s, const char *fmt, ...)
{
	char **notes;
	char *text;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	notes = realloc(s->notes, (s->note_count + 1) * sizeof(*notes));
	if (!notes) {
		free(text);
		return -ENOMEM;
	}
	s->notes = notes;
	notes[s->note_count++] = text;
	return 0;
}

struct lw_symbolizer *lw_symbolizer_new(const struct lw_model *model)
{
	struct lw_symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->model = model;
	s->cache_capacity = 256;
	s->cache = calloc(s->cache_capacity, sizeof(*s->cache));
	if (model->meta.module_count)
		s->modules = calloc(model->meta.module_count, sizeof(*s->modules));
	if (!s->cache || (model->meta.module_count && !s->modules))
		goto error;
	for (size_t i = 0; i < model->meta.module_count; i++) {
		const struct lw_trace_module *rec = &model->meta.modules[i];
		struct sym_module *m = &s->modules[i];
		const char *slash;

		m->record = rec;
#if LW_HAVE_LIBDW
		m->fd = -1;
#endif
		m->path = strndup((const char *)rec->path.data, rec->path.len);
		if (!m->path)
			goto error;
		s->module_count = i + 1;
		slash = strrchr(m->path, '/');
		m->basename = slash ? slash + 1 : m->path;
	}
	return s;

error:
	lw_symbolizer_free(s);
	return NULL;
}

static void free_symbol(struct lw_symbol *sym)
{
	for (unsigned i = 0; i < sym->frame_count; i++) {
		free((char *)sym->frames[i].function);
		free((char *)sym->frames[i].file);
	}
	free(sym->frames);
	free(sym);
}

void lw_symbolizer_free(struct lw_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->cache && i < s->cache_capacity; i++) {
		if (s->cache[i].symbol)
			free_symbol(s->cache[i].symbol);
	}
	free(s->cache);
	pthread_mutex_lock(&symbolize_lock);
	for (size_t i = 0; i < s->module_count; i++) {
		struct sym_module *m = &s->modules[i];

		free(m->path);
#if LW_HAVE_LIBDW
		lw_elf_free(m->elf);
		if (m->fd >= 0)
			close(m->fd);
		lw_symcache_put(m->cache);
		free(m->pcs);
		free(m->matches);
#endif
	}
#if LW_HAVE_LIBDW
	if (s->dwfl)
		dwfl_end(s->dwfl);
#endif
	pthread_mutex_unlock(&symbolize_lock);
	free(s->modules);
	for (size_t i = 0; i < s->note_count; i++)
		free(s->notes[i]);
	free(s->notes);
	free(s);
}

size_t lw_symbolizer_notes(const struct lw_symbolizer *s,
			   const char *const **notes)
{
	*notes = (const char *const *)s->notes;
	return s->note_count;
}

/* The module covering pc; the latest record wins where they overlap (a
 * library unloaded and another loaded in its place). */
static struct sym_module *find_module(struct lw_symbolizer *s, uint64_t pc)
{
	for (size_t i = s->module_count; i-- > 0;) {
		const struct lw_trace_module *rec = s->modules[i].record;

		if (pc >= rec->start && pc < rec->end)
			return &s->modules[i];
	}
	return NULL;
}

static char *demangle(const char *name)
{
#if LW_HAVE_CXA_DEMANGLE
	if (name[0] == '_' && name[1] == 'Z') {
		int status = -1;
		char *d = __cxa_demangle(name, NULL, NULL, &status);

		if (d && status == 0)
			return d;
		free(d);
	}
#endif
	return strdup(name);
}

/*
 * file, made absolute against dir when relative, with "." and ".." resolved
 * by name: compilers record paths like "../src/x.c" relative to the build
 * directory, or "/build/../src/x.c". A copy of file when it is relative and
 * dir is unknown or relative itself; dir when file is empty.
 */
static char *absolute_path(const char *dir, const char *file)
{
	if (file[0] == '/')
		return lw_code_path_normalise(NULL, file, strlen(file));
	if (!dir || dir[0] != '/')
		return strdup(file);
	if (!file[0])
		file = ".";
	return lw_code_path_normalise(dir, file, strlen(file));
}

/* Appends a frame taking copies of function (demangled) and file (made
 * absolute against comp_dir). */
static int push_frame(struct lw_symbol *sym, const char *function,
		      const char *file, unsigned line, const char *comp_dir)
{
	struct lw_sym_frame *frames, *f;

	frames = realloc(sym->frames, (sym->frame_count + 1) * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	sym->frames = frames;
	f = &frames[sym->frame_count];
	f->function = function ? demangle(function) : NULL;
	f->file = file ? absolute_path(comp_dir, file) : NULL;
	f->line = line;
	if ((function && !f->function) || (file && !f->file)) {
		free((char *)f->function);
		free((char *)f->file);
		return -ENOMEM;
	}
	sym->frame_count++;
	return 0;
}

#if LW_HAVE_LIBDW
static char *debuginfo_path;

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static int open_module(struct lw_symbolizer *s, struct sym_module *m)
{
	const struct lw_trace_module *rec = m->record;
	const unsigned char *bits;
	GElf_Addr vaddr;
	struct stat st;
	int n, fd;

	m->state = MODULE_UNUSABLE;
	if (m->path[0] != '/')
		return 0; /* [vdso], or no file name: nothing to open */
	if (!s->dwfl) {
		s->dwfl = dwfl_begin(&offline_callbacks);
		if (!s->dwfl)
			return add_note(s, "cannot start libdwfl: %s",
					dwfl_errmsg(-1));
	}
	/* Opened here, not by libdwfl: a path in a trace could name a FIFO
	 * or a device, and reading one could block forever. The file
	 * check_module() read, when it did. */
	if (m->fd >= 0)
		fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0);
	else
		fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return add_note(s, "no symbols for %s (%s): its frames are shown as offsets",
				m->path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return add_note(s, "no symbols for %s (not a regular file): its frames are shown as offsets",
				m->path);
	}
	dwfl_report_begin_add(s->dwfl);
	m->dwfl_module = dwfl_report_elf(s->dwfl, m->path, m->path, fd,
					 rec->load_bias, false);
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (!m->dwfl_module) {
		close(fd); /* consumed only on success */
		return add_note(s, "no symbols for %s (%s): its frames are shown as offsets",
				m->path, dwfl_errmsg(-1));
	}
	/* A rebuilt file would give plausible but wrong names: refuse it. */
	n = dwfl_module_build_id(m->dwfl_module, &bits, &vaddr);
	if (rec->build_id.len && n > 0 &&
	    ((size_t)n != rec->build_id.len ||
	     memcmp(bits, rec->build_id.data, (size_t)n) != 0))
		return add_note(s, "%s changed since the trace was written (its build-id differs): its frames are shown as offsets",
				m->path);
	m->state = MODULE_READY;
	return 0;
}

/*
 * Opens the module's file and reads its headers (not its symbols), once:
 * with a build id (the trace's, when it recorded one), its addresses may
 * come from the symbol cache without libdwfl. Whatever fails here is left
 * to open_module(), which says why in a note.
 */
static void check_module(struct sym_module *m)
{
	const struct lw_trace_module *rec = m->record;
	const uint8_t *bits;
	struct stat st;
	size_t len;
	int fd;

	m->checked = true;
	if (m->path[0] != '/')
		return;
	fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    lw_elf_open(fd, &m->elf) < 0) {
		close(fd);
		return;
	}
	m->fd = fd;
	/* The file's build id names what is cached; a trace that recorded
	 * another one was written for another file (open_module() notes). */
	len = lw_elf_build_id(m->elf, &bits);
	if (len && (!rec->build_id.len ||
		    (len == rec->build_id.len &&
		     memcmp(bits, rec->build_id.data, len) == 0)))
		m->cache = lw_symcache_get(bits, len, &(struct lw_symcache_stamp){
			.size = (uint64_t)st.st_size,
			.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
				    (uint64_t)st.st_mtim.tv_nsec,
		});
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The symbols of every frame of the trace in m's range, in one pass over
 * its table: the frames a report shows are among them, and which those
 * are is the renderers' to say, one at a time.
 */
static int look_up_frames(struct lw_symbolizer *s, struct sym_module *m,
			  uint64_t bias)
{
	const struct lw_stack_table *stacks = &s->model->stacks;
	const struct lw_trace_module *rec = m->record;
	size_t n = 0;

	m->looked_up = true;
	for (size_t i = 0; i < stacks->frame_count; i++) {
		uint64_t a = stacks->frames[i];

		n += a && a - 1 >= rec->start && a - 1 < rec->end;
	}
	if (n == 0)
		return 0;
	m->pcs = malloc(n * sizeof(*m->pcs));
	if (!m->pcs)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < stacks->frame_count; i++) {
		uint64_t a = stacks->frames[i];

		if (a && a - 1 >= rec->start && a - 1 < rec->end)
			m->pcs[n++] = a - 1;
	}
	qsort(m->pcs, n, sizeof(*m->pcs), compare_u64);
	m->pc_count = 0;
	for (size_t i = 0; i < n; i++) {
		if (m->pc_count == 0 || m->pcs[m->pc_count - 1] != m->pcs[i])
			m->pcs[m->pc_count++] = m->pcs[i];
	}
	m->matches = calloc(m->pc_count, sizeof(*m->matches));
	if (!m->matches)
		return -ENOMEM;
	/* A file that cannot be read now leaves every frame to libdwfl. */
	lw_elf_lookup(m->elf, bias, m->pcs, m->pc_count, m->matches);
	return 0;
}

/*
 * The name of the symbol holding pc, as dwfl_module_addrinfo() gives it
 * (NULL: none), into *name, malloc'ed. From the symbol table read directly
 * where it answers, else from libdwfl.
 */
static int symbol_name(struct lw_symbolizer *s, struct sym_module *m,
		       uint64_t pc, char **name)
{
	struct lw_elf_match match = { .answer = LW_ELF_UNDECIDED };
	const char *found;
	GElf_Off offset;
	GElf_Sym elf_sym;

	*name = NULL;
	if (m->elf && lw_elf_can_lookup(m->elf)) {
		Dwarf_Addr bias;
		size_t lo = 0, hi;
		int rc;

		/* libdwfl's bias for the module's symbols. */
		if (!dwfl_module_getelf(m->dwfl_module, &bias))
			goto ask_libdwfl;
		if (!m->looked_up && (rc = look_up_frames(s, m, bias)) < 0)
			return rc;
		for (hi = m->pc_count; lo < hi;) {
			size_t mid = lo + (hi - lo) / 2;

			if (m->pcs[mid] < pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < m->pc_count && m->pcs[lo] == pc)
			match = m->matches[lo];
		else
			/* Not a frame of a stack: this one alone. */
			lw_elf_lookup(m->elf, bias, &pc, 1, &match);
		if (match.answer == LW_ELF_FOUND &&
		    lw_elf_symbol_name(m->elf, &match, name) == 0)
			return 0;
	}
ask_libdwfl:
	found = dwfl_module_addrinfo(m->dwfl_module, pc, &offset, &elf_sym,
				     NULL, NULL, NULL);
	if (found && !(*name = strdup(found)))
		return -ENOMEM;
	return 0;
}

static bool is_function_scope(Dwarf_Die *die)
{
	int tag = dwarf_tag(die);

	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name,
						     &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(
			die, DW_AT_MIPS_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name,
							     &attr));
	return name;
}

/* The call site of an inlined subroutine: file and line in the caller. */
static void call_site(Dwarf_Die *cudie, Dwarf_Die *inlined,
		      const char **file, unsigned *line)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word value;

	*file = NULL;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr),
			    &value) == 0)
		*line = value > UINT32_MAX ? 0 : (unsigned)value;
	if (dwarf_getsrcfiles(cudie, &files, NULL) == 0 &&
	    dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr),
			    &value) == 0)
		*file = dwarf_filesrc(files, value, NULL, NULL);
}

/*
 * The compilation unit holding pc. libdwfl finds it through .debug_aranges,
 * which clang does not emit by default: then the units' own address ranges
 * are searched.
 */
static Dwarf_Die *find_cu(Dwfl_Module *mod, uint64_t pc, Dwarf_Addr *bias)
{
	Dwarf_Die *cudie = dwfl_module_addrdie(mod, pc, bias);

	if (cudie)
		return cudie;
	for (cudie = dwfl_module_nextcu(mod, NULL, bias); cudie;
	     cudie = dwfl_module_nextcu(mod, cudie, bias)) {
		if (dwarf_haspc(cudie, pc - *bias) > 0)
			return cudie;
	}
	return NULL;
}

static int resolve_dwfl(struct lw_symbolizer *s, struct sym_module *m,
			uint64_t pc, struct lw_symbol *sym)
{
	Dwfl_Module *mod = m->dwfl_module;
	const char *file = NULL, *comp_dir = NULL;
	char *elf_name;
	unsigned line = 0;
	Dwarf_Die *cudie, *scopes = NULL;
	Dwarf_Addr bias = 0;
	bool open_inline = false;
	int nscopes = 0, rc;

	if ((rc = symbol_name(s, m, pc, &elf_name)) < 0)
		return rc;
	cudie = find_cu(mod, pc, &bias);
	if (cudie) {
		Dwarf_Attribute attr;
		Dwarf_Line *src = dwarf_getsrc_die(cudie, pc - bias);
		int lineno = 0;

		if (src && dwarf_lineno(src, &lineno) == 0 && lineno > 0)
			line = (unsigned)lineno;
		if (src)
			file = dwarf_linesrc(src, NULL, NULL);
		comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir,
						       &attr));
		nscopes = dwarf_getscopes(cudie, pc - bias, &scopes);
	}
	for (int i = 0; i < nscopes && rc == 0; i++) {
		Dwarf_Die *die = &scopes[i];
		const char *name;

		if (!is_function_scope(die))
			continue;
		name = die_name(die);
		rc = push_frame(sym, name ? name : elf_name, file, line,
				comp_dir);
		open_inline = dwarf_tag(die) == DW_TAG_inlined_subroutine;
		if (!open_inline)
			break;
		call_site(cudie, die, &file, &line);
	}
	free(scopes);
	/* No DWARF, or the chain of inlined calls did not reach the function
	 * that holds them: the symbol table names it. */
	if (rc == 0 && (sym->frame_count == 0 || open_inline))
		rc = push_frame(sym, elf_name, file, line, comp_dir);
	free(elf_name);
	return rc;
}
#endif

static int resolve(struct lw_symbolizer *s, uint64_t address,
		   struct lw_symbol *sym)
{
	/* Return addresses: the call is the instruction before. */
	uint64_t pc = address ? address - 1 : 0;
	struct sym_module *m = find_module(s, pc);
	int rc;

	sym->address = address;
	if (!m)
		return push_frame(sym, NULL, NULL, 0, NULL);
	sym->module = m->path;
	sym->offset = address - m->record->load_bias;
#if LW_HAVE_LIBDW
	if (!m->checked)
		check_module(m);
	if (m->cache) {
		rc = lw_symcache_find(m->cache, pc - m->record->load_bias, sym);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	if (m->state == MODULE_UNTRIED && (rc = open_module(s, m)) < 0)
		return rc;
	if (m->state == MODULE_READY) {
		rc = resolve_dwfl(s, m, pc, sym);
		if (rc == 0 && m->cache)
			rc = lw_symcache_add(m->cache,
					     pc - m->record->load_bias, sym);
		return rc;
	}
#else
	if (!s->noted_no_libdw) {
		s->noted_no_libdw = true;
		rc = add_note(s, "this leakwatch was built without libdw: frames are shown as module+offset");
		if (rc < 0)
			return rc;
	}
#endif
	return push_frame(sym, NULL, NULL, 0, NULL);
}

static size_t cache_home(const struct lw_symbolizer *s, uint64_t address)
{
	return (size_t)((address * LW_HASH_GOLDEN) >> 32) &
	       (s->cache_capacity - 1);
}

static int cache_grow(struct lw_symbolizer *s)
{
	size_t capacity = s->cache_capacity * 2;
	struct cache_slot *table = calloc(capacity, sizeof(*table));
	struct cache_slot *old = s->cache;
	size_t old_capacity = s->cache_capacity;

	if (!table)
		return -ENOMEM;
	s->cache = table;
	s->cache_capacity = capacity;
	for (size_t i = 0; i < old_capacity; i++) {
		size_t j;

		if (!old[i].symbol)
			continue;
		for (j = cache_home(s, old[i].address); table[j].symbol;
		     j = (j + 1) & (capacity - 1))
			;
		table[j] = old[i];
	}
	free(old);
	return 0;
}

int lw_symbolize(struct lw_symbolizer *s, uint64_t address,
		 const struct lw_symbol **out)
{
	struct lw_symbol *sym;
	size_t i;
	int rc;

	for (i = cache_home(s, address); s->cache[i].symbol;
	     i = (i + 1) & (s->cache_capacity - 1)) {
		if (s->cache[i].address == address) {
			*out = s->cache[i].symbol;
			return 0;
		}
	}
	sym = calloc(1, sizeof(*sym));
	if (!sym)
		return -ENOMEM;
	pthread_mutex_lock(&symbolize_lock);
	rc = resolve(s, address, sym);
	pthread_mutex_unlock(&symbolize_lock);
	if (rc < 0) {
		free_symbol(sym);
		return rc;
	}
	if ((s->cache_used + 1) * 2 > s->cache_capacity) {
		if ((rc = cache_grow(s)) < 0) {
			free_symbol(sym);
			return rc;
		}
		for (i = cache_home(s, address); s->cache[i].symbol;
		     i = (i + 1) & (s->cache_capacity - 1))
			;
	}
	s->cache[i].address = address;
	s->cache[i].symbol = sym;
	s->cache_used++;
	*out = sym;
	return 0;
}
