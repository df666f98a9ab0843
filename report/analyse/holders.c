/* SPDX-License-Identifier: MIT */
#include "holders.h"

#include <stdio.h>
#include <string.h>

#include "locations.h"
#include "lw-cells.h"
#include "lw-format.h"
#include "lw-hash.h"
#include "model.h"

const char *lw_holder_text(const struct lw_model *m, uint64_t id, size_t *len)
{
	const struct lw_string *s = lw_model_string(m, id);

	if (!s) {
		*len = 0;
		return "";
	}
	*len = s->text.len;
	return (const char *)s->text.data;
}

static size_t last_index(const char *path, size_t len);

/* The length of a root without its line: "local of train (t.py:12)" and
 * "local of train (t.py:40)" are the same frame, met at two lines. */
static size_t root_frame(const char *root, size_t len)
{
	const char *colon = len && root[len - 1] == ')'
				    ? memrchr(root, ':', len) : NULL;

	return colon ? (size_t)(colon - root) : len;
}

static const char lru_label[] = " (an lru_cache: ";

/* The part of a path that names its container: up to its last list index,
 * or to an lru_cache's label (whose count of entries each search reads
 * anew). */
static size_t container_len(const char *path, size_t len)
{
	const char *lru = memmem(path, len, lru_label, sizeof(lru_label) - 1);

	return lru ? (size_t)(lru - path) : last_index(path, len);
}

/* Whether two holders are one: the same container (a list's elements are
 * one holder, whichever index a search named) from the same root. */
static bool same_holder(const struct lw_model *m, const struct lw_holder *a,
			const struct lw_holder *b)
{
	size_t pa, pb, ra, rb;
	const char *x = lw_holder_text(m, a->path, &pa);
	const char *y = lw_holder_text(m, b->path, &pb);
	const char *u = lw_holder_text(m, a->root, &ra);
	const char *v = lw_holder_text(m, b->root, &rb);

	pa = container_len(x, pa);
	pb = container_len(y, pb);
	ra = root_frame(u, ra);
	rb = root_frame(v, rb);
	return pa == pb && memcmp(x, y, pa) == 0 && ra == rb &&
	       memcmp(u, v, ra) == 0;
}

/* Whether holder h was found for the finding led by site. */
static int holds(const struct lw_report *r, const struct lw_holder *h,
		 uint32_t site, uint32_t loc)
{
	const struct lw_model *m = r->model;
	uint32_t at;
	int rc;

	if (m->sites.items[h->site].kind != m->sites.items[site].kind)
		return 0;
	if (h->site == site)
		return 1;
	if ((rc = lw_location_of(r->locations, h->site, &at)) < 0)
		return rc;
	return at == loc;
}

/* Whether a comes before b. Between a variable of the program and an
 * unreachable cycle, the one an earlier search found (a variable that held
 * the memory while the program ran, before the cycle that was left of it
 * once a function returned; or the garbage copies that grew during the
 * run, before the one copy the program still keeps at its end); found by
 * one search, the variable, unless the cycles hold more than twice its
 * objects. Otherwise the later search first (what held the memory last),
 * then the holder of more objects. */
static bool before(const struct lw_holder *a, const struct lw_holder *b)
{
	bool ua = a->flags & LW_HOLDER_UNREACHABLE;
	bool ub = b->flags & LW_HOLDER_UNREACHABLE;

	if (ua != ub && a->search == b->search)
		return ua ? a->objects > 2 * b->objects
			  : 2 * a->objects >= b->objects;
	if (ua != ub)
		return a->search < b->search;
	if (a->search != b->search)
		return a->search > b->search;
	return a->objects > b->objects;
}

/* A notebook cell's file in a root by the cell's name, as the views
 * write it ("defined at cell 5:1"). */
