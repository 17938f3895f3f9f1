/*
 * The platform contract: one `const` ops table, set once at boot. csvsm's
 * image has one, snp (src/platform/snp.c: SEV-SNP hardware, or the SNP
 * machine that plays it); the unit tests and the SNP machine fill their
 * own. Core logic calls through `platform` and never tests which one it is.
 */
#ifndef BASE_PLATFORM_H
#define BASE_PLATFORM_H

#include "base/types.h"

struct ghcb;
struct percpu;
struct memmap;
struct guest_launch;

struct platform_ops {
	const char *name;
	/* Set-up once the memory map is known. NULL = nothing to do. */
	int (*setup)(const struct memmap *mm, const char *cmdline, size_t cmdline_len);
	/* PVALIDATE semantics: returns 0/FAIL_INPUT/FAIL_SIZEMISMATCH, *unchanged = CF. */
	int (*pvalidate)(vaddr_t va, unsigned size, bool validate, bool *unchanged);
	/* RMPADJUST semantics from VMPL0: returns 0/FAIL_INPUT/FAIL_PERMISSION/FAIL_SIZEMISMATCH.
	 */
	int (*rmpadjust)(vaddr_t va, unsigned size, uint64_t attrs);
	/*
	 * After RMPADJUST took access away from the guest: make every vCPU drop
	 * translations that still allow it, and return only once that is done,
	 * so the revocation can be relied on (snp: the INVLPGB broadcast and
	 * TLBSYNC the hardware needs).
	 */
	void (*flush_guest_tlb)(void);
	/* Library code that uses x87/SSE/AVX (crypto, libtpms) is about to run
	 * while a guest vCPU's exit is handled: keep the guest's FPU state safe
	 * first. NULL when the hardware keeps it (snp: in the guest's VMSA). */
	void (*fpu_enter)(void);
	/* One GHCB MSR protocol round trip: write request, VMGEXIT, return the response. */
	uint64_t (*ghcb_msr_call)(uint64_t request);
	/* One VMGEXIT with this vCPU's GHCB page (already filled by the caller). */
	void (*ghcb_call)(struct percpu *cpu, struct ghcb *ghcb);
	/* Start secondary vCPU `cpu` at csvsm's AP entry; returns 0 or -1. */
	int (*start_ap)(struct percpu *cpu);
	/* Make the PSP reachable for SNP guest requests (share the request
	 * pages with the host). 0 = ready; NULL = always ready. */
	int (*psp_setup)(const struct guest_launch *gl);
	/* Run the guest firmware described by `gl` at its VMPL and serve it; never returns.
	 * NULL: this platform cannot launch a guest yet. */
	__noreturn void (*launch_guest)(const struct guest_launch *gl);
	/* End the VM: success (code 0) or failure with a GHCB reason set/code. */
	__noreturn void (*terminate)(bool success, unsigned reason_set, unsigned reason_code);
};

extern const struct platform_ops *platform;
extern const struct platform_ops platform_snp;

#endif
