/*
 * csvsm guest-side benchmark (build/bench.efi): SVSM call round trips.
 * A gnu-efi application like the probe, linked with the probe's discovery
 * (probe_flash.c) and call code (probe_call.c, probe_asm.S), so it finds
 * csvsm the way a guest kernel does (OVMF SEV metadata -> secrets page ->
 * svsm_caa, reference §1.6) and calls it the way Linux does (reference §1.1).
 *
 * It issues BENCH_CALLS core QUERY_PROTOCOL(core, v1) calls through the GHCB
 * MSR form (0x016/0x017) and as many through the GHCB page form
 * (SNP_RUN_VMPL 0x80000018), timed with RDTSC, and prints one line per form:
 *   bench: form=<msr|ghcb> calls=N cycles=N per_call_cycles=N errors=N
 * Then the two pieces a call is made of, one exit each on sim: a read of the
 * GHCB MSR (a call makes four; QEMU has no such MSR, so each exits to csvsm,
 * where hardware would not exit at all) and a bare VMGEXIT (the MSR protocol
 * hypervisor-features request, which csvsm answers at once):
 *   bench: form=<ghcb_msr_read|vmgexit_bare> calls=N cycles=N per_call_cycles=N errors=N
 * The TSC rate is not measured here (gBS->Stall is not usable under csvsm
 * yet); bench/svsm_bench.sh converts with the "TSC NNNN MHz" csvsm prints in
 * its boot log. Then it powers off with RT->ResetSystem(EfiResetShutdown).
 */
#include "probe.h"
#include "probe_int.h"

#define BENCH_CALLS  20000
#define BENCH_WARMUP 100

static u64 rdtsc(void)
{
	u32 lo, hi;

	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((u64)hi << 32) | lo;
}

/* One timed run of `n` QUERY_PROTOCOL(core, v1) calls; returns the errors. */
static u64 run(enum call_form form, u32 n, u64 *cycles)
{
	u64 errors = 0, t0 = 0, t1;

	for (u32 i = 0; i < n + BENCH_WARMUP; i++) {
		struct probe_regs r = {SVSM_CALL(PROTO_CORE, CORE_QUERY_PROTOCOL),
				       ((u64)PROTO_CORE << 32) | 1, 0, 0, 0};

		if (i == BENCH_WARMUP)
			t0 = rdtsc();
		if (probe_call(form, &r) != CALL_OK || r.rax != SVSM_SUCCESS ||
		    r.rcx != ((1ULL << 32) | 1))
			errors++;
	}
	t1 = rdtsc();
	*cycles = t1 - t0;
	return errors;
}

/* `n` exits of one kind, interrupts off: RDMSR of the GHCB MSR, or a bare
 * VMGEXIT with the hypervisor-features request (0x080 -> 0x081). */
static u64 run_piece(int vmgexit, u32 n, u64 *cycles)
{
	u64 errors = 0, t0 = 0, flags = probe_irq_save(), saved = probe_rdmsr(MSR_GHCB);

	for (u32 i = 0; i < n + BENCH_WARMUP; i++) {
		if (i == BENCH_WARMUP)
			t0 = rdtsc();
		if (vmgexit) {
			probe_wrmsr(MSR_GHCB, 0x080);
			probe_vmgexit();
			errors += (probe_rdmsr(MSR_GHCB) & 0xFFF) != 0x081;
		} else {
			errors += probe_rdmsr(MSR_GHCB) != saved;
		}
	}
	*cycles = rdtsc() - t0;
	probe_wrmsr(MSR_GHCB, saved);
	probe_irq_restore(flags);
	return errors;
}

static void report(const CHAR16 *name, u32 n, u64 cycles, u64 errors)
{
	Print(L"bench: form=%s calls=%d cycles=%ld per_call_cycles=%ld errors=%ld\n", name, n,
	      cycles, cycles / n, errors);
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	struct flash_info fi;
	CHAR16 why[160];
	EFI_PHYSICAL_ADDRESS ghcb = 0xFFFFFFFFULL;
	u64 svsm_size, caa, resp, cycles, errors;

	InitializeLib(image, st);
	g_st = st;
	Print(L"\n# csvsm bench: SVSM call round trips\n");
	if (probe_flash_parse(&fi, why, sizeof(why))) {
		Print(L"bench: error=no-svsm (%s)\n", why);
		shutdown();
	}
	CopyMem(&svsm_size, (void *)(UINTN)(fi.secrets_gpa + SECRETS_SVSM_SIZE), 8);
	CopyMem(&caa, (void *)(UINTN)(fi.secrets_gpa + SECRETS_SVSM_CAA), 8);
	if (!svsm_size || !caa || (caa & (PAGE_SIZE - 1))) {
		Print(L"bench: error=no-svsm (svsm_size 0x%lx caa 0x%lx)\n", svsm_size, caa);
		shutdown();
	}
	g_caa = caa;

	probe_snp_detect();
	errors = run(FORM_MSR, BENCH_CALLS, &cycles);
	report(L"msr", BENCH_CALLS, cycles, errors);

	if (g_snp) {
		/* An SEV-SNP guest: the firmware's GHCB, which is shared (probe_call.c). */
		ghcb = probe_ghcb_current();
	} else {
		if (EFI_ERROR(uefi_call_wrapper(st->BootServices->AllocatePages, 4,
						AllocateMaxAddress, EfiLoaderData, 1, &ghcb))) {
			Print(L"bench: error=alloc\n");
			shutdown();
		}
		ZeroMem((void *)(UINTN)ghcb, PAGE_SIZE);
	}
	if (probe_ghcb_register(ghcb, &resp)) {
		Print(L"bench: error=ghcb-register (page 0x%lx response 0x%lx)\n", ghcb, resp);
		shutdown();
	}
	errors = run(FORM_GHCB, BENCH_CALLS, &cycles);
	report(L"ghcb", BENCH_CALLS, cycles, errors);
	errors = run_piece(0, BENCH_CALLS, &cycles);
	report(L"ghcb_msr_read", BENCH_CALLS, cycles, errors);
	errors = run_piece(1, BENCH_CALLS, &cycles);
	/* each iteration is WRMSR + VMGEXIT + RDMSR: report the VMGEXIT alone */
	report(L"vmgexit_3exits", BENCH_CALLS, cycles, errors);
	Print(L"bench: done\n");
	shutdown();
	return EFI_SUCCESS;
}
