/*
 * The sim platform: SEV-SNP simulated on plain x86 under QEMU TCG.
 * PVALIDATE/RMPADJUST are the software RMP model (mm/rmp.c), the hypervisor
 * side of the GHCB is a software model (src/platform/sim_hv.c), APs start by
 * INIT-SIPI-SIPI into a real-mode trampoline, and the VM ends through QEMU's
 * isa-debug-exit device (exit status 1 = success, 3 = failure).
 * Nothing here weakens a check: the model returns the hardware's codes.
 */
#include "arch/x86/insn.h"
#include "csvsm/console.h"
#include "csvsm/cpu.h"
#include "csvsm/platform.h"
#include "csvsm/secret.h"
#include "csvsm/boot.h"
#include "csvsm/sim_guest.h"
#include "csvsm/sim_hv.h"
#include "sim_svm.h"
#include "sipi.h"

int sim_psp_setup(const struct guest_launch *gl);
#include "csvsm/string.h"
#include "mm/cmdline.h"
#include "snp/ghcb.h"
#include "mm/memmap.h"
#include "mm/pool.h"
#include "mm/accept.h"
#include "mm/rmp.h"

#define DEBUG_EXIT_PORT 0xF4

/*
 * The RMP model covers all guest-physical memory up to at least 4 GiB (the
 * OVMF flash window sits just below 4 GiB). csvsm's own region starts as it
 * would after an SNP launch: private, validated, VMPL0 only. Everything else
 * is shared until pre-acceptance converts it. `csvsm.sim_4k_only=S-E` makes
 * the simulated hypervisor back [S, E) with 4K pages only.
 */
extern uint8_t __launch_in_start[], __launch_in_end[];

static int sim_setup(const struct memmap *mm, const char *cmdline, size_t cmdline_len)
{
	/* The launch inputs the harness placed in csvsm's memory (linker.ld
	 * .launch_in): wiped on any early termination, consumed once later. */
	size_t in_bytes = (size_t)(__launch_in_end - __launch_in_start);
	secret_register(__launch_in_start, in_bytes);
	boot.launch_secrets = (gpa_t)(uintptr_t)__launch_in_start;
	boot.launch_psp_keys = boot.launch_secrets + PAGE_SIZE;
	boot.launch_psp_keys_max = in_bytes - PAGE_SIZE;
	gpa_t top = MAX(mm->max_gpa, 4ULL << 30);
	size_t bytes = rmp_storage_bytes(top);
	if (rmp_init(pool_alloc(bytes, PAGE_SIZE), bytes, top) != 0)
		return -1;
	gpa_t s, e;
	int rc = memmap_parse_4k_only(cmdline, cmdline_len, &s, &e);
	if (rc < 0 || (rc == 1 && rmp_hv_set_4k_only(s, e) != 0)) {
		con_printf("csvsm: sim: bad csvsm.sim_4k_only= value\n");
		return -1;
	}
	if (rc == 1)
		con_printf("csvsm: sim: hypervisor backs 0x%llx-0x%llx with 4K pages only\n",
			   (unsigned long long)s, (unsigned long long)e);
	const char *v;
	size_t vlen;
	extern bool sim_snp_trace;
	sim_snp_trace = cmdline_get(cmdline, cmdline_len, "csvsm.sim_trace", &v, &vlen) &&
			vlen == 1 && v[0] == '1';
	if (cmdline_get(cmdline, cmdline_len, "csvsm.sim_psc_limit", &v, &vlen)) {
		unsigned long n = 0;
		for (size_t i = 0; i < vlen; i++) {
			if (v[i] < '0' || v[i] > '9' || n > PSC_MAX_ENTRIES) {
				con_printf("csvsm: sim: bad csvsm.sim_psc_limit= value\n");
				return -1;
			}
			n = n * 10 + (unsigned long)(v[i] - '0');
		}
		if (!vlen || n > PSC_MAX_ENTRIES) {
			con_printf("csvsm: sim: bad csvsm.sim_psc_limit= value\n");
			return -1;
		}
		sim_hv_set_psc_limit((unsigned)n);
		con_printf(
		    "csvsm: sim: hypervisor handles at most %lu page-state entries per exit\n", n);
	}
	for (gpa_t g = mm->csvsm_start; g < mm->csvsm_end; g += PAGE_SIZE) {
		bool unchanged;
		if (rmp_hv_assign(g, false, true) != 0 ||
		    rmp_pvalidate(g, RMP_PG_SIZE_4K, true, &unchanged) != 0)
			return -1;
	}
	return 0;
}