static bool short_cell(struct lw_held *e, const char *file)
{
	const char *end = e->root + e->root_len, *colon = NULL;
	char cell[32];
	size_t head = (size_t)(file - e->root), n;

	/* The file ends at ":LINE)". */
	for (const char *p = file; p < end && !colon; p++) {
		const char *d = p + 1;

		if (*p != ':')
			continue;
		while (d < end && *d >= '0' && *d <= '9')
			d++;
		if (d > p + 1 && d < end && *d == ')')
			colon = p;
	}
	if (!colon || !lw_cell_name(file, (size_t)(colon - file), cell,
				    sizeof(cell)))
		return false;
	n = strlen(cell);
	if (head + n + (size_t)(end - colon) >= sizeof(e->root_buf))
		return false;
	memcpy(e->root_buf, e->root, head);
	memcpy(e->root_buf + head, cell, n);
	memcpy(e->root_buf + head + n, colon, (size_t)(end - colon));
	e->root_short = e->root_buf;
	e->root_short_len = head + n + (size_t)(end - colon);
	return true;
}

/*
 * A root's file ("local of train (defined at /w/train.py:12)") relative to
 * the traced process's directory when inside it: e->root_short, in
 * e->root_buf when it differs.
 */
static void short_root(const struct lw_model *m, struct lw_held *e)
{
	static const char defined[] = "(defined at ";
	const struct lw_bytes *cwd = lw_model_info(m, "cwd");
	const char *end = e->root + e->root_len;
	const char *file = memmem(e->root, e->root_len, defined,
				  sizeof(defined) - 1);
	size_t skip, head;

	e->root_short = e->root;
	e->root_short_len = e->root_len;
	if (!file)
		return;
	file += sizeof(defined) - 1;
	if (short_cell(e, file))
		return;
	if (!cwd || !cwd->len)
		return;
	skip = cwd->len;
	if ((size_t)(end - file) <= skip + 1 ||
	    memcmp(file, cwd->data, cwd->len) != 0)
		return;
	if (cwd->data[cwd->len - 1] != '/') {
		if (file[skip] != '/')
			return;
		skip++;
	}
	head = (size_t)(file - e->root);
	if (e->root_len - skip >= sizeof(e->root_buf))
		return;
	memcpy(e->root_buf, e->root, head);
	memcpy(e->root_buf + head, file + skip, e->root_len - head - skip);
	e->root_short = e->root_buf;
	e->root_short_len = e->root_len - skip;
}

int lw_held_by(const struct lw_report *r, uint32_t site,
	       struct lw_held_by *out)
{
	const struct lw_model *m = r->model;
	uint32_t loc;
	int rc;

	memset(out, 0, sizeof(*out));
	/* With no holder, any search cut short may have missed it. */
	out->cut = m->holders.cut;
	if (m->holders.count == 0)
		return 0;
	if ((rc = lw_location_of(r->locations, site, &loc)) < 0)
		return rc;
	/* Latest first, so that a path found by several searches is kept
	 * as the latest found it. */
	for (size_t i = m->holders.count; i-- > 0;) {
		const struct lw_holder *h = &m->holders.items[i];
		bool seen = false;
		size_t at;

		if ((rc = holds(r, h, site, loc)) < 0)
			return rc;
		if (!rc)
			continue;
		for (size_t j = 0; j < out->count && !seen; j++)
			seen = same_holder(m, out->items[j].holder, h);
		if (seen)
			continue;
		/* Among equals, the one found first (met last) goes first. */
		at = out->count;
		while (at > 0 && !before(out->items[at - 1].holder, h))
			at--;
		if (at == LW_HELD_BY_MAX)
			continue;
		if (out->count < LW_HELD_BY_MAX)
			out->count++;
		memmove(&out->items[at + 1], &out->items[at],
			(out->count - 1 - at) * sizeof(out->items[0]));
		out->items[at].holder = h;
	}
	/* With one, whether the search that found it last was cut short
	 * (another search may have been: what it looked for was other
	 * memory). */
	if (out->count)
		out->cut = out->items[0].holder->flags & LW_HOLDER_CUT;
	for (size_t i = 0; i < out->count; i++) {
		struct lw_held *e = &out->items[i];

		e->path = lw_holder_text(m, e->holder->path, &e->path_len);
		e->root = lw_holder_text(m, e->holder->root, &e->root_len);
		short_root(m, e);
		lw_holder_fix(m, e->holder, e->fix, sizeof(e->fix));
	}
	return 0;
}

/*
 * The part of a holder's path that names what keeps the memory: up to its
 * first subscript, graph hop or autograd link (the list `losses`, the dict
 * `trainer.outputs`, the total `val_total` whose graph keeps the rest),
 * so that every site one holder keeps has one cause.
 */
