/* SPDX-License-Identifier: MIT */
#ifndef LW_EXPORT_H
#define LW_EXPORT_H

/* The library is built with -fvisibility=hidden; this marks what it exports
 * (the list is checked by tests/exports). */
#define LW_EXPORT __attribute__((visibility("default")))

#endif
