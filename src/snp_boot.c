/*
 * csvsm's boot on SEV-SNP, from its IGVM launch image (include/csvsm/igvm_boot.h,
 * docs/igvm.md). src/boot.S snp_entry32 built page tables with the C-bit and
 * calls snp_boot_main(boot block GPA) in long mode on the boot stack. From
 * there, in the order the hardware forces (docs/snp-boot.md):
 *  1. the boot block copied once and checked (it is measured, but csvsm does
 *     not start on a layout it was not built for);
 *  2. the rest of csvsm's region (REQUIRED_MEMORY: backed, not validated)
 *     validated before the page pool hands out any of it, and the guard
 *     pages under the boot stack unmapped, before any exception can be
 *     delivered (a host may nest #HV injections from the IDT on);
 *  3. IDT and #VC: CPUID is served from the PSP-checked CPUID page, so the
 *     FPU can be enabled (its feature checks execute CPUID);
 *  4. the boot vCPU's GHCB made shared and registered; only then port I/O,
 *     hence the console (earlier lines are held in memory);
 *  5. the host's parameter areas read once and checked (memory map, vCPU
 *     count, MADT: untrusted);
 *  6. the libraries, the APs (GHCB AP creation with APIC IDs from the MADT),
 *     pre-acceptance of all guest RAM the launch did not validate, and the
 *     guest (src/guest.c, src/guest_snp.c).
 * Every failure before the console works ends the VM through the GHCB MSR
 * protocol with reason set 1 and a code naming the step.
 */
#include "arch/x86/insn.h"
#include "attest/igvm.h"
#include "csvsm/boot.h"
#include "csvsm/hv_doorbell.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "csvsm/exception.h"
#include "csvsm/igvm_boot.h"
#include "base/platform.h"
#include "base/secret.h"
#include "base/string.h"
#include "mm/memmap.h"
#include "mm/pgtable.h"
#include "mm/pool.h"
#include "snp/snp.h"
#include "snp/vc.h"
#include "src/entry.h"
#include "base/libc/libc.h"

extern uint32_t snp_cbit_hi;
extern const uint8_t __image_start[], __text_end[], __bss_end[];
void cpu_enable_fpu(void);
void con_init(void);
void _init(void);
extern void (*__init_array_start[])(void), (*__init_array_end[])(void);
__noreturn void snp_boot_main(uint32_t bb_gpa);

#define LIBC_HEAP_BYTES (8ULL << 20)

/* Reason codes (set 1) of a boot that cannot go on. */
enum {
	SNP_BOOT_BLOCK = 0x40,
	SNP_BOOT_CPUID = 0x41,
	SNP_BOOT_REGION = 0x42,
	SNP_BOOT_GHCB = 0x43,
	SNP_BOOT_MEMMAP = 0x44,
	SNP_BOOT_MADT = 0x45,
};

static struct csvsm_igvm_boot_block bb;
static struct csvsm_igvm_vtpm bb_vtpm; /* the vTPM configuration after the block, same page */
static struct memmap snp_memmap;
static struct hvm_memmap_table_entry raw[MEMMAP_MAX_ENTRIES];
static struct mem_range to_accept[MEMMAP_MAX_RANGES + 2 * CSVSM_IGVM_MAX_RANGES];
static unsigned n_to_accept;
static struct mem_range fw_host_pages[CSVSM_IGVM_MAX_RANGES + 1];
static char cmdline[CSVSM_IGVM_CMDLINE_SIZE];
static uint32_t apic_ids[MAX_CPUS];
static unsigned n_apic_ids;

const struct csvsm_igvm_boot_block *snp_boot_block_copy(void)
{
	return &bb;
}

const struct csvsm_igvm_vtpm *snp_boot_vtpm_copy(void)
{
	return &bb_vtpm;
}

static __noreturn void stop(unsigned code)
{
	con_printf("csvsm: snp boot failed (reason 0x%x)\n", code);
	platform_snp.terminate(false, 1, code);
}

