/*
 * Unit tests of the MMIO instruction decoder (src/platform/insn_decode.c):
 * the MOV/MOVZX/MOVSX forms compilers emit for volatile device accesses, in
 * 16/32/64-bit code, their lengths (csvsm advances RIP by them: TCG has no
 * NRIP), the register write-back of loads, and refusals of everything else
 * (truncated, register operands, other opcodes), which must never be
 * half-emulated. Expected encodings checked against `as`/objdump output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "csvsm/insn_decode.h"

static struct mmio_op dec(const uint8_t *b, size_t n, unsigned bits)
{
	struct mmio_op op;
	assert_int_equal(insn_decode_mmio(b, n, bits, &op), 0);
	return op;
}

static void test_stores(void **state)
{
	/* mov %eax,(%rcx) */
	static const uint8_t a[] = {0x89, 0x01};
	struct mmio_op op = dec(a, sizeof(a), 64);
	assert_int_equal(op.kind, MMIO_STORE);
	assert_int_equal(op.size, 4);
	assert_true(op.from_reg);
	assert_int_equal(op.reg, 0);
	assert_int_equal(op.length, 2);
	/* mov %r9,0x300(%r8) = 4d 89 88 00 03 00 00 */
	static const uint8_t b[] = {0x4d, 0x89, 0x88, 0x00, 0x03, 0x00, 0x00};
	op = dec(b, sizeof(b), 64);
	assert_int_equal(op.size, 8);
	assert_int_equal(op.reg, 9);
	assert_int_equal(op.length, 7);
	/* movl $0xc4500,0x300(%rax) = c7 80 00 03 00 00 00 45 0c 00 */
	static const uint8_t c[] = {0xc7, 0x80, 0x00, 0x03, 0x00, 0x00, 0x00, 0x45, 0x0c, 0x00};
	op = dec(c, sizeof(c), 64);
	assert_false(op.from_reg);
	assert_int_equal(op.imm, 0xc4500);
	assert_int_equal(op.length, 10);
	/* movq $-1,(%rax) = 48 c7 00 ff ff ff ff: imm32 sign-extended */
	static const uint8_t d[] = {0x48, 0xc7, 0x00, 0xff, 0xff, 0xff, 0xff};
	op = dec(d, sizeof(d), 64);
	assert_int_equal(op.size, 8);
	assert_int_equal(op.imm, 0xFFFFFFFFFFFFFFFFULL);
	/* mov %ah,(%rbx) = 88 23: AH without REX */
	static const uint8_t e[] = {0x88, 0x23};
	op = dec(e, sizeof(e), 64);
	assert_int_equal(op.size, 1);
	assert_true(op.high8);
	assert_int_equal(op.reg, 4);
	/* mov %spl,(%rbx) = 40 88 23: SPL with REX, not AH */
	static const uint8_t f[] = {0x40, 0x88, 0x23};
	op = dec(f, sizeof(f), 64);
	assert_false(op.high8);
	/* 16-bit store with a SIB and disp32: mov %ax,0x10(%rax,%rcx,4) = 66 89 44 88 10 */
	static const uint8_t g[] = {0x66, 0x89, 0x44, 0x88, 0x10};
	op = dec(g, sizeof(g), 64);
	assert_int_equal(op.size, 2);
	assert_int_equal(op.length, 5);
	/* 32-bit code: mov %eax,0xfee00300 = 89 05 00 03 e0 fe */
	static const uint8_t h[] = {0x89, 0x05, 0x00, 0x03, 0xe0, 0xfe};
	op = dec(h, sizeof(h), 32);
	assert_int_equal(op.length, 6);
	/* 16-bit code: mov %ax,(%bx+%si) = 89 00; with 66: 32-bit */
	static const uint8_t i16[] = {0x66, 0x89, 0x00};
	op = dec(i16, sizeof(i16), 16);
	assert_int_equal(op.size, 4);
	assert_int_equal(op.length, 3);
	/* moffs store: mov %eax,0xfec00010 in 32-bit code = a3 10 00 c0 fe */
	static const uint8_t m[] = {0xa3, 0x10, 0x00, 0xc0, 0xfe};
	op = dec(m, sizeof(m), 32);
	assert_int_equal(op.kind, MMIO_STORE);
	assert_int_equal(op.size, 4);
	assert_int_equal(op.length, 5);
}

