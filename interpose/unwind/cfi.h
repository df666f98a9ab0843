/* SPDX-License-Identifier: MIT */
/*
 * The DWARF call-frame rule of one x86-64 code address, read from the
 * .eh_frame the compiler emitted for it, in the one shape the fast unwinder
 * follows: the caller's stack pointer (the CFA) is rsp or rbp plus a
 * constant, the return address lies at CFA - 8, and rbp is either unchanged
 * or saved at a constant offset from the CFA. Every other shape (signal
 * frames, DWARF expressions, unusual registers) is reported as unsupported,
 * and the whole stack is then left to libunwind.
 */
#ifndef LW_CFI_H
#define LW_CFI_H

#include <stdint.h>

enum lw_cfi_kind {
	LW_CFI_UNSUPPORTED = 0,
	LW_CFI_FRAME,     /* an ordinary frame, as below */
	LW_CFI_OUTERMOST, /* the return address is undefined: the stack ends */
};

struct lw_cfi_rule {
	enum lw_cfi_kind kind;
	int cfa_from_rbp;  /* CFA = rbp + cfa_offset, else rsp + cfa_offset */
	int64_t cfa_offset;
	int rbp_saved;     /* the caller's rbp is at CFA + rbp_offset */
	int64_t rbp_offset;
};

/*
 * The rule in effect at pc (for a return address: the address of the call,
 * that is the return address minus one). Looks the frame description up
 * through the unwinder of libgcc, which knows every loaded object; takes
 * no lock of leakwatch's. Never fails: what it cannot read is unsupported.
 */
void lw_cfi_rule_at(uintptr_t pc, struct lw_cfi_rule *rule);

#endif