/* 1. The boot block: one copy, checked against what this image was built with. */
static void read_boot_block(uint32_t gpa)
{
	gpa_t img_start = (gpa_t)(uintptr_t)__image_start;
	/* The loaded image ends with .bss (the launch's last pages); the rest of
	 * the region is REQUIRED_MEMORY, validated below. */
	gpa_t img_end = ALIGN_UP((gpa_t)(uintptr_t)__bss_end, PAGE_SIZE);

	if (gpa != CSVSM_IGVM_BOOT_BLOCK_GPA)
		stop(SNP_BOOT_BLOCK);
	memcpy(&bb, (const void *)(uintptr_t)gpa, sizeof(bb));
	memcpy(&bb_vtpm, (const void *)(uintptr_t)(gpa + CSVSM_IGVM_VTPM_OFF), sizeof(bb_vtpm));
	if (bb.magic != CSVSM_IGVM_BOOT_MAGIC || bb.version != CSVSM_IGVM_BOOT_VERSION ||
	    bb.size != sizeof(bb) || bb.region_start != img_start || bb.image_start != img_start ||
	    bb.image_end != img_end || bb.region_end <= bb.image_end ||
	    !IS_ALIGNED(bb.region_end, PAGE_SIZE) || bb.n_ranges > CSVSM_IGVM_MAX_RANGES ||
	    !IS_ALIGNED(bb.cpuid_gpa, PAGE_SIZE) || !bb.cpuid_gpa ||
	    !IS_ALIGNED(bb.secrets_gpa, PAGE_SIZE) || !bb.secrets_gpa)
		stop(SNP_BOOT_BLOCK);
	/* The launch secrets page holds VMPCK0..3 until csvsm takes its copy
	 * (src/guest.c secrets_take): wiped on every termination from here on,
	 * the early ones (a refused memory map, a failed GHCB) included. */
	if (secret_register((void *)(uintptr_t)bb.secrets_gpa, PAGE_SIZE) != 0)
		stop(SNP_BOOT_BLOCK);
	memcpy(cmdline, bb.cmdline, sizeof(cmdline) - 1);
	cmdline[sizeof(cmdline) - 1] = 0;
}

/* 2. [image_end, region_end): backed and private, not validated by the launch. */
static void validate_region_tail(void)
{
	for (gpa_t g = bb.image_end; g < bb.region_end;) {
		bool unchanged = false;
		int rc = -1;
		if (IS_ALIGNED(g, PAGE_SIZE_2M) && bb.region_end - g >= PAGE_SIZE_2M) {
			rc = pvalidate_insn((vaddr_t)g, RMP_PG_SIZE_2M, true, &unchanged);
			if (rc == PVALIDATE_OK && !unchanged) {
				g += PAGE_SIZE_2M;
				continue;
			}
			if (rc != PVALIDATE_FAIL_SIZEMISMATCH)
				stop(SNP_BOOT_REGION);
		}
		rc = pvalidate_insn((vaddr_t)g, RMP_PG_SIZE_4K, true, &unchanged);
		if (rc != PVALIDATE_OK || unchanged) /* validated twice: someone else was here */
			stop(SNP_BOOT_REGION);
		g += PAGE_SIZE;
	}
}

static bool param_ok(const struct csvsm_igvm_param *p, uint32_t min)
{
	return p->gpa && IS_ALIGNED(p->gpa, PAGE_SIZE) && p->size >= min &&
	       p->gpa >= CSVSM_IGVM_BOOT_BLOCK_GPA && p->gpa + p->size <= CSVSM_IGVM_BOOT_END;
}

