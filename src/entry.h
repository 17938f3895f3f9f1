/*
 * What the entries share (src/boot.S, src/snp_entry.S, tests/snpm/model/pvh_entry.S):
 * the boot stack's size and, in assembly, the data segments of 64-bit mode.
 */
#ifndef CSVSM_SRC_ENTRY_H
#define CSVSM_SRC_ENTRY_H

#define BOOT_STACK_SIZE (64 * 1024) /* the boot vCPU's stack (src/boot.S boot_stack) */
/* The unmapped pages under it: as large as an AP's. */
#define BOOT_STACK_GUARD (16 * 1024)
/* An AP's stack (src/smp.c) and the unmapped pages under it. The guard is
 * larger than any frame that is not probed: csvsm's own code is built with
 * -fstack-clash-protection (IMAGE_CFLAGS, Makefile), Debian's libtpms and
 * libcrypto are not, and their largest frame is 0x2c40 bytes
 * (RSAZ_exp52x20_x2_256). */
#define AP_STACK_SIZE  (64 * 1024)
#define AP_STACK_GUARD (16 * 1024)

#ifdef __ASSEMBLY__
/* clang-format off */
/* DS/ES/SS = the boot GDT's data selector 0x10, FS/GS = 0 (their bases are
 * MSRs, set later). Clobbers EAX. */
.macro LOAD_DATA_SEGMENTS64
	mov $0x10, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	xor %eax, %eax
	mov %eax, %fs
	mov %eax, %gs
.endm
/* clang-format on */
#endif

#endif
