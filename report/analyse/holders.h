/* SPDX-License-Identifier: MIT */
/*
 * "Held by": the holders the shim's search found (HOLDER records, struct
 * lw_holder) for the sites of a finding, and the fix phrased against the
 * holder, for every view.
 */
#ifndef LW_REPORT_HOLDERS_H
#define LW_REPORT_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* Holders shown for one finding at most. */
#define LW_HELD_BY_MAX 3

/* A holder as every view shows it: its record, its path and root. */
struct lw_held {
	const struct lw_holder *holder;
	const char *path, *root;	/* lw_holder_text() of each */
	size_t path_len, root_len;
	/* The root as a text view writes it: its file relative to the
	 * traced process's directory when inside it, as sites are written
	 * ("local of train (defined at train.py:12)"). */
	const char *root_short;
	size_t root_short_len;
	char root_buf[512];
	char fix[512];			/* lw_holder_fix() */
};

struct lw_held_by {
	struct lw_held items[LW_HELD_BY_MAX];
	size_t count;
	/* The search that found the first holder ran out of its time
	 * budget (with none: a search did): more may hold it. */
	bool cut;
};

/*
 * The holders of the finding led by site: those found for a site at its
 * location, of its kind, one per path; the latest search's first (what
 * held the memory last), and of one search those that hold the most
 * objects first.
 * Returns 0 or a negative errno.
 */
int lw_held_by(const struct lw_report *report, uint32_t site,
	       struct lw_held_by *out);

/*
 * The function whose local held the finding led by site when the search
 * last found its holder (root "local of NAME (FILE:LINE)"): *name and *len
 * point into the trace. Returns 1 when there is one, 0 when not, or a
 * negative errno.
 */
int lw_released_when(const struct lw_report *report, uint32_t site,
		     const char **name, size_t *len);

/*
 * For memory still live at the program's end: the function whose local
 * held the finding led by site (the latest search that found it in a
 * local), which the program's end proves returned, into *name and *len;
 * and in *by the holder a later search found it in (a caller's local, an
 * object, a global), or NULL. Returns 1 when there is such a function, 0
 * when not, or a negative errno.
 */
int lw_held_after_return(const struct lw_report *report, uint32_t site,
			 const char **name, size_t *len,
			 struct lw_held *by);

/* What the holders of a site say of its memory, for the diagnosis. */
struct lw_holder_facts {
	bool found;
	bool graph;		/* a holder's path runs through autograd graph */
	/* The search could see PyTorch's graphs: a path not through one
	 * keeps none (without PyTorch, graph says nothing). */
	bool graph_known;
	/* ... through an exception's traceback (__traceback__, tb_next,
	 * tb_frame: sys.exc_info() kept is one too) */
	bool traceback;
	/* The holder is a cache keyed per request: an lru_cache's entries,
	 * or a dict whose entry, keyed by a string or an object, holds it
	 * directly (a dict keyed by number reads as a list does). */
	bool cache;
	/* ... through a function's closure: a hook's container. */
	bool closure;
	/* ... through a state a metric declared (LW_HOLDER_METRIC_STATE). */
	bool metric_state;
	/* ... and an entry of a list state (`m.value[39]`): one metric
	 * whose state grows, not many metrics each with its own. */
	bool metric_list;
	/* The container's name says it keeps losses ("losses",
	 * "train_loss_history"): the program's own word for what it is. */
	bool loss_named;
	bool unreachable;	/* the first is an unreachable reference cycle */
	bool gc_off;		/* ... and the collector is off */
	/* The cause: the first holder's container and frame (a list's
	 * elements are one holder, whichever index a search named). Two
	 * sites with the same cause are kept by the same thing; 0: none. */
	uint64_t cause;
	/* The object whose attribute the container is ("metric" of
	 * "metric.preds[3]"), and the frame: the states of one object; 0
	 * when the container is no attribute. */
	uint64_t owner;
};

/* The facts of the holders of the finding led by site (lw_held_by()).
 * Returns 0 or a negative errno. */
int lw_holder_facts(const struct lw_report *report, uint32_t site,
		    struct lw_holder_facts *out);

/* A string of the trace by id (a holder's path or root); "" if unknown. */
const char *lw_holder_text(const struct lw_model *model, uint64_t id,
			   size_t *len);

/*
 * The fix phrased against the holder ("drain `losses` or append ..."),
 * into buf (NUL-terminated, cut to size). Returns buf.
 */
const char *lw_holder_fix(const struct lw_model *model,
			  const struct lw_holder *holder, char *buf,
			  size_t size);

#endif
