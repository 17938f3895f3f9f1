/*
 * MOV-store decoder (see include/csvsm/insn_decode.h). Encodings from the
 * Intel SDM vol. 2 (MOV, ModR/M and SIB tables 2-1..2-3) and AMD APM vol. 3.
 * TCG gives no decode assists (sim notes pitfall 1), so the length must be
 * computed here to advance RIP.
 */
#include "csvsm/insn_decode.h"

int insn_decode_mov_store(const uint8_t *insn, size_t len, unsigned cs_bits, struct mmio_store *out)
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
	if (i + 2 > len)
		return -1;
	uint8_t op = insn[i++], modrm = insn[i++];
	unsigned mod = modrm >> 6, reg = (modrm >> 3) & 7, rm = modrm & 7;
	if (mod == 3)
		return -1; /* register destination: not a memory store */
	if (op != 0x88 && op != 0x89 && op != 0xC6 && op != 0xC7)
		return -1;
	if ((op == 0xC6 || op == 0xC7) && reg != 0)
		return -1;

	unsigned abits = cs_bits == 64	 ? (addrsize ? 32 : 64)
			 : cs_bits == 32 ? (addrsize ? 16 : 32)
					 : (addrsize ? 32 : 16);
	unsigned disp = 0;
	if (abits == 16) {
		if (mod == 1)
			disp = 1;
		else if (mod == 2 || (mod == 0 && rm == 6))
			disp = 2;
	} else {
		if (rm == 4) {
			if (i >= len)
				return -1;
			uint8_t sib = insn[i++];
			if (mod == 0 && (sib & 7) == 5)
				disp = 4;
		}
		if (mod == 1)
			disp = 1;
		else if (mod == 2 || (mod == 0 && rm == 5))
			disp = 4;
	}
	i += disp;

	unsigned size;
	if (op == 0x88 || op == 0xC6)
		size = 1;
	else if (rex & 0x08)
		size = 8;
	else if (cs_bits == 16)
		size = opsize ? 4 : 2;
	else
		size = opsize ? 2 : 4;

	*out = (struct mmio_store){.size = size};
	if (op == 0x88 || op == 0x89) {
		out->from_reg = true;
		out->reg = reg | ((rex & 0x04) ? 8 : 0);
		out->high8 = size == 1 && !rex && reg >= 4;
	} else {
		unsigned isz = size == 8 ? 4 : size;
		if (i + isz > len)
			return -1;
		uint64_t v = 0;
		for (unsigned k = 0; k < isz; k++)
			v |= (uint64_t)insn[i + k] << (8 * k);
		if (size == 8 && (v & 0x80000000ULL))
			v |= 0xFFFFFFFF00000000ULL;
		out->imm = v;
		i += isz;
	}
	if (i > len)
		return -1;
	out->length = (unsigned)i;
	return 0;
}