/*
 * The pages inside the firmware's SEC area (from its lowest to its highest
 * SEV metadata section) that no metadata section names: the firmware
 * expects them not validated. In OVMF that is the SEC GHCB page, which it
 * uses with C=0 from the reset vector on and never converts
 * (OvmfPkg/ResetVector/ResetVector.nasmb: "The VMM does not need to
 * validate the shared page", SNP_SEC_MEM_SIZE_DESC_1 ends at
 * PcdOvmfSecGhcbBase and DESC_2 starts one page later). csvsm leaves them
 * to the host: not pre-accepted, not recorded as validated, so that a
 * pre-accepted page PVALIDATE finds not validated can only be the host's
 * doing (src/core_proto.c). Returns the count, or -1.
 */
static int fw_host_ranges(struct mem_range *out, unsigned max)
{
	struct mem_range span = {~0ULL, 0}, launch[CSVSM_IGVM_MAX_RANGES];
	for (unsigned k = 0; k < bb.n_ranges; k++) {
		uint32_t kind = bb.ranges[k].kind;
		launch[k] =
		    (struct mem_range){bb.ranges[k].gpa, bb.ranges[k].gpa + bb.ranges[k].size};
		/* The firmware's own sections only: the secrets and CPUID pages
		 * count when they are the firmware's metadata pages, not csvsm's
		 * fallback pages in its launch area. */
		bool fw =
		    kind == CSVSM_IGVM_RANGE_FW_ZERO || kind == CSVSM_IGVM_RANGE_CAA ||
		    (kind == CSVSM_IGVM_RANGE_SECRETS && (bb.flags & CSVSM_IGVM_F_SECRETS_IN_FW)) ||
		    (kind == CSVSM_IGVM_RANGE_CPUID && (bb.flags & CSVSM_IGVM_F_CPUID_IN_FW));
		if (!fw || launch[k].end > CSVSM_IGVM_BOOT_BLOCK_GPA)
			continue;
		span.start = MIN(span.start, launch[k].start);
		span.end = MAX(span.end, launch[k].end);
	}
	if (span.start >= span.end)
		return 0;
	return mem_ranges_subtract(&span, 1, launch, bb.n_ranges, out, max);
}

/*
 * 5a. The host's memory map (IGVM MEMORY_MAP: QEMU's e820, untrusted): copied
 * once into PVH-style entries, csvsm's region added as the RAM it lives in
 * (it is memory, outside what the host calls RAM), then the ordinary checks
 * (mm/memmap.c). Guest RAM to pre-accept is that RAM less every range the
 * launch validated (the firmware's pre-validated pages, secrets, CPUID and
 * calling area): those are validated already and stay as the launch left them.
 */
