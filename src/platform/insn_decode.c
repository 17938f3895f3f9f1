/*
 * MMIO instruction decoder (see include/csvsm/insn_decode.h). Encodings
 * from the Intel SDM vol. 2 (MOV, MOVZX, MOVSX; ModR/M and SIB tables
 * 2-1..2-3; moffs forms) and the AMD APM vol. 3. TCG gives no decode
 * assists (sim notes pitfall 1), so the length must be computed here to
 * advance RIP.
 */
#include "csvsm/insn_decode.h"

/* Bytes of displacement (and SIB) after the ModR/M byte; -1 if truncated. */
static int modrm_tail(const uint8_t *insn, size_t len, size_t *i, unsigned mod, unsigned rm,
		      unsigned abits)
{
	unsigned disp = 0;
	if (abits == 16) {
		if (mod == 1)
			disp = 1;
		else if (mod == 2 || (mod == 0 && rm == 6))
			disp = 2;
	} else {
		if (rm == 4) {
			if (*i >= len)
				return -1;
			uint8_t sib = insn[(*i)++];
			if (mod == 0 && (sib & 7) == 5)
				disp = 4;
		}
		if (mod == 1)
			disp = 1;
		else if (mod == 2 || (mod == 0 && rm == 5))
			disp = 4;
	}
	*i += disp;
	return *i > len ? -1 : 0;
}

int insn_decode_mmio(const uint8_t *insn, size_t len, unsigned cs_bits, struct mmio_op *out)
{
	size_t i = 0;
	bool opsize = false, addrsize = false;
	uint8_t rex = 0;

	if (len > 15)
		len = 15;
	for (; i < len; i++) {
		uint8_t b = insn[i];
		if (b == 0x66)
			opsize = true;
		else if (b == 0x67)
			addrsize = true;
		else if (b == 0x26 || b == 0x2E || b == 0x36 || b == 0x3E || b == 0x64 || b == 0x65)
			;
		else
			break;
	}
	if (i < len && cs_bits == 64 && (insn[i] & 0xF0) == 0x40)
		rex = insn[i++];
	if (i >= len)
		return -1;
	unsigned abits = cs_bits == 64	 ? (addrsize ? 32 : 64)
			 : cs_bits == 32 ? (addrsize ? 16 : 32)
					 : (addrsize ? 32 : 16);
	/* Operand size of the non-byte forms. */
	unsigned osize = (rex & 0x08) ? 8 : cs_bits == 16 ? (opsize ? 4 : 2) : (opsize ? 2 : 4);

	uint8_t op = insn[i++];
	*out = (struct mmio_op){0};

	/* MOV AL/eAX <-> moffs (A0..A3): the offset is address-size wide. */
	if (op >= 0xA0 && op <= 0xA3) {
		i += abits / 8;
		if (i > len)
			return -1;
		out->kind = op <= 0xA1 ? MMIO_LOAD : MMIO_STORE;
		out->size = (op & 1) ? osize : 1;
		out->reg_size = out->size;
		out->from_reg = true;
		out->reg = 0;
		out->length = (unsigned)i;
		return 0;
	}

	bool twobyte = op == 0x0F;
	if (twobyte) {
		if (i >= len)
			return -1;
		op = insn[i++];
		if (op != 0xB6 && op != 0xB7 && op != 0xBE && op != 0xBF)
			return -1;
	} else if (op != 0x88 && op != 0x89 && op != 0x8A && op != 0x8B && op != 0xC6 &&
		   op != 0xC7) {
		return -1;
	}
	if (i >= len)
		return -1;
	uint8_t modrm = insn[i++];
	unsigned mod = modrm >> 6, reg = (modrm >> 3) & 7, rm = modrm & 7;
	if (mod == 3)
		return -1; /* register operand: not a memory access */
	if (!twobyte && (op == 0xC6 || op == 0xC7) && reg != 0)
		return -1;
	if (modrm_tail(insn, len, &i, mod, rm, abits))
		return -1;

	unsigned rnum = reg | ((rex & 0x04) ? 8 : 0);
	if (twobyte) { /* MOVZX / MOVSX reg, r/m8 or r/m16 */
		out->kind = MMIO_LOAD;
		out->size = (op == 0xB6 || op == 0xBE) ? 1 : 2;
		out->reg_size = osize;
		out->sign_extend = op >= 0xBE;
		out->reg = rnum;
	} else if (op == 0x8A || op == 0x8B) {
		out->kind = MMIO_LOAD;
		out->size = out->reg_size = op == 0x8A ? 1 : osize;
		out->reg = rnum;
		out->high8 = out->size == 1 && !rex && reg >= 4;
	} else if (op == 0x88 || op == 0x89) {
		out->kind = MMIO_STORE;
		out->size = op == 0x88 ? 1 : osize;
		out->from_reg = true;
		out->reg = rnum;
		out->high8 = out->size == 1 && !rex && reg >= 4;
	} else { /* C6 / C7: immediate; 8-byte stores take a sign-extended imm32 */
		out->kind = MMIO_STORE;
		out->size = op == 0xC6 ? 1 : osize;
		unsigned isz = out->size == 8 ? 4 : out->size;
		if (i + isz > len)
			return -1;
		uint64_t v = 0;
		for (unsigned k = 0; k < isz; k++)
			v |= (uint64_t)insn[i + k] << (8 * k);
		if (out->size == 8 && (v & 0x80000000ULL))
			v |= 0xFFFFFFFF00000000ULL;
		out->imm = v;
		i += isz;
	}
	if (i > len)
		return -1;
	out->length = (unsigned)i;
	return 0;
}

uint64_t insn_mmio_load_result(const struct mmio_op *op, uint64_t old, uint64_t val)
{
	unsigned bits = 8 * op->size;
	if (bits < 64)
		val &= (1ULL << bits) - 1;
	if (op->sign_extend && bits < 64 && (val >> (bits - 1)) & 1)
		val |= ~((1ULL << bits) - 1);
	switch (op->reg_size) {
	case 1:
		if (op->high8)
			return (old & ~0xFF00ULL) | ((val & 0xFF) << 8);
		return (old & ~0xFFULL) | (val & 0xFF);
	case 2:
		return (old & ~0xFFFFULL) | (val & 0xFFFF);
	case 4:
		return val &
		       0xFFFFFFFFULL; /* 32-bit destinations zero-extend (APM vol. 1 §3.1.2.3) */
	default:
		return val;
	}
}