static size_t span_until(const char *s, size_t len, const char *stops)
{
	size_t n = 0;

	while (n < len && !strchr(stops, s[n]))
		n++;
	return n;
}

static size_t cause_prefix(const char *path, size_t len)
{
	size_t n = span_until(path, len, "[ ");
	const char *graph = memmem(path, len, ".grad_fn", 8);

	if (graph && (size_t)(graph - path) < n)
		n = (size_t)(graph - path);
	return n ? n : len;
}

/* Whether a path runs through an exception's traceback: the exception's,
 * or a traceback object kept on its own (sys.exc_info()[2]). */
static const char *traceback_in(const char *path, size_t len)
{
	static const char *const hops[] = { ".__traceback__", ".tb_next",
					    ".tb_frame" };
	const char *first = NULL;

	for (size_t i = 0; i < sizeof(hops) / sizeof(hops[0]); i++) {
		const char *at = memmem(path, len, hops[i], strlen(hops[i]));

		if (at && (!first || at < first))
			first = at;
	}
	return first;
}

/* Where the subscript that starts at path[at] ends (past its ']'). */
static size_t subscript_end(const char *path, size_t len, size_t at)
{
	while (at < len && path[at] != ']')
		at++;
	return at < len ? at + 1 : len;
}

/*
 * Whether the holder is a cache keyed per request: an lru_cache's entries,
 * or a dict entry keyed by a string or an object ("cache['req-7']",
 * "memo[<tuple #3>]") that is the memory's tensor itself ("history['loss'][3]"
 * is a list kept under a name, "retval['loss'].grad_fn" a graph).
 */
static bool keyed_cache(const char *path, size_t len)
{
	size_t at = cause_prefix(path, len);

	if (memmem(path, len, lru_label, sizeof(lru_label) - 1))
		return true;
	if (at + 2 >= len || path[at] != '[' ||
	    (path[at + 1] != '\'' && path[at + 1] != '<'))
		return false;
	return subscript_end(path, len, at) == len;
}

/* Whether word (lower case) is in s[0..len), in any case. */
static bool memmem_lower(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	for (size_t i = 0; i + n <= len; i++) {
		size_t j = 0;

		while (j < n && (s[i + j] | 0x20) == word[j])
			j++;
		if (j == n)
			return true;
	}
	return false;
}

int lw_holder_facts(const struct lw_report *r, uint32_t site,
		    struct lw_holder_facts *out)
{
	const struct lw_model *m = r->model;
	struct lw_held_by held;
	const struct lw_held *first;
	size_t path, root;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = lw_held_by(r, site, &held)) < 0 || held.count == 0)
		return rc;
	first = &held.items[0];
	out->found = true;
	out->unreachable = first->holder->flags & LW_HOLDER_UNREACHABLE;
	out->gc_off = first->holder->flags & LW_HOLDER_GC_OFF;
	/* A cycle no root reaches is known by the class of the object
	 * that heads it: every copy of one metric, whichever of its
	 * buffers a search met first. */
	path = out->unreachable ? span_until(first->path, first->path_len, ".[")
				: cause_prefix(first->path, first->path_len);
	root = out->unreachable ? 0 : root_frame(first->root, first->root_len);
	out->cause = lw_fnv1a(lw_fnv1a(LW_FNV1A_BASIS, first->path, path),
			      first->root, root) | 1;
	if (!out->unreachable) {
		const char *dot = memrchr(first->path, '.', path);

		if (dot && dot > first->path)
			out->owner = lw_fnv1a(lw_fnv1a(0x84222325cbf29ce4ull,
						       first->path,
						       (size_t)(dot - first->path)),
					      first->root, root) | 1;
		out->cache = keyed_cache(first->path, first->path_len);
		out->loss_named = memmem_lower(first->path, path, "loss");
	}
	for (size_t i = 0; i < held.count; i++) {
		const struct lw_held *e = &held.items[i];

		/* Kept where the program keeps its losses: by any of its
		 * holders (the list a loop appends to, before the global
		 * the function's return handed it to). */
		if (!(e->holder->flags & LW_HOLDER_UNREACHABLE))
			out->loss_named |=
				memmem_lower(e->path,
					     cause_prefix(e->path, e->path_len),
					     "loss");
		if (!same_holder(m, e->holder, first->holder))
			continue;
		out->graph |= (e->holder->flags & LW_HOLDER_GRAPH) ||
			      memmem(e->path, e->path_len, ".grad_fn", 8);
		out->graph_known |= e->holder->flags & LW_HOLDER_TORCH;
		out->traceback |= traceback_in(e->path, e->path_len) != NULL;
		out->metric_state |= e->holder->flags & LW_HOLDER_METRIC_STATE;
		if (e->holder->flags & LW_HOLDER_METRIC_STATE) {
			const char *dot = memrchr(e->path, '.', e->path_len);
			size_t after = dot ? (size_t)(dot - e->path) : 0;

			out->metric_list |= memchr(e->path + after, '[',
						   e->path_len - after) != NULL;
		}
		out->closure |= memmem(e->path, e->path_len, ".__closure__",
				       12) != NULL ||
				memmem(e->path, e->path_len, ".cell_contents",
				       14) != NULL;
	}
	return 0;
}