static void read_memory_map(void)
{
	static struct igvm_memory_map_entry
	    e[CSVSM_IGVM_MEMMAP_SIZE / sizeof(struct igvm_memory_map_entry)];
	unsigned n = 0;

	if (!param_ok(&bb.memory_map, sizeof(e)))
		stop(SNP_BOOT_MEMMAP);
	memcpy(e, (const void *)(uintptr_t)bb.memory_map.gpa, sizeof(e));
	for (unsigned i = 0; i < ARRAY_SIZE(e) && e[i].number_of_pages; i++) {
		if (n + 1 >= MEMMAP_MAX_ENTRIES || e[i].starting_gpa_page_number >> 40 ||
		    e[i].number_of_pages >> 40) {
			con_printf("csvsm: memmap: refused: %s (entry %u)\n",
				   n + 1 >= MEMMAP_MAX_ENTRIES ? "too many entries"
							       : "entry beyond the address space",
				   i);
			stop(SNP_BOOT_MEMMAP);
		}
		raw[n++] = (struct hvm_memmap_table_entry){
		    .addr = e[i].starting_gpa_page_number << 12,
		    .size = e[i].number_of_pages << 12,
		    .type = e[i].entry_type == IGVM_MEMMAP_MEMORY ? MEMMAP_TYPE_RAM
								  : MEMMAP_TYPE_RESERVED,
		};
	}
	raw[n++] = (struct hvm_memmap_table_entry){.addr = bb.region_start,
						   .size = bb.region_end - bb.region_start,
						   .type = MEMMAP_TYPE_RAM};
	int rc = memmap_build(&snp_memmap, raw, n, bb.region_start, bb.region_end);
	if (rc != MEMMAP_OK) {
		con_printf("csvsm: memmap: refused: %s (entry %d)\n", memmap_strerror(rc),
			   snp_memmap.bad_index);
		stop(SNP_BOOT_MEMMAP);
	}
	/*
	 * csvsm's own launch area (the boot block, the parameter areas and the
	 * pages up to CSVSM_IGVM_BOOT_END) and image are never guest RAM: a map
	 * that calls them RAM would have csvsm record them as validated guest
	 * pages the guest may name (issue 15 finding 4). QEMU's map never does
	 * (its RAM below 4 GiB ends below the PCI hole, hw/i386/pc.c
	 * pc_memory_init); refuse it.
	 */
	for (unsigned k = 0; k <= bb.n_ranges; k++) {
		struct mem_range own = {CSVSM_IGVM_BOOT_BLOCK_GPA, CSVSM_IGVM_BOOT_END};
		if (k < bb.n_ranges) {
			uint32_t kind = bb.ranges[k].kind;
			if (kind != CSVSM_IGVM_RANGE_IMAGE && kind != CSVSM_IGVM_RANGE_BOOT &&
			    kind != CSVSM_IGVM_RANGE_PARAM)
				continue;
			own = (struct mem_range){bb.ranges[k].gpa,
						 bb.ranges[k].gpa + bb.ranges[k].size};
		}
		for (unsigned i = 0; i < snp_memmap.nr_ram; i++)
			if (snp_memmap.ram[i].start < own.end &&
			    own.start < snp_memmap.ram[i].end) {
				con_printf("csvsm: memmap: refused: RAM [0x%llx, 0x%llx) covers "
					   "csvsm's launch area [0x%llx, 0x%llx)\n",
					   (unsigned long long)snp_memmap.ram[i].start,
					   (unsigned long long)snp_memmap.ram[i].end,
					   (unsigned long long)own.start,
					   (unsigned long long)own.end);
				stop(SNP_BOOT_MEMMAP);
			}
	}
	/* Pre-acceptance: the RAM ranges less the launch-validated ranges and
	 * less the pages the firmware leaves to the host (fw_host_ranges). */
	struct mem_range holes[2 * CSVSM_IGVM_MAX_RANGES + 1];
	unsigned nh = 0;
	for (unsigned k = 0; k < bb.n_ranges; k++)
		holes[nh++] =
		    (struct mem_range){bb.ranges[k].gpa, bb.ranges[k].gpa + bb.ranges[k].size};
	int nf = fw_host_ranges(fw_host_pages, ARRAY_SIZE(fw_host_pages));
	if (nf < 0)
		stop(SNP_BOOT_MEMMAP);
	for (int k = 0; k < nf; k++)
		holes[nh++] = fw_host_pages[k];
	boot.fw_host_pages = fw_host_pages;
	boot.nr_fw_host_pages = (unsigned)nf;
	int m = mem_ranges_subtract(snp_memmap.ram, snp_memmap.nr_ram, holes, nh, to_accept,
				    ARRAY_SIZE(to_accept));
	if (m < 0)
		stop(SNP_BOOT_MEMMAP);
	n_to_accept = (unsigned)m;
	boot.memmap = &snp_memmap;
	boot.csvsm_start = bb.region_start;
	boot.csvsm_end = bb.region_end;
	memmap_print(&snp_memmap);
}

/*
 * The dashboard says what of the host's RAM csvsm did not pre-accept, and
 * why: the legacy window (add_ram_pc), the pages the firmware expects not
 * validated (fw_host_ranges) and what the launch validated already.
 */
