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
/*
 * Each vCPU's IST stacks (src/cpu.c; include/csvsm/exception.h names the
 * vectors that use them), each above an unmapped guard page. An event
 * that resumes (#HV, #VC, NMI) only copies its frame off its IST stack
 * (src/exception.S), so the stack holds that frame, two saved registers
 * and, while they are there, one other event's handler copied below them.
 * #DF and #MC run their handler (the dump, then termination) on it. The
 * deepest of these, the fault dump with a console #VC inside it, is about
 * 1.8 KiB (gcc -fstack-usage: exc_common's save, exception_dispatch,
 * con_printf, con_vprintf 544, fmt_vsnprintf, then vc_exception 160,
 * vc_handle 112 and the GHCB call): 8 KiB is four times that.
 */
#define IST_STACK_SIZE	(8 * 1024)
#define IST_STACK_GUARD (4 * 1024)

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
