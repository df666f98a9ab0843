/* SPDX-License-Identifier: MIT */
#include "cfi.h"

#include <string.h>

/*
 * libgcc's lookup of the frame description covering an address (the one
 * C++ exceptions use): it knows every loaded object and frames registered
 * at run time, and on current glibc finds the object without the loader's
 * lock. Not in a public header; its interface has been stable since GCC 3.
 */
struct dwarf_eh_bases {
	void *tbase;
	void *dbase;
	void *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

/* DWARF register numbers on x86-64. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

#define STATE_STACK 8

enum reg_how { REG_SAME, REG_AT_CFA, REG_UNDEFINED, REG_OTHER };

struct row {
	unsigned cfa_reg;
	int64_t cfa_offset;
	int cfa_expression;
	enum reg_how rbp_how, ra_how;
	int64_t rbp_offset, ra_offset;
};

struct reader {
	const uint8_t *p, *end;
	int bad;
};

static uint8_t read_u8(struct reader *r)
{
	if (r->p >= r->end) {
		r->bad = 1;
		return 0;
	}
	return *r->p++;
}

static uint64_t read_fixed(struct reader *r, unsigned size)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < size) {
		r->bad = 1;
		return 0;
	}
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += size;
	return v;
}

static uint64_t read_uleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		b = read_u8(r);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !r->bad);
	return v;
}

static int64_t read_sleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		b = read_u8(r);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !r->bad);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* Skips a pointer in DW_EH_PE encoding enc; only its size matters here. */
static void skip_encoded(struct reader *r, uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		read_fixed(r, 8);
		break;
	case 0x02: /* udata2 */
	case 0x0a: /* sdata2 */
		read_fixed(r, 2);
		break;
	case 0x03: /* udata4 */
	case 0x0b: /* sdata4 */
		read_fixed(r, 4);
		break;
	case 0x01: /* uleb128 */
		read_uleb(r);
		break;
	case 0x09: /* sleb128 */
		read_sleb(r);
		break;
	default:
		r->bad = 1;
	}
}

/* What a CIE says about all the frames that use it. */
struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_encoding;
	int has_augmentation_data;
	struct reader initial; /* the initial instructions */
};

static int read_cie(const uint8_t *at, struct cie *cie)
{
	uint32_t length;
	struct reader r;

	memcpy(&length, at, sizeof(length));
	if (length == 0 || length == 0xffffffffu)
		return -1;
	r.p = at + 4;
	r.end = at + 4 + length;
	r.bad = 0;
	if (read_fixed(&r, 4) != 0) /* the CIE id */
		return -1;
	uint8_t version = read_u8(&r);
	if (version != 1 && version != 3)
		return -1;
	const char *aug = (const char *)r.p;
	size_t aug_len = strnlen(aug, (size_t)(r.end - r.p));
	if (r.p + aug_len >= r.end)
		return -1;
	r.p += aug_len + 1;
	cie->code_align = read_uleb(&r);
	cie->data_align = read_sleb(&r);
	uint64_t ra_reg = version == 1 ? read_u8(&r) : read_uleb(&r);
	if (ra_reg != REG_RA)
		return -1;
	cie->fde_encoding = 0; /* absptr */
	cie->has_augmentation_data = aug[0] == 'z';
	if (cie->has_augmentation_data) {
		uint64_t len = read_uleb(&r);
		if (r.bad || len > (uint64_t)(r.end - r.p))
			return -1;
		struct reader a = { r.p, r.p + len, 0 };
		for (size_t i = 1; i < aug_len; i++) {
			switch (aug[i]) {
			case 'R':
				cie->fde_encoding = read_u8(&a);
				break;
			case 'P': {
				uint8_t enc = read_u8(&a);
				skip_encoded(&a, enc);
				break;
			}
			case 'L':
				read_u8(&a);
				break;
			default: /* 'S' (a signal frame) or unknown */
				return -1;
			}
		}
		if (a.bad)
			return -1;
		r.p += len;
	} else if (aug_len != 0) {
		return -1;
	}
	if (r.bad)
		return -1;
	cie->initial = r;
	return 0;
}