static void report_left_out(void)
{
	const struct mem_range *lo = &snp_memmap.legacy_left_out;
	if (lo->start < lo->end)
		boot_phase("memory",
			   "not pre-accepted 0x%llx-0x%llx: the host calls it RAM; it is the "
			   "legacy VGA/SMRAM/PAM window, not RAM on q35, never used by OVMF",
			   (unsigned long long)lo->start, (unsigned long long)lo->end);
	for (unsigned k = 0; k < boot.nr_fw_host_pages; k++)
		boot_phase("memory",
			   "not pre-accepted 0x%llx-0x%llx: left to the host, the firmware "
			   "uses it unvalidated (OVMF's SEC GHCB, C=0)",
			   (unsigned long long)boot.fw_host_pages[k].start,
			   (unsigned long long)boot.fw_host_pages[k].end);
	unsigned long long launch = 0;
	for (unsigned k = 0; k < bb.n_ranges; k++)
		launch += bb.ranges[k].size;
	boot_phase("memory", "not pre-accepted: %u ranges (%llu KiB) the launch validated",
		   bb.n_ranges, launch >> 10);
}

/* 5b. vCPUs: the host's count, APIC IDs from its MADT (processor local APIC entries). */
static unsigned read_vcpus(void)
{
	uint32_t count;
	if (!param_ok(&bb.vp_count, 4))
		stop(SNP_BOOT_MADT);
	memcpy(&count, (const void *)(uintptr_t)bb.vp_count.gpa, 4);
	if (count == 0 || count > MAX_CPUS) {
		con_printf("csvsm: vcpus: refused: the host says %u vCPUs (1..%u)\n", count,
			   MAX_CPUS);
		stop(SNP_BOOT_MADT);
	}
	n_apic_ids = 0;
	if (bb.flags & CSVSM_IGVM_F_MADT) {
		static uint8_t madt[CSVSM_IGVM_MADT_SIZE];
		uint32_t len;
		if (!param_ok(&bb.madt, sizeof(madt)))
			stop(SNP_BOOT_MADT);
		memcpy(madt, (const void *)(uintptr_t)bb.madt.gpa, sizeof(madt));
		memcpy(&len, madt + 4, 4);
		if (memcmp(madt, "APIC", 4) || len < 44 || len > sizeof(madt))
			stop(SNP_BOOT_MADT);
		for (uint32_t off = 44; off + 2 <= len;) {
			uint8_t type = madt[off], l = madt[off + 1];
			if (l < 2 || off + l > len)
				stop(SNP_BOOT_MADT);
			if (type == 0 && l >= 8 && (madt[off + 4] & 1) && n_apic_ids < MAX_CPUS) {
				/* One vCPU per APIC ID: AP creation names the vCPU by
				 * it, so a repeated ID would replace a running VMSA
				 * (csvsm's own boot vCPU's, for the first entry's). */
				for (unsigned k = 0; k < n_apic_ids; k++)
					if (apic_ids[k] == madt[off + 3]) {
						con_printf(
						    "csvsm: madt: refused: APIC ID %u listed "
						    "twice\n",
						    madt[off + 3]);
						stop(SNP_BOOT_MADT);
					}
				apic_ids[n_apic_ids++] = madt[off + 3];
			}
			off += l;
		}
	}
	if (!n_apic_ids) /* no MADT: QEMU numbers one socket's APIC IDs 0..n-1 */
		for (; n_apic_ids < count; n_apic_ids++)
			apic_ids[n_apic_ids] = n_apic_ids;
	/* The boot processor is the MADT's first processor entry (ACPI 6.5
	 * §5.2.12; QEMU builds it so): the guest's boot VMSA goes to it. */
	percpus[0].apic_id = apic_ids[0];
	return MIN(count, n_apic_ids);
}

void ap_entry64(void);