/* The function of a root "local of NAME (FILE:LINE)": 1 with *name and
 * *len, or 0 for any other root. */
static int local_of(const struct lw_held *e, const char **name, size_t *len)
{
	static const char local[] = "local of ";
	const char *root = e->root, *end;

	if (e->root_len <= sizeof(local) - 1 ||
	    memcmp(root, local, sizeof(local) - 1) != 0)
		return 0;
	root += sizeof(local) - 1;
	end = memchr(root, ' ', e->root_len - (sizeof(local) - 1));
	*name = root;
	*len = end ? (size_t)(end - root) : e->root_len - (sizeof(local) - 1);
	return *len > 0;
}

int lw_released_when(const struct lw_report *r, uint32_t site,
		     const char **name, size_t *len)
{
	struct lw_held_by held;
	int rc;

	if ((rc = lw_held_by(r, site, &held)) < 0)
		return rc;
	if (held.count == 0)
		return 0;
	return local_of(&held.items[0], name, len);
}

int lw_held_after_return(const struct lw_report *r, uint32_t site,
			 const char **name, size_t *len, struct lw_held *by)
{
	struct lw_held_by held;
	int rc;

	memset(by, 0, sizeof(*by));
	if (!lw_model_has_program_end(r->model))
		return 0;
	if ((rc = lw_held_by(r, site, &held)) < 0)
		return rc;
	/* Latest first: the first in a local names the function; one
	 * found by a later search, elsewhere, what kept it after. */
	for (size_t i = 0; i < held.count; i++) {
		if (!local_of(&held.items[i], name, len))
			continue;
		if (i && held.items[0].holder->search > held.items[i].holder->search)
			*by = held.items[0];
		return 1;
	}
	return 0;
}

/* The last subscript of path ("[59]", "['tok']"): where it starts, or
 * len when the path does not end with one. */
static size_t last_subscript(const char *path, size_t len)
{
	if (len < 3 || path[len - 1] != ']')
		return len;
	for (size_t i = len - 1; i-- > 0;)
		if (path[i] == '[')
			return i;
	return len;
}

/* Where the last list index ("[59]") of path starts; len if none. */
static size_t last_index(const char *path, size_t len)
{
	for (size_t i = len; i-- > 0;) {
		size_t j = i + 1;

		if (path[i] != '[')
			continue;
		while (j < len && path[j] >= '0' && path[j] <= '9')
			j++;
		if (j > i + 1 && j < len && path[j] == ']')
			return i;
	}
	return len;
}

