/* SPDX-License-Identifier: MIT */
#include "torch.h"

#include <string.h>

static int bytes_have(const struct lw_bytes *b, const char *text)
{
	size_t n = strlen(text);

	for (size_t i = 0; b && n <= b->len && i + n <= b->len; i++)
		if (memcmp(b->data + i, text, n) == 0)
			return 1;
	return 0;
}

static int bytes_are(const struct lw_bytes *b, const char *text)
{
	return b && b->len == strlen(text) && memcmp(b->data, text, b->len) == 0;
}

static int is_c10_cuda(const struct lw_bytes *path)
{
	static const char name[] = "libc10_cuda";
	size_t start = 0;

	for (size_t i = 0; i < path->len; i++)
		if (path->data[i] == '/')
			start = i + 1;
	return path->len - start >= sizeof(name) - 1 &&
	       memcmp(path->data + start, name, sizeof(name) - 1) == 0;
}

void lw_torch_view(const struct lw_model *m, struct lw_torch_view *view)
{
	memset(view, 0, sizeof(*view));
	for (size_t i = 0; i < m->module_count && !view->present; i++)
		view->present = is_c10_cuda(&m->modules[i].path);
	view->conf = lw_model_info(m, "torch_alloc_conf");
	view->source = lw_model_info(m, "torch_alloc_conf_source");
	/* PyTorch reads "key:value" pairs separated by commas. */
	view->tensors_visible = bytes_have(view->conf, "backend:cudaMallocAsync") ||
				bytes_are(view->source, "no_caching");
	view->expandable_segments = !view->tensors_visible &&
				    bytes_have(view->conf, "expandable_segments:True");
}