static void test_loads(void **state)
{
	/* mov (%rdx),%eax = 8b 02 */
	static const uint8_t a[] = {0x8b, 0x02};
	struct mmio_op op = dec(a, sizeof(a), 64);
	assert_int_equal(op.kind, MMIO_LOAD);
	assert_int_equal(op.size, 4);
	assert_int_equal(op.reg_size, 4);
	assert_int_equal(op.reg, 0);
	/* movzbl (%rcx),%eax = 0f b6 01 (edk2 MmioRead8) */
	static const uint8_t b[] = {0x0f, 0xb6, 0x01};
	op = dec(b, sizeof(b), 64);
	assert_int_equal(op.size, 1);
	assert_int_equal(op.reg_size, 4);
	assert_false(op.sign_extend);
	assert_int_equal(op.length, 3);
	/* movzwl 0x4(%r10),%r11d = 45 0f b7 5a 04 */
	static const uint8_t c[] = {0x45, 0x0f, 0xb7, 0x5a, 0x04};
	op = dec(c, sizeof(c), 64);
	assert_int_equal(op.size, 2);
	assert_int_equal(op.reg, 11);
	assert_int_equal(op.length, 5);
	/* movsbq (%rax),%rdx = 48 0f be 10 */
	static const uint8_t d[] = {0x48, 0x0f, 0xbe, 0x10};
	op = dec(d, sizeof(d), 64);
	assert_true(op.sign_extend);
	assert_int_equal(op.reg_size, 8);
	/* mov (%rsi),%ch = 8a 2e */
	static const uint8_t e[] = {0x8a, 0x2e};
	op = dec(e, sizeof(e), 64);
	assert_true(op.high8);
	/* moffs load in 64-bit code: movabs 0xfee00030,%eax = a1 + 8-byte offset */
	static const uint8_t f[] = {0xa1, 0x30, 0x00, 0xe0, 0xfe, 0, 0, 0, 0};
	op = dec(f, sizeof(f), 64);
	assert_int_equal(op.kind, MMIO_LOAD);
	assert_int_equal(op.length, 9);
	/* with 0x67: 4-byte offset */
	static const uint8_t g[] = {0x67, 0xa1, 0x30, 0x00, 0xe0, 0xfe};
	op = dec(g, sizeof(g), 64);
	assert_int_equal(op.length, 6);
}

static void test_load_result(void **state)
{
	struct mmio_op op = {.kind = MMIO_LOAD, .size = 4, .reg_size = 4};
	assert_int_equal(insn_mmio_load_result(&op, 0xAAAAAAAA55555555ULL, 0x12345678),
			 0x12345678); /* 32-bit destination zero-extends */
	op.size = op.reg_size = 2;
	assert_int_equal(insn_mmio_load_result(&op, 0xAAAAAAAA55555555ULL, 0xBEEF),
			 0xAAAAAAAA5555BEEFULL);
	op.size = op.reg_size = 1;
	op.high8 = true;
	assert_int_equal(insn_mmio_load_result(&op, 0x1111, 0x22), 0x2211);
	op = (struct mmio_op){.kind = MMIO_LOAD, .size = 1, .reg_size = 8, .sign_extend = true};
	assert_int_equal(insn_mmio_load_result(&op, 0, 0x80), 0xFFFFFFFFFFFFFF80ULL);
	op.sign_extend = false;
	op.reg_size = 4;
	assert_int_equal(insn_mmio_load_result(&op, ~0ULL, 0x1FF), 0xFF);
}

static void test_refusals(void **state)
{
	struct mmio_op op;
	static const uint8_t regop[] = {0x89, 0xc1};	 /* mov %eax,%ecx: no memory */
	static const uint8_t other[] = {0x01, 0x01};	 /* add */
	static const uint8_t c6_bad[] = {0xc6, 0x08, 1}; /* c6 /1 is not MOV */
	static const uint8_t trunc[] = {0xc7, 0x80, 0x00, 0x03, 0x00, 0x00, 0x00, 0x45};
	static const uint8_t lone_rex[] = {0x48};
	static const uint8_t movzx_bad[] = {0x0f, 0xb8, 0x00}; /* popcnt-ish, not MOVZX */
	static const uint8_t sib_trunc[] = {0x89, 0x04};
	static const uint8_t moffs_trunc[] = {0xa1, 0x00, 0x00};
	static const uint8_t prefixes[15] = {0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
					     0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66};
	assert_int_equal(insn_decode_mmio(regop, sizeof(regop), 64, &op), -1);
	assert_int_equal(insn_decode_mmio(other, sizeof(other), 64, &op), -1);
	assert_int_equal(insn_decode_mmio(c6_bad, sizeof(c6_bad), 64, &op), -1);
	assert_int_equal(insn_decode_mmio(trunc, sizeof(trunc), 64, &op), -1);
	assert_int_equal(insn_decode_mmio(lone_rex, sizeof(lone_rex), 64, &op), -1);
	assert_int_equal(insn_decode_mmio(movzx_bad, sizeof(movzx_bad), 64, &op), -1);
	assert_int_equal(insn_decode_mmio(sib_trunc, sizeof(sib_trunc), 64, &op), -1);
	assert_int_equal(insn_decode_mmio(moffs_trunc, sizeof(moffs_trunc), 32, &op), -1);
	assert_int_equal(insn_decode_mmio(prefixes, sizeof(prefixes), 64, &op), -1);
	assert_int_equal(insn_decode_mmio(regop, 0, 64, &op), -1);
	/* Every prefix of a valid encoding is refused (never read past len). */
	static const uint8_t full[] = {0x4d, 0x89, 0x88, 0x00, 0x03, 0x00, 0x00};
	for (size_t n = 0; n < sizeof(full); n++)
		assert_int_equal(insn_decode_mmio(full, n, 64, &op), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stores),
	    cmocka_unit_test(test_loads),
	    cmocka_unit_test(test_load_result),
	    cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