/* The register rule that DW_CFA_offset and its kin set. */
static void set_offset(struct row *row, uint64_t reg, int64_t offset)
{
	if (reg == REG_RBP) {
		row->rbp_how = REG_AT_CFA;
		row->rbp_offset = offset;
	} else if (reg == REG_RA) {
		row->ra_how = REG_AT_CFA;
		row->ra_offset = offset;
	}
}

static void set_how(struct row *row, uint64_t reg, enum reg_how how)
{
	if (reg == REG_RBP)
		row->rbp_how = how;
	else if (reg == REG_RA)
		row->ra_how = how;
}

static void restore_reg(struct row *row, const struct row *initial,
			uint64_t reg)
{
	if (reg == REG_RBP) {
		row->rbp_how = initial->rbp_how;
		row->rbp_offset = initial->rbp_offset;
	} else if (reg == REG_RA) {
		row->ra_how = initial->ra_how;
		row->ra_offset = initial->ra_offset;
	}
}

/*
 * Runs call-frame instructions, starting at code address loc, until the
 * row for pc is reached (or the instructions end). Returns 0, or -1 for
 * instructions this reader does not follow.
 */
static int run_instructions(struct reader *r, const struct cie *cie,
			    uintptr_t loc, uintptr_t pc, struct row *row,
			    const struct row *initial)
{
	struct row saved[STATE_STACK];
	unsigned nsaved = 0;

	while (r->p < r->end && !r->bad) {
		uint8_t op = read_u8(r);
		uint64_t reg, delta = 0;

		switch (op & 0xc0) {
		case 0x40: /* advance_loc */
			delta = op & 0x3f;
			goto advance;
		case 0x80: /* offset */
			set_offset(row, op & 0x3f,
				   (int64_t)read_uleb(r) * cie->data_align);
			continue;
		case 0xc0: /* restore */
			restore_reg(row, initial, op & 0x3f);
			continue;
		}
		switch (op) {
		case 0x00: /* nop */
			continue;
		case 0x02: /* advance_loc1 */
			delta = read_fixed(r, 1);
			goto advance;
		case 0x03: /* advance_loc2 */
			delta = read_fixed(r, 2);
			goto advance;
		case 0x04: /* advance_loc4 */
			delta = read_fixed(r, 4);
			goto advance;
		case 0x05: /* offset_extended */
			reg = read_uleb(r);
			set_offset(row, reg,
				   (int64_t)read_uleb(r) * cie->data_align);
			continue;
		case 0x06: /* restore_extended */
			restore_reg(row, initial, read_uleb(r));
			continue;
		case 0x07: /* undefined */
			set_how(row, read_uleb(r), REG_UNDEFINED);
			continue;
		case 0x08: /* same_value */
			set_how(row, read_uleb(r), REG_SAME);
			continue;
		case 0x09: /* register */
			set_how(row, read_uleb(r), REG_OTHER);
			read_uleb(r);
			continue;
		case 0x0a: /* remember_state */
			if (nsaved == STATE_STACK)
				return -1;
			saved[nsaved++] = *row;
			continue;
		case 0x0b: /* restore_state */
			if (nsaved == 0)
				return -1;
			*row = saved[--nsaved];
			continue;
		case 0x0c: /* def_cfa */
			row->cfa_reg = (unsigned)read_uleb(r);
			row->cfa_offset = (int64_t)read_uleb(r);
			row->cfa_expression = 0;
			continue;
		case 0x0d: /* def_cfa_register */
			row->cfa_reg = (unsigned)read_uleb(r);
			row->cfa_expression = 0;
			continue;
		case 0x0e: /* def_cfa_offset */
			row->cfa_offset = (int64_t)read_uleb(r);
			continue;
		case 0x0f: /* def_cfa_expression */
			row->cfa_expression = 1;
			delta = read_uleb(r);
			goto skip_block;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			set_how(row, read_uleb(r), REG_OTHER);
			delta = read_uleb(r);
			goto skip_block;
		case 0x11: /* offset_extended_sf */
			reg = read_uleb(r);
			set_offset(row, reg, read_sleb(r) * cie->data_align);
			continue;
		case 0x12: /* def_cfa_sf */
			row->cfa_reg = (unsigned)read_uleb(r);
			row->cfa_offset = read_sleb(r) * cie->data_align;
			row->cfa_expression = 0;
			continue;
		case 0x13: /* def_cfa_offset_sf */
			row->cfa_offset = read_sleb(r) * cie->data_align;
			continue;
		case 0x14: /* val_offset */
			set_how(row, read_uleb(r), REG_OTHER);
			read_uleb(r);
			continue;
		case 0x15: /* val_offset_sf */
			set_how(row, read_uleb(r), REG_OTHER);
			read_sleb(r);
			continue;
		case 0x2e: /* GNU_args_size */
			read_uleb(r);
			continue;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = read_uleb(r);
			set_offset(row, reg,
				   -(int64_t)read_uleb(r) * cie->data_align);
			continue;
		default: /* set_loc and anything unknown */
			return -1;
		}
advance:
		loc += delta * cie->code_align;
		if (loc > pc)
			return 0;
		continue;
skip_block:
		if (delta > (uint64_t)(r->end - r->p))
			return -1;
		r->p += delta;
	}
	return r->bad ? -1 : 0;
}