/* csvsm's APs start where the boot vCPU runs now: its paging, GDT, IDT, features. */
void snp_prepare_aps(uint64_t sev_features)
{
	struct desc_ptr gdt, idt;
	sgdt(&gdt);
	sidt(&idt);
	snp_set_ap_context(&(struct snp_ap_context){
	    .rip = (uint64_t)(uintptr_t)ap_entry64,
	    .cr0 = read_cr0(),
	    .cr3 = read_cr3(),
	    .cr4 = read_cr4(),
	    .efer = rdmsr(MSR_EFER),
	    .gdtr_base = gdt.base,
	    .gdtr_limit = gdt.limit,
	    .idtr_base = idt.base,
	    .idtr_limit = idt.limit,
	    .cs_sel = 0x08,
	    .ds_sel = 0x10,
	    .sev_features = sev_features,
	});
}

uint32_t snp_boot_apic_id(unsigned i)
{
	return i < n_apic_ids ? apic_ids[i] : i;
}

__noreturn void snp_boot_main(uint32_t bb_gpa)
{
	con_hold();
	platform = &platform_snp;
	pgtable_cbit = (uint64_t)snp_cbit_hi << 32;
	read_boot_block(bb_gpa);

	/*
	 * 2. csvsm's whole region, its page pool and the guard pages under the
	 * boot stack, before the IDT is loaded: from then on the host may
	 * inject #HV at any instruction. #HV has its own IST stack (injections
	 * nested before a handler's first instruction no longer walk RSP down:
	 * src/exception.S, issue 34); the guard stops an overflow of the boot
	 * stack before the .bss under it (`platform` lies there), and the IST
	 * stacks' guards need the pool (cpu_init_self). Until the IDT is loaded an exception shuts
	 * the vCPU down. Nothing here takes a #VC: PVALIDATE does not, and a failure stops through
	 * the MSR protocol with the console held.
	 */
	validate_region_tail();
	pool_init(bb.image_end, bb.region_end);
	extern uint8_t boot_stack_guard[]; /* src/boot.S */
	for (unsigned g = 0; g < BOOT_STACK_GUARD; g += PAGE_SIZE)
		if (pgtable_set_guard((vaddr_t)(uintptr_t)boot_stack_guard + g) != 0)
			stop(SNP_BOOT_REGION);

	/* 3. Exceptions and #VC; the FPU after that (its checks execute CPUID). */
	idt_init();
	exception_vc_handler = vc_exception;
	hv_doorbell_init(); /* restricted injection: the host may inject #HV from the first
			       instruction */
	if (vc_init((const struct snp_cpuid_page *)(uintptr_t)bb.cpuid_gpa, read_cr4(), 1, 0))
		stop(SNP_BOOT_CPUID);
	percpus[0].id = 0;
	cpu_init_self(&percpus[0]); /* loads the IDT, then its CPUID (RDRAND) is a #VC */
	cpu_enable_fpu();
	/* XCR0 exists only with CR4.OSXSAVE (the CPUID page may offer no XSAVE). */
	vc_set_xstate(read_cr4(), (read_cr4() & (1ULL << 18)) ? xgetbv0() : 1, 0);

	/* 4. The boot vCPU's GHCB, then the console. */
	percpus[0].ghcb = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	percpus[0].ghcb_gpa = (gpa_t)(uintptr_t)percpus[0].ghcb;
	if (snp_ghcb_init(&percpus[0]))
		stop(SNP_BOOT_GHCB);
	con_init();
	con_release();
	timer_init();
	con_printf("\ncsvsm: Secure VM Service Module\n");
	if (read_cr4() & (1ULL << 18)) { /* the CPUID page offered XSAVE (cpu_enable_fpu) */
		struct cpuid_regs d;
		cpuid_count(0xD, 0, &d);
		/* cpu_enable_fpu took x87 and SSE from a set XSETBV would refuse. */
		if (xgetbv0() != (d.eax & 7)) {
			con_printf(
			    "csvsm: cpuid: refused: leaf 0xD offers XCR0 components 0x%x (x87 "
			    "is required, AVX requires SSE: XSETBV, APM vol. 3)\n",
			    d.eax & 7);
			stop(SNP_BOOT_CPUID);
		}
		con_printf("csvsm: XSAVE: XCR0 0x%llx\n", (unsigned long long)xgetbv0());
	}
	if (!random_available())
		stop(SNP_BOOT_CPUID);
	/*
	 * The host fills the CPUID page and the PSP only checks that it claims
	 * no more than the CPU has, so a host may hide AES-NI and PCLMULQDQ.
	 * libcrypto and mbedTLS would then seal VMPCK0's AES-GCM messages and
	 * run the vTPM's AES with table-based code whose cache footprint
	 * depends on the key. Every SEV-SNP CPU has both: refuse to start
	 * without them (issue 15 item 5). CPUID 1 ECX bit 25 AES, bit 1
	 * PCLMULQDQ (APM vol. 3, CPUID Fn0000_0001_ECX).
	 */
	struct cpuid_regs id1;
	cpuid(1, &id1);
	bool aes = id1.ecx & (1u << 25), clmul = id1.ecx & (1u << 1);
	if (!aes || !clmul) {
		con_printf("csvsm: cpuid: refused: the CPUID page hides %s (every SEV-SNP CPU has "
			   "both; csvsm's AES-GCM must not fall back to table-based code)\n",
			   !aes && !clmul ? "AES-NI and PCLMULQDQ"
			   : !aes	  ? "AES-NI"
					  : "PCLMULQDQ");
		stop(SNP_BOOT_CPUID);
	}
	boot_phase("platform", "snp, TSC %llu MHz, C-bit %u, launch image region 0x%llx-0x%llx",
		   (unsigned long long)(timer_tsc_hz() / 1000000),
		   (unsigned)__builtin_ctzll(pgtable_cbit), (unsigned long long)bb.region_start,
		   (unsigned long long)bb.region_end);

	/* 5. What the host says about the VM. */
	boot.cmdline = cmdline;
	boot.cmdline_len = strlen(cmdline);
	boot.guest_vmpl = 2;
	boot.launch_secrets = bb.secrets_gpa;
	read_memory_map();
	unsigned want = read_vcpus();
	pgtable_identity_map_to(MAX(snp_memmap.max_gpa, 4ULL << 30));
	/* Only csvsm's R+X segment stays executable (mm/pgtable.c); before the
	 * APs start, which load this CR3. */
	pgtable_restrict_exec((vaddr_t)(uintptr_t)__image_start, (vaddr_t)(uintptr_t)__text_end);
	boot_phase("memory", "%llu MiB RAM in %u ranges (%u to pre-accept); csvsm 0x%llx-0x%llx",
		   (unsigned long long)(memmap_ram_bytes(&snp_memmap) >> 20), snp_memmap.nr_ram,
		   n_to_accept, (unsigned long long)bb.region_start,
		   (unsigned long long)bb.region_end);
	report_left_out();

	/* 6. Libraries, APs, acceptance, the guest. */
	void *heap = pool_alloc(LIBC_HEAP_BYTES, PAGE_SIZE);
	libc_heap_init(heap, LIBC_HEAP_BYTES);
	secret_register(heap, LIBC_HEAP_BYTES);
	/* The libraries' static state, seeds and NV image among it (linker.ld). */
	extern uint8_t __tpm_lib_bss_start[], __tpm_lib_bss_end[];
	size_t lib_bss = (size_t)((uintptr_t)__tpm_lib_bss_end - (uintptr_t)__tpm_lib_bss_start);
	if (lib_bss && secret_register(__tpm_lib_bss_start, lib_bss) != 0)
		panic("snp: the secrets table is full");
	_init();
	for (void (**f)(void) = __init_array_start; f < __init_array_end; f++)
		(*f)();
	snp_prepare_aps(bb.sev_features);
	smp_apic_id_of = snp_boot_apic_id;
	unsigned n = smp_start_aps(want);
	boot_phase("vcpus", "%u of %u online", n, want);
	accept_ranges(to_accept, n_to_accept, snp_memmap.max_gpa);
	boot_guest();
}
