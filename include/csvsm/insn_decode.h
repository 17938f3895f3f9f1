/*
 * Decoder for the guest's MMIO accesses that csvsm emulates
 * (src/platform/insn_decode.c): the MOV forms compilers emit for volatile
 * device accesses. Stores: MOV r/m, reg (88/89) and MOV r/m, imm (C6/C7 /0);
 * loads: MOV reg, r/m (8A/8B), MOVZX (0F B6/B7), MOVSX (0F BE/BF); both:
 * MOV with a direct offset (A0..A3). Legacy prefixes and REX, 16/32/64-bit
 * code. Pure and bounded: it reads at most `len` bytes and rejects anything
 * else, so an instruction it does not know is never half-emulated.
 */
#ifndef CSVSM_INSN_DECODE_H
#define CSVSM_INSN_DECODE_H

#include "base/types.h"

enum mmio_kind { MMIO_LOAD, MMIO_STORE };

struct mmio_op {
	enum mmio_kind kind;
	unsigned length;   /* instruction length in bytes */
	unsigned size;	   /* bytes accessed in memory: 1, 2, 4 or 8 */
	unsigned reg_size; /* loads: bytes of the destination register written */
	bool sign_extend;  /* loads: MOVSX */
	bool from_reg;	   /* stores: source is a register (else imm) */
	unsigned reg;	   /* 0..15 (RAX..R15); with high8, 4..7 mean AH..BH */
	bool high8;	   /* legacy AH/CH/DH/BH */
	uint64_t imm;	   /* stores: sign-extended immediate */
};

/* cs_bits: 16, 32 or 64 (code segment default). Returns 0 or -1 (not supported). */
int insn_decode_mmio(const uint8_t *insn, size_t len, unsigned cs_bits, struct mmio_op *out);

/*
 * The new value of a 64-bit register after a load of `val` (`op->size`
 * bytes) into it, as the CPU writes it: 32-bit destinations zero-extend in
 * 64-bit code, 8/16-bit ones keep the other bits, AH..BH are bits 15:8.
 */
uint64_t insn_mmio_load_result(const struct mmio_op *op, uint64_t old, uint64_t val);

#endif