void lw_cfi_rule_at(uintptr_t pc, struct lw_cfi_rule *rule)
{
	struct dwarf_eh_bases bases;
	struct cie cie;
	struct row row = { 0 }, initial;
	uint32_t length;
	int32_t cie_offset;

	memset(rule, 0, sizeof(*rule));
	rule->kind = LW_CFI_UNSUPPORTED;

	const uint8_t *fde = _Unwind_Find_FDE((void *)pc, &bases);
	if (!fde)
		return;
	memcpy(&length, fde, sizeof(length));
	if (length == 0 || length == 0xffffffffu)
		return;
	memcpy(&cie_offset, fde + 4, sizeof(cie_offset));
	if (read_cie(fde + 4 - cie_offset, &cie) < 0)
		return;

	row.rbp_how = REG_SAME;
	row.ra_how = REG_SAME;
	struct reader r = cie.initial;
	uintptr_t func = (uintptr_t)bases.func;
	if (run_instructions(&r, &cie, func, UINTPTR_MAX, &row, &row) < 0)
		return;
	initial = row;

	r.p = fde + 8;
	r.end = fde + 4 + length;
	r.bad = 0;
	skip_encoded(&r, cie.fde_encoding);        /* pc_begin */
	skip_encoded(&r, cie.fde_encoding & 0x0f); /* pc_range */
	if (cie.has_augmentation_data) {
		uint64_t len = read_uleb(&r);
		if (r.bad || len > (uint64_t)(r.end - r.p))
			return;
		r.p += len;
	}
	if (r.bad || run_instructions(&r, &cie, func, pc, &row, &initial) < 0)
		return;

	if (row.ra_how == REG_UNDEFINED) {
		rule->kind = LW_CFI_OUTERMOST;
		return;
	}
	if (row.cfa_expression ||
	    (row.cfa_reg != REG_RSP && row.cfa_reg != REG_RBP) ||
	    row.ra_how != REG_AT_CFA || row.ra_offset != -8 ||
	    (row.rbp_how != REG_SAME && row.rbp_how != REG_AT_CFA))
		return;
	rule->kind = LW_CFI_FRAME;
	rule->cfa_from_rbp = row.cfa_reg == REG_RBP;
	rule->cfa_offset = row.cfa_offset;
	rule->rbp_saved = row.rbp_how == REG_AT_CFA;
	rule->rbp_offset = row.rbp_offset;
}
