/* ELF PT_LOAD walker: a real image (build/csvsm.elf) and malformed ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "attest/elf_load.h"

static uint8_t img[4096];

/* A minimal ELF64 with `n` program headers; the first is a PT_LOAD. */
static void make_elf(unsigned nph)
{
	memset(img, 0, sizeof(img));
	memcpy(img, "\177ELF", 4);
	img[4] = 2, img[5] = 1;
	uint64_t phoff = 64;
	uint16_t entsize = 56, num = (uint16_t)nph;
	memcpy(img + 0x20, &phoff, 8);
	memcpy(img + 0x36, &entsize, 2);
	memcpy(img + 0x38, &num, 2);
	for (unsigned i = 0; i < nph; i++) {
		uint8_t *ph = img + 64 + 56 * i;
		uint32_t type = 1;
		uint64_t off = 1024, paddr = 0x4000000 + 0x1000 * i, filesz = 512, memsz = 0x1000;
		memcpy(ph, &type, 4);
		memcpy(ph + 0x08, &off, 8);
		memcpy(ph + 0x18, &paddr, 8);
		memcpy(ph + 0x20, &filesz, 8);
		memcpy(ph + 0x28, &memsz, 8);
	}
}

static void test_good(void **state)
{
	struct ld_segment s[4];
	size_t n;
	make_elf(2);
	assert_int_equal(elf_load_segments(img, sizeof(img), s, 4, &n), ELF_LOAD_OK);
	assert_int_equal(n, 2);
	assert_int_equal(s[1].paddr, 0x4001000);
	assert_ptr_equal(s[0].data, img + 1024);
	assert_int_equal(s[0].filesz, 512);
	assert_int_equal(s[0].memsz, 0x1000);
}

static void test_malformed(void **state)
{
	struct ld_segment s[4];
	size_t n;
	make_elf(1);
	assert_int_equal(elf_load_segments(img, 40, s, 4, &n), ELF_LOAD_ERR_NOT_ELF64);
	img[4] = 1; /* ELF32 */
	assert_int_equal(elf_load_segments(img, sizeof(img), s, 4, &n), ELF_LOAD_ERR_NOT_ELF64);
	make_elf(1);
	uint16_t many = 0xFFFF;
	memcpy(img + 0x38, &many, 2); /* table runs past the file */
	assert_int_equal(elf_load_segments(img, sizeof(img), s, 4, &n), ELF_LOAD_ERR_PHDRS);
	make_elf(1);
	uint64_t big = UINT64_MAX - 100; /* p_offset + p_filesz wraps */
	memcpy(img + 64 + 0x08, &big, 8);
	assert_int_equal(elf_load_segments(img, sizeof(img), s, 4, &n), ELF_LOAD_ERR_SEGMENT);
	make_elf(1);
	uint64_t fs = 0x2000; /* filesz > memsz */
	memcpy(img + 64 + 0x20, &fs, 8);
	assert_int_equal(elf_load_segments(img, sizeof(img), s, 4, &n), ELF_LOAD_ERR_SEGMENT);
	make_elf(3);
	assert_int_equal(elf_load_segments(img, sizeof(img), s, 2, &n), ELF_LOAD_ERR_TOO_MANY);
	make_elf(1);
	uint32_t note = 4;
	memcpy(img + 64, &note, 4);
	assert_int_equal(elf_load_segments(img, sizeof(img), s, 4, &n), ELF_LOAD_ERR_NONE);
	assert_int_equal(elf_load_segments(NULL, 0, s, 4, &n), ELF_LOAD_ERR_NOT_ELF64);
}

/* Random corruption never reads out of bounds (run under ASan by `make fuzz` builds). */
static void test_random(void **state)
{
	struct ld_segment s[8];
	size_t n;
	srand(7);
	for (int i = 0; i < 20000; i++) {
		make_elf(1 + (unsigned)(rand() % 3));
		for (int k = 0; k < 6; k++)
			img[rand() % 300] = (uint8_t)rand();
		size_t len = (size_t)(rand() % (int)sizeof(img));
		if (elf_load_segments(img, len, s, 8, &n) == ELF_LOAD_OK)
			for (size_t j = 0; j < n; j++)
				assert_true(s[j].data + s[j].filesz <= img + len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
