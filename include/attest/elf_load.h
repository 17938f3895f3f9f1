/*
 * PT_LOAD segments of an ELF64 image (attest/elf_load.c): what a loader puts
 * in memory, for csvsm-igvm, which lays csvsm's ELF into the IGVM launch
 * image (docs/igvm.md). The image is untrusted input: every offset and size
 * is checked against its length.
 */
#ifndef ATTEST_ELF_LOAD_H
#define ATTEST_ELF_LOAD_H

#include "attest/launch_digest.h"

enum elf_load_err {
	ELF_LOAD_OK = 0,
	ELF_LOAD_ERR_NOT_ELF64 = -1, /* bad magic, class or byte order */
	ELF_LOAD_ERR_PHDRS = -2,     /* program header table outside the file */
	ELF_LOAD_ERR_SEGMENT = -3,   /* a PT_LOAD outside the file, or filesz > memsz */
	ELF_LOAD_ERR_TOO_MANY = -4,  /* more PT_LOAD segments than `max` */
	ELF_LOAD_ERR_NONE = -5,	     /* no PT_LOAD segment */
};

/* Fills segs[0..*n) (pointing into img), in file order. */
int elf_load_segments(const uint8_t *img, size_t len, struct ld_segment *segs, size_t max,
		      size_t *n);
const char *elf_load_strerror(int err);

#endif