static int sim_pvalidate(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	/* csvsm identity-maps memory, so the virtual address is the GPA. */
	return rmp_pvalidate((gpa_t)va, size, validate, unchanged);
}

static int sim_rmpadjust(vaddr_t va, unsigned size, uint64_t attrs)
{
	int rc = rmp_adjust((gpa_t)va, size, attrs);
	/* The guest's nested page tables follow the RMP's VMPL permissions. */
	if (rc == 0)
		sim_npt_sync((gpa_t)va, size == RMP_PG_SIZE_2M ? PAGE_SIZE_2M : PAGE_SIZE);
	return rc;
}

static __noreturn void sim_launch_guest(const struct guest_launch *gl)
{
	/* The firmware is part of the launch: its pages are the guest's, at its VMPL. */
	struct sim_io_config io = {.probe = gl->probe, .probe_size = gl->probe_size, .mm = gl->mm};
	sim_io_init(&io);
	struct sim_guest_config gc = {.mm = gl->mm,
				      .vmpl = gl->vmpl,
				      .caa = gl->caa,
				      .flash_gpa = gl->fw_gpa,
				      .flash_hpa = (gpa_t)(uintptr_t)gl->fw,
				      .flash_size = gl->fw_size,
				      .snp = gl->snp};
	sim_guest_start(&gc);
}

static uint64_t sim_ghcb_msr_call(uint64_t request)
{
	return sim_hv_msr_protocol(request);
}

static void sim_ghcb_call(struct percpu *cpu, struct ghcb *ghcb)
{
	sim_hv_ghcb_exit(cpu, ghcb);
}

static __noreturn void sim_terminate(bool success, unsigned reason_set, unsigned reason_code)
{
	secret_wipe_all();
	if (!success)
		con_printf("csvsm: terminating with failure (reason set %u code 0x%x)\n",
			   reason_set, reason_code);
	/* QEMU exits with (value << 1) | 1: 0 -> 1 (success), 1 -> 3 (failure). */
	outl(DEBUG_EXIT_PORT, success ? 0 : 1);
	for (;;) {
		irq_disable();
		cpu_halt();
	}
}

/* After pre-acceptance: every planned page validated and granted, none twice. */
static void sim_accept_audit(const struct accept_plan *plan)
{
	struct accept_check_result r;
	accept_check(plan, boot.csvsm_start, boot.csvsm_end, &r);
	con_printf("csvsm: accept-check: pages=%llu missing=%llu double=%llu\n",
		   (unsigned long long)r.pages, (unsigned long long)r.missing,
		   (unsigned long long)r.double_);
	if (r.missing || r.double_)
		platform->terminate(false, ACCEPT_TERM_SET, ACCEPT_TERM_PVALIDATE);
}

const struct platform_ops platform_sim = {
    .name = "sim",
    .rmp_model = true,
    .accept_audit = sim_accept_audit,
    .setup = sim_setup,
    .pvalidate = sim_pvalidate,
    .rmpadjust = sim_rmpadjust,
    .flush_guest_tlb = sim_flush_guest_tlb,
    .fpu_enter = sim_fpu_enter,
    .ghcb_msr_call = sim_ghcb_msr_call,
    .ghcb_call = sim_ghcb_call,
    .start_ap = sipi_start_ap,
    .psp_setup = sim_psp_setup,
    .launch_guest = sim_launch_guest,
    .terminate = sim_terminate,
};