const char *lw_holder_fix(const struct lw_model *m,
			  const struct lw_holder *h, char *buf, size_t size)
{
	size_t len, cut;
	const char *path = lw_holder_text(m, h->path, &len);
	const char *graph = memmem(path, len, ".grad_fn", 8);
	const char *lru, *dot;

	if (h->flags & LW_HOLDER_UNREACHABLE) {
		/* Garbage: "<Accuracy>.correct" names the cycle's class. */
		size_t name = len && path[0] == '<'
				      ? span_until(path + 1, len - 1, ">") : 0;

		if (name && name + 1 < len)
			snprintf(buf, size, "break the reference cycle of `%.*s` (a weak reference instead of the one back to itself), or run gc.collect() at the end of each step%s",
				 (int)name, path + 1,
				 h->flags & LW_HOLDER_GC_OFF
					 ? "; the program turned the collector off (gc.disable()): turn it back on"
					 : "");
		else
			snprintf(buf, size, "break the reference cycle (a weak reference), or run gc.collect() at the end of each step%s",
				 h->flags & LW_HOLDER_GC_OFF
					 ? "; the program turned the collector off (gc.disable()): turn it back on"
					 : "");
		return buf;
	}
	cut = cause_prefix(path, len);
	if ((h->flags & LW_HOLDER_METRIC_STATE) &&
	    (dot = memrchr(path, '.', cut))) {
		/* A metric's state: "metric.preds[3]" is metric's. */
		size_t owner = (size_t)(dot - path);

		snprintf(buf, size, "compute and reset `%.*s` at the end of each epoch (`%.*s.compute()`, then `%.*s.reset()`): its state `%.*s` keeps every batch given to update() until then; or use a variant whose state has a fixed size (a binned one, `thresholds=N`)",
			 (int)owner, path, (int)owner, path, (int)owner, path,
			 (int)cut, path);
		return buf;
	}
	if (traceback_in(path, len)) {
		/* Exceptions, or sys.exc_info(), kept: what keeps them is the
		 * container before the first subscript or traceback hop. */
		size_t holder = span_until(path, len, "[");
		const char *tb = traceback_in(path, len);

		if ((size_t)(tb - path) < holder)
			holder = (size_t)(tb - path);
		snprintf(buf, size, "keep the message or the formatted traceback in `%.*s` (`str(e)`, `traceback.format_exc()`), not the exception or sys.exc_info(); or drop the frames with `e.__traceback__ = None`: a traceback keeps every frame it passed through, and their locals",
			 (int)holder, path);
		return buf;
	}
	if ((lru = memmem(path, len, lru_label, sizeof(lru_label) - 1))) {
		/* The cache of a function decorated with lru_cache. */
		cut = (size_t)(lru - path);
		snprintf(buf, size, "bound the cache of `%.*s`: `@functools.lru_cache(maxsize=N)` instead of maxsize=None (or @cache), or call `%.*s.cache_clear()` once its entries are no longer needed",
			 (int)cut, path, (int)cut, path);
		return buf;
	}
	if (keyed_cache(path, len)) {
		cut = cause_prefix(path, len);
		snprintf(buf, size, "bound `%.*s`: evict its oldest entry past a size limit (an `OrderedDict`, and `%.*s.popitem(last=False)`), or delete each entry once its request is done; a new key every request adds an entry that nothing removes",
			 (int)cut, path, (int)cut, path);
		return buf;
	}
	if (graph && memmem(path, len, "saved tensor", 12)) {
		/* A graph that was never back-propagated: what holds it is
		 * the tensor before ".grad_fn", or the list it is in. */
		size_t holder = (size_t)(graph - path);

		holder = last_index(path, holder) < holder &&
				 path[holder - 1] == ']'
			 ? last_index(path, holder) : holder;
		snprintf(buf, size, "keep numbers, not graphs, in `%.*s`: add `.item()` of each tensor to it (or a host copy, `.detach().cpu()`), or run that code under torch.no_grad()",
			 (int)holder, path);
		return buf;
	}
	if (graph) {
		/* Back-propagated, but its nodes keep what they hold until
		 * nothing refers to the result: let go of the variable. */
		size_t name = span_until(path, len, ".[");

		snprintf(buf, size, "let go of `%.*s` once backward() has run (`del %.*s`, or set it to None): through `%.*s` it keeps the graph's buffers",
			 (int)name, path, (int)name, path,
			 (int)(graph - path + 8), path);
		return buf;
	}
	if ((cut = last_index(path, len)) < len) {
		snprintf(buf, size, "drain `%.*s` (clear it once used), or keep `.item()` (a number) or `.cpu()` (a host copy) of what it collects instead: `.detach()` still holds the device memory",
			 (int)cut, path);
		return buf;
	}
	cut = last_subscript(path, len);
	if (cut < len)
		snprintf(buf, size, "remove the entry `%.*s` once it is no longer needed (`del %.*s`), or bound `%.*s`",
			 (int)len, path, (int)len, path, (int)cut, path);
	else
		snprintf(buf, size, "let go of `%.*s` when it is no longer needed (`del` it, or set it to None)",
			 (int)len, path);
	return buf;
}
