/*
 * ELF64 PT_LOAD walker (include/attest/elf_load.h). Layouts from the System
 * V gABI (Elf64_Ehdr 64 bytes, Elf64_Phdr 56 bytes); fields read with
 * memcpy at fixed offsets, so no alignment is assumed.
 */
#include "attest/elf_load.h"
#include "base/string.h"

#define EHDR_SIZE 64
#define PHDR_SIZE 56
#define PT_LOAD	  1

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}
static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}
static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

int elf_load_segments(const uint8_t *img, size_t len, struct ld_segment *segs, size_t max,
		      size_t *n)
{
	*n = 0;
	/* e_ident: 0x7F 'E' 'L' 'F', EI_CLASS 2 (64-bit), EI_DATA 1 (little-endian) */
	if (!img || len < EHDR_SIZE || memcmp(img, "\177ELF", 4) || img[4] != 2 || img[5] != 1)
		return ELF_LOAD_ERR_NOT_ELF64;
	uint64_t phoff = rd64(img + 0x20);
	uint16_t phentsize = rd16(img + 0x36), phnum = rd16(img + 0x38);
	if (phentsize != PHDR_SIZE || phoff > len || (uint64_t)phnum * PHDR_SIZE > len - phoff)
		return ELF_LOAD_ERR_PHDRS;
	for (unsigned i = 0; i < phnum; i++) {
		const uint8_t *ph = img + phoff + (uint64_t)i * PHDR_SIZE;
		uint64_t offset = rd64(ph + 0x08), paddr = rd64(ph + 0x18);
		uint64_t filesz = rd64(ph + 0x20), memsz = rd64(ph + 0x28);
		if (rd32(ph) != PT_LOAD || memsz == 0)
			continue;
		if (offset > len || filesz > len - offset || filesz > memsz)
			return ELF_LOAD_ERR_SEGMENT;
		if (*n == max)
			return ELF_LOAD_ERR_TOO_MANY;
		segs[(*n)++] = (struct ld_segment){
		    .paddr = paddr, .data = img + offset, .filesz = filesz, .memsz = memsz};
	}
	return *n ? ELF_LOAD_OK : ELF_LOAD_ERR_NONE;
}

const char *elf_load_strerror(int err)
{
	switch (err) {
	case ELF_LOAD_OK:
		return "ok";
	case ELF_LOAD_ERR_NOT_ELF64:
		return "not a little-endian ELF64 file";
	case ELF_LOAD_ERR_PHDRS:
		return "bad program header table";
	case ELF_LOAD_ERR_SEGMENT:
		return "PT_LOAD segment outside the file";
	case ELF_LOAD_ERR_TOO_MANY:
		return "too many PT_LOAD segments";
	case ELF_LOAD_ERR_NONE:
		return "no PT_LOAD segment";
	}
	return "unknown error";
}
