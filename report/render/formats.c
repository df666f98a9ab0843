/* SPDX-License-Identifier: MIT */
#include "formats.h"

#include <string.h>

#define LW_RENDERER_ENTRY(name) &lw_##name##_renderer,
static const struct lw_renderer *const renderers[] = {
	LW_FORMATS(LW_RENDERER_ENTRY)
};
#undef LW_RENDERER_ENTRY

const struct lw_renderer *lw_renderer_named(const char *name)
{
	for (size_t i = 0; i < sizeof(renderers) / sizeof(renderers[0]); i++)
		if (strcmp(renderers[i]->name, name) == 0)
			return renderers[i];
	return NULL;
}

const char *lw_renderer_names(void)
{
	static char names[256];
	size_t n = sizeof(renderers) / sizeof(renderers[0]), len = 0;

	if (names[0])
		return names;
	for (size_t i = 0; i < n && len < sizeof(names); i++)
		len += (size_t)snprintf(names + len, sizeof(names) - len,
					"%s%s", i == 0 ? "" : i + 1 == n ?
					" or " : ", ", renderers[i]->name);
	return names;
}
