/*
 * Decoder for the guest's MMIO stores that the sim platform emulates
 * (src/platform/insn_decode.c): MOV r/m, reg (88/89) and MOV r/m, imm
 * (C6/C7 /0) with legacy prefixes and REX, 16/32/64-bit code. Pure and
 * bounded: it reads at most `len` bytes and rejects anything else.
 */
#ifndef CSVSM_INSN_DECODE_H
#define CSVSM_INSN_DECODE_H

#include "csvsm/types.h"

struct mmio_store {
	unsigned length; /* instruction length in bytes */
	unsigned size;	 /* bytes stored: 1, 2, 4 or 8 */
	bool from_reg;	 /* source is a register (else imm) */
	unsigned reg;	 /* 0..15 (RAX..R15); with high8, 4..7 mean AH..BH */
	bool high8;	 /* legacy AH/CH/DH/BH */
	uint64_t imm;	 /* sign-extended immediate */
};

/* cs_bits: 16, 32 or 64 (code segment default). Returns 0 or -1 (not a supported store). */
int insn_decode_mov_store(const uint8_t *insn, size_t len, unsigned cs_bits,
			  struct mmio_store *out);

#endif
