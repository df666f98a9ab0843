/* SPDX-License-Identifier: MIT */
/*
 * Symbols that put libdwfl's lookup rules to work, for test-elf-symbols.c:
 * aliases of different bindings, symbols nested in others, one value with
 * two sizes, labels without a size (global, local, after a sized symbol),
 * local symbols alone, a symbol without a name, absolute, thread-local and
 * unloaded symbols, and a stretch that no symbol covers. No code runs: the
 * bytes are nops.
 */
	.text
/* A global function with a weak alias of the same size: the global wins. */
	.globl	fx_alias_global
	.weak	fx_alias_weak
	.type	fx_alias_global, @function
	.type	fx_alias_weak, @function
fx_alias_weak:
fx_alias_global:
	.fill	32, 1, 0x90
	.size	fx_alias_global, 32
	.size	fx_alias_weak, 32

/* A local function around a global one: globals are searched first. */
	.type	fx_local_outer, @function
fx_local_outer:
	.fill	16, 1, 0x90
	.globl	fx_inner_global
	.type	fx_inner_global, @function
fx_inner_global:
	.fill	16, 1, 0x90
	.size	fx_inner_global, 16
	.fill	16, 1, 0x90
	.size	fx_local_outer, 48

/* Same value, two sizes. */
	.globl	fx_same_big
	.globl	fx_same_small
	.type	fx_same_big, @function
	.type	fx_same_small, @function
fx_same_big:
fx_same_small:
	.fill	8, 1, 0x90
	.size	fx_same_small, 8
	.fill	24, 1, 0x90
	.size	fx_same_big, 32

/* Same value and size, a weak one and a local one. */
	.weak	fx_tie_weak
	.type	fx_tie_weak, @function
	.type	fx_tie_local, @function
fx_tie_local:
fx_tie_weak:
	.fill	16, 1, 0x90
	.size	fx_tie_weak, 16
	.size	fx_tie_local, 16

/* Labels without a size: global, local, and after a sized one. */
	.globl	fx_label_global
fx_label_global:
	.fill	16, 1, 0x90
fx_label_local:
	.fill	16, 1, 0x90
	.globl	fx_sized_before_label
	.type	fx_sized_before_label, @function
fx_sized_before_label:
	.fill	8, 1, 0x90
	.size	fx_sized_before_label, 8
	.globl	fx_label_after
fx_label_after:
	.fill	16, 1, 0x90

/* Only local symbols: searched when no global one covers. */
	.type	fx_local_only, @function
fx_local_only:
	.fill	8, 1, 0x90
fx_local_label_inside:
	.fill	8, 1, 0x90
	.size	fx_local_only, 16
	.type	fx_local_object, @object
fx_local_object:
	.fill	16, 1, 0x90
	.size	fx_local_object, 16

/* A global object inside a local function. */
	.type	fx_local_host, @function
fx_local_host:
	.fill	8, 1, 0x90
	.globl	fx_global_object
	.type	fx_global_object, @object
fx_global_object:
	.fill	8, 1, 0x90
	.size	fx_global_object, 8
	.fill	8, 1, 0x90
	.size	fx_local_host, 24

/* A global function whose name blank-symbol-name.py empties: a symbol
 * without a name never counts, and the local one around it answers. */
	.type	fx_unnamed_host, @function
fx_unnamed_host:
	.fill	8, 1, 0x90
	.globl	fx_unnamed
	.type	fx_unnamed, @function
fx_unnamed:
	.fill	8, 1, 0x90
	.size	fx_unnamed, 8
	.size	fx_unnamed_host, 16

/* A stretch no symbol covers. */
	.fill	64, 1, 0xcc

/* Absolute symbols, with and without a size. */
	.globl	fx_absolute
	.set	fx_absolute, 0x40
	.size	fx_absolute, 16
	.globl	fx_absolute_label
	.set	fx_absolute_label, 0x80

/* A symbol of a section that is not loaded: its value is not biased. */
	.section .fx_unloaded,"",@progbits
	.type	fx_unloaded, @object
fx_unloaded:
	.fill	4096, 1, 0
	.size	fx_unloaded, 4096

/* Thread-local data: never a function. */
	.section .tbss,"awT",@nobits
	.globl	fx_tls
	.type	fx_tls, @object
fx_tls:
	.zero	64
	.size	fx_tls, 64

	.section .note.GNU-stack,"",@progbits
