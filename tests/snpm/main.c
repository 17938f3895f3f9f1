/*
 * The SNP machine: a freestanding program QEMU TCG boots (PVH, like
 * csvsm's sim image used to be) that plays AMD SEV-SNP hardware, the PSP
 * and a KVM/QEMU host with SVSM support, for build/csvsm.igvm. csvsm runs
 * inside it at VMPL0 exactly as the launch image would on hardware: its
 * own snp platform code, PVALIDATE and RMPADJUST as instructions, the GHCB
 * for everything the host does.
 *
 * Boot: the machine's region is the top of the VM's low RAM (linked at
 * SNPM_BASE, to the end of that RAM range); everything else is the VM's
 * memory, identity-mapped for its guests. Then, as QEMU and the PSP do at
 * launch (docs/snp-machine.md):
 *  - the IGVM file (fw_cfg opt/csvsm/igvm, hidden from the guests) is
 *    loaded and measured by tests/snpm/igvm_load.c, written apart from
 *    csvsm's own tools: every page is assigned and validated for VMPL0 in
 *    the RMP model (tests/snpm/model/rmp.c), a page populated twice is refused as the
 *    PSP refuses it, pages outside RAM are backed with machine memory
 *    (QEMU's qigvm_prepare_memory), REQUIRED_MEMORY is assigned but not
 *    validated, the PSP makes the secrets page (VMPCK0..3 from RDRAND)
 *    and the CPUID page is the host's table (model/cpuid_page.c), parameter areas
 *    get the vCPU count, the memory map (the VM's RAM less the machine)
 *    and a MADT; the launch digest is printed and given to the PSP model;
 *  - the PSP model (tests/snpm/model/psp.c) holds the VMPCKs and the test VCEK
 *    (fw_cfg opt/csvsm/psp-keys) in machine memory, which no VMPL maps;
 *  - the vCPUs run (tests/snpm/vmpl.c): the boot vCPU's VMPL0 from the
 *    launch VMSA, the others once csvsm creates them.
 * The VM ends through isa-debug-exit: status 1 when the guest powered
 * off, 3 on any failure or termination request.
 */
#include "arch/x86/insn.h"
#include "tests/snpm/model/psp.h"
#include "csvsm/boot.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "tests/snpm/fw_cfg.h"
#include "csvsm/exception.h"
#include "base/platform.h"
#include "arch/x86/pvh.h"
#include "base/secret.h"
#include "tests/snpm/model/guest_config.h"
#include "base/string.h"
#include "mm/cmdline.h"
#include "mm/memmap.h"
#include "mm/pgtable.h"
#include "csvsm/tss.h"
#include "mm/pool.h"
#include "tests/snpm/model/rmp.h"
#include "tests/snpm/model/cpuid_page.h"
#include "snp/secrets.h"
#include "snp/vmsa.h"
#include "tests/snpm/hv/svm.h"
#include "tests/snpm/hv/sipi.h"
#include "base/libc/libc.h"
#include "igvm_load.h"
#include "snpm.h"
#include "src/entry.h" /* AP_STACK_SIZE, AP_STACK_GUARD, IST_STACK_SIZE */

#define DEBUG_EXIT_PORT 0xF4
#define SNPM_CBIT	51 /* the C-bit this hardware reports (CPUID 0x8000001F EBX[5:0]) */
#define CMDLINE_MAX	1024
#define IGVM_MAX	(64u << 20)
#define HEAP_BYTES	(4ULL << 20) /* mbedTLS (PSP model, launch digest) */
#define AP_STACKS	(MAX_CPUS * (68ULL << 10))
/* Guest-physical ranges QEMU's q35 gives devices: no launch page goes there. */
#define DEV_START 0xFEC00000ULL /* IOAPIC, HPET, local APIC, ... */
#define DEV_END	  0xFF000000ULL

struct boot_info boot;
__noreturn void boot_main(uint32_t start_info_pa);
void con_init(void);

extern const uint8_t __image_start[], __image_end[];

static struct memmap mm;
static struct hvm_memmap_table_entry raw_map[MEMMAP_MAX_ENTRIES];
static char cmdline[CMDLINE_MAX];
static size_t cmdline_len;

/* ---- the platform the shared objects see: a plain x86 machine ---- */

/*
 * After a frame swap (snpm.frame_swap=): how many frames of each swapped GPA
 * are validated. More than one is a GPA validated twice, which csvsm must
 * never let happen (tests/snpm/frames.sh).
 */
static void print_frames(void)
{
	unsigned n = rmp_hv_swaps(), twice = 0;
	if (!n)
		return;
	for (unsigned s = 0; s < n; s++) {
		gpa_t g = rmp_hv_swap_gpa(s);
		unsigned k = rmp_validated_frames(g);
		twice += k > 1;
		con_printf("snpm: frames: GPA 0x%llx has %u validated frame(s)\n",
			   (unsigned long long)g, k);
	}
	con_printf("snpm: frames: swapped=%u validated-twice=%u\n", n, twice);
}

/*
 * Every way the VM ends comes here. "snpm: end: ..." is the log's last
 * line: the tests require it before they take the absence of a fault or
 * panic line as evidence (an empty or cut-off log has no end line).
 */
static void secrets_at_end(void);

static __noreturn void snpm_terminate(bool success, unsigned reason_set, unsigned reason_code)
{
	secrets_at_end();
	sim_uart_flush();
	if (!success)
		con_printf("snpm: terminating with failure (reason set %u code 0x%x)\n", reason_set,
			   reason_code);
	print_frames();
	sim_snp_print_psc_refuse();
	/* After the host converted pages of csvsm's behind it (a guest's C=0
	 * read, issue 34 item 6): csvsm must not have validated one again. */
	if (sim_csvsm_pages_lost()) {
		struct sim_snp_counts c;
		sim_snp_get_counts(&c);
		con_printf("snpm: csvsm-pages: lost=%u revalidated=%llu\n", sim_csvsm_pages_lost(),
			   (unsigned long long)c.csvsm_pages_revalidated);
	}
	/* How the host's backing met the guests over the whole run: 4K
	 * operations inside 2M entries split them (KVM's PSMASH), counted. */
	struct rmp_hv_stats hs;
	rmp_hv_get_stats(&hs);
	con_printf("snpm: rmp: backing=%s psmash_sizem=%llu psmash_update=%llu\n",
		   rmp_hv_backing_4k() ? "4k" : "2m", (unsigned long long)hs.psmash_sizem,
		   (unsigned long long)hs.psmash_update);
	con_printf("snpm: end: %s\n", success ? "success" : "failure");
	/* QEMU exits with (value << 1) | 1: 0 -> 1 (success), 1 -> 3 (failure). */
	outl(DEBUG_EXIT_PORT, success ? 0 : 1);
	for (;;) {
		irq_disable();
		cpu_halt();
	}
}

__noreturn void hv_stop_hung(void)
{
	sim_uart_flush();
	print_frames();
	con_printf("snpm: end: failure\n");
	/* (2 << 1) | 1: QEMU exits with 5, which no other ending gives. */
	outl(DEBUG_EXIT_PORT, 2);
	for (;;) {
		irq_disable();
		cpu_halt();
	}
}

static const struct platform_ops platform_snpm = {
    .name = "snpm",
    .flush_guest_tlb = sim_flush_guest_tlb,
    .fpu_enter = sim_fpu_enter,
    .start_ap = sipi_start_ap,
    .terminate = snpm_terminate,
};

static __noreturn void fail(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	fmt_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	con_printf("snpm: error: %s\n", buf);
	snpm_terminate(false, 0, 1);
}

static void __attribute__((format(printf, 2, 3)))
snpm_phase(const char *phase, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	boot_vphase("snpm ", phase, fmt, ap);
	va_end(ap);
}

/* ---- memory ---- */

static unsigned read_start_info(uint32_t pa)
{
	struct hvm_start_info si;
	memcpy(&si, (const void *)(uintptr_t)pa, sizeof(si));
	if (si.magic != HVM_START_MAGIC || si.version < 1)
		fail("no PVH start info (boot the machine with qemu -kernel)");
	if (si.cmdline_paddr && si.cmdline_paddr < (4ULL << 30)) {
		const char *src = (const char *)(uintptr_t)si.cmdline_paddr;
		while (cmdline_len < CMDLINE_MAX - 1 && src[cmdline_len])
			cmdline_len++;
		memcpy(cmdline, src, cmdline_len);
	}
	unsigned n = si.memmap_entries;
	if (n > MEMMAP_MAX_ENTRIES || si.memmap_paddr >= (4ULL << 30))
		fail("PVH memory map unusable");
	memcpy(raw_map, (const void *)(uintptr_t)si.memmap_paddr, n * sizeof(raw_map[0]));
	return n;
}

/*
 * The machine's region: its image to the end of the RAM range it was loaded
 * in. No guest RAM may remain above it there: an SVSM-aware OVMF validates
 * one range from 1 MiB to the top of low RAM.
 */
static void setup_memory(unsigned n)
{
	gpa_t start = (gpa_t)(uintptr_t)__image_start, end = 0;
	gpa_t img_end = ALIGN_UP((gpa_t)(uintptr_t)__image_end, PAGE_SIZE_2M);
	for (unsigned i = 0; i < n; i++)
		if (raw_map[i].type == MEMMAP_TYPE_RAM && raw_map[i].addr <= start &&
		    raw_map[i].addr + raw_map[i].size > start)
			end = ALIGN_DOWN(raw_map[i].addr + raw_map[i].size, PAGE_SIZE);
	if (end < img_end + (64ULL << 20))
		fail("the machine needs 64 MiB above its image at 0x%llx (qemu -m 2G or more)",
		     (unsigned long long)start);
	int rc = memmap_build(&mm, raw_map, n, start, end);
	if (rc != MEMMAP_OK)
		fail("memory map refused: %s", memmap_strerror(rc));
	boot.memmap = &mm;
	boot.csvsm_start = mm.csvsm_start;
	boot.csvsm_end = mm.csvsm_end;
	pool_init((gpa_t)(uintptr_t)__image_end, end);
	pgtable_identity_map_to(MAX(mm.max_gpa, 4ULL << 30));
}

/* ---- the launch: QEMU's IGVM loader and the PSP's SNP_LAUNCH_* ---- */

static struct {
	unsigned pages, zero, unmeasured, secrets, cpuid, vmsas;
	uint64_t required;
	struct vmsa bsp_vmsa;
	uint8_t vmpck[4][32];
} L;

/* Host memory for a launch page at gpa: guest RAM itself, or machine memory backing it. */
static uint8_t *launch_backing(gpa_t gpa)
{
	uint64_t hpa = hv_hpa(gpa);
	if (hpa != HV_NO_HPA)
		return (uint8_t *)(uintptr_t)hpa;
	if ((gpa >= mm.csvsm_start && gpa < mm.csvsm_end) || (gpa >= DEV_START && gpa < DEV_END) ||
	    gpa >= MAX(mm.max_gpa, 4ULL << 30))
		return NULL;
	uint8_t *chunk = pool_alloc(PAGE_SIZE_2M, PAGE_SIZE_2M);
	memset(chunk, 0, PAGE_SIZE_2M);
	if (hv_back_add(ALIGN_DOWN(gpa, PAGE_SIZE_2M), PAGE_SIZE_2M, chunk) != 0)
		return NULL;
	return chunk + (gpa & (PAGE_SIZE_2M - 1));
}

/* snpm.cpuid_hide_aes=1: a hostile host clears AES-NI and PCLMULQDQ (CPUID 1
 * ECX bits 25, 1) in the CPUID page; the PSP lets a host clear feature bits
 * (SNP ABI 56860 §7.1, CPUID page checks: only bits beyond what the CPU has
 * are refused). */
static bool cpuid_hide_aes;

static void host_cpuid(uint32_t leaf, uint32_t sub, struct cpuid_regs *r)
{
	cpuid_count(leaf, sub, r);
	if (leaf == 1 && cpuid_hide_aes)
		r->ecx &= ~((1u << 25) | (1u << 1));
}

/* The secrets page the PSP makes (SNP ABI 56860 §8.17.2.5, version 3). */
static int make_secrets(uint8_t *p)
{
	struct snp_secrets_page *s = (struct snp_secrets_page *)p;
	struct cpuid_regs r;
	memset(s, 0, sizeof(*s));
	cpuid(1, &r);
	s->version = 3;
	s->fms = r.eax;
	if (!random_bytes(L.vmpck, sizeof(L.vmpck)))
		return -1;
	memcpy(s->vmpck, L.vmpck, sizeof(s->vmpck));
	return 0;
}

/*
 * snpm.xcr0_lie=N: a host that fills leaf 0xD subleaf 0's EAX[2:0] (the
 * XCR0 components x87, SSE, AVX) with N. The PSP checks the page only
 * against what the CPU has, so any subset passes (SNP firmware ABI 56860,
 * SNP_LAUNCH_UPDATE of a CPUID page); N = 5 or 4 is a set XSETBV refuses.
 */
static uint32_t xcr0_lie = UINT32_MAX;

static void cpuid_page_lie(struct snp_cpuid_page *pg)
{
	if (xcr0_lie == UINT32_MAX)
		return;
	for (uint32_t i = 0; i < pg->count && i < SNP_CPUID_COUNT_MAX; i++)
		if (pg->fn[i].eax_in == 0xD && pg->fn[i].ecx_in == 0) {
			pg->fn[i].eax = (pg->fn[i].eax & ~7u) | xcr0_lie;
			con_printf(
			    "snpm: cpuid: the host's page offers XCR0 components 0x%x in leaf "
			    "0xD (snpm.xcr0_lie)\n",
			    xcr0_lie);
		}
}

static int on_page(void *ctx, uint64_t gpa, enum snpm_page_kind kind, const uint8_t *data)
{
	uint8_t *p = launch_backing(gpa);
	struct rmp_entry_info e;
	bool unchanged;
	if (!p) {
		con_printf("snpm: launch: page 0x%llx is neither RAM nor backable\n",
			   (unsigned long long)gpa);
		return 1;
	}
	if (rmp_query(gpa, &e) || e.assigned) {
		con_printf("snpm: launch: page 0x%llx populated twice\n", (unsigned long long)gpa);
		return 2;
	}
	switch (kind) {
	case SNPM_PAGE_NORMAL:
		memcpy(p, data, PAGE_SIZE);
		break;
	case SNPM_PAGE_ZERO:
		memset(p, 0, PAGE_SIZE);
		L.zero++;
		break;
	case SNPM_PAGE_UNMEASURED:
		if (data)
			memcpy(p, data, PAGE_SIZE);
		else
			memset(p, 0, PAGE_SIZE);
		L.unmeasured++;
		break;
	case SNPM_PAGE_SECRETS:
		if (L.secrets++ || make_secrets(p))
			return 3; /* one secrets page per launch */
		break;
	case SNPM_PAGE_CPUID:
		memset(p, 0, PAGE_SIZE);
		if (cpuid_page_fill((struct snp_cpuid_page *)p, host_cpuid, SNPM_CBIT) < 0)
			return 4;
		cpuid_page_lie((struct snp_cpuid_page *)p);
		L.cpuid++;
		break;
	}
	if (rmp_hv_assign(gpa, false, true) || rmp_pvalidate(gpa, RMP_PG_SIZE_4K, true, &unchanged))
		return 5;
	L.pages++;
	return 0;
}

static int on_required(void *ctx, uint64_t gpa, uint64_t bytes)
{
	for (gpa_t g = gpa; g < gpa + bytes;) {
		bool big = IS_ALIGNED(g, PAGE_SIZE_2M) && gpa + bytes - g >= PAGE_SIZE_2M &&
			   !rmp_hv_block_is_4k_only(g);
		uint64_t n = big ? PAGE_SIZE_2M : PAGE_SIZE;
		for (gpa_t p = g; p < g + n; p += PAGE_SIZE) {
			struct rmp_entry_info e;
			if (!launch_backing(p) || rmp_query(p, &e) || e.assigned)
				return 6;
		}
		if (rmp_hv_assign(g, big, true))
			return 7;
		g += n;
		L.required += n;
	}
	return 0;
}

/* IGVM_VHS_MEMORY_MAP_ENTRY (igvm_defs): the VM's RAM as QEMU's e820 has it, less the machine. */
struct igvm_mm_entry {
	uint64_t gpa_page, pages;
	uint16_t type, flags;
	uint32_t rsvd;
} __packed;

/* snpm.memmap=: a hostile host's memory map instead of the true one. */
static struct igvm_mm_entry mm_override[64];
static unsigned n_mm_override;
static bool have_mm_override;

/*
 * The guest's memory map as its host gives it, both as the IGVM MEMORY_MAP
 * parameter and as fw_cfg etc/e820 (one table in QEMU, e820_get_table).
 * Default, QEMU's: KVM's reserved identity-map/TSS pages first
 * (target/i386/kvm/kvm.c kvm_arch_init, at accelerator init, before the
 * board: e820_add_entry(0xfeffc000, 0x4000, E820_RESERVED)), then one RAM
 * entry from GPA 0 to the end of low RAM and one above 4 GiB if there is
 * RAM there (hw/i386/pc.c pc_memory_init); QEMU's IGVM loader turns it into
 * the MEMORY_MAP as it stands (for an SNP guest target/i386/sev.c
 * cgs_get_mem_map_entry, QEMU >= 10.0: E820_RAM -> MEMORY, E820_RESERVED ->
 * PLATFORM_RESERVED, table order). It covers the legacy window [640 KiB,
 * 1 MiB), which the machine does not back (not guest_memfd memory on q35).
 * snpm.e820=seabios: the map derived from the outer PVH map instead
 * (SeaBIOS-style, the window left out), as the machine gave before.
 */
static struct hvm_memmap_table_entry guest_e820[MEMMAP_MAX_ENTRIES + 2];
static unsigned n_guest_e820;
static bool e820_seabios;

static void build_guest_e820(void)
{
	if (e820_seabios) {
		int n = memmap_guest_e820(&mm, guest_e820, ARRAY_SIZE(guest_e820));
		n_guest_e820 = n < 0 ? 0 : (unsigned)n;
		return;
	}
	gpa_t low = 0, high = 0;
	for (unsigned i = 0; i < mm.nr_ram; i++) {
		if (mm.ram[i].end <= (4ULL << 30))
			low = MAX(low, mm.ram[i].end);
		else
			high = MAX(high, mm.ram[i].end);
	}
	n_guest_e820 = 0;
	guest_e820[n_guest_e820++] =
	    (struct hvm_memmap_table_entry){0xfeffc000, 0x4000, MEMMAP_TYPE_RESERVED, 0};
	guest_e820[n_guest_e820++] = (struct hvm_memmap_table_entry){0, low, MEMMAP_TYPE_RAM, 0};
	if (high > (4ULL << 30))
		guest_e820[n_guest_e820++] = (struct hvm_memmap_table_entry){
		    4ULL << 30, high - (4ULL << 30), MEMMAP_TYPE_RAM, 0};
}

static int fill_memory_map(uint8_t *area, uint64_t bytes)
{
	struct igvm_mm_entry *e = (struct igvm_mm_entry *)area;
	uint64_t max = bytes / sizeof(*e);
	if (have_mm_override) {
		if (n_mm_override > max)
			return 8;
		memcpy(e, mm_override, n_mm_override * sizeof(*e));
		return 0;
	}
	if (e820_seabios) {	      /* the RAM ranges alone, as before */
		if (mm.nr_ram >= max) /* a zero entry ends the list */
			return 8;
		for (unsigned i = 0; i < mm.nr_ram; i++)
			e[i] = (struct igvm_mm_entry){.gpa_page = mm.ram[i].start >> 12,
						      .pages =
							  (mm.ram[i].end - mm.ram[i].start) >> 12};
		return 0;
	}
	if (n_guest_e820 >= max)
		return 8;
	for (unsigned i = 0; i < n_guest_e820; i++) /* QEMU's: whole pages already */
		e[i] = (struct igvm_mm_entry){
		    .gpa_page = guest_e820[i].addr >> 12,
		    .pages = guest_e820[i].size >> 12,
		    .type = guest_e820[i].type == MEMMAP_TYPE_RAM ? 0 : 1 /* PLATFORM_RESERVED */};
	return 0;
}

/* An ACPI MADT with one enabled processor local APIC per vCPU (ACPI 6.5 §5.2.12). */
/* snpm.vp_count= and snpm.madt=: a hostile host's vCPU count and APIC IDs. */
static uint32_t vp_count_override;
static bool have_vp_count_override;
static uint8_t madt_ids[64];
static unsigned n_madt_ids;
static bool have_madt_override;

static int fill_madt(uint8_t *a, uint64_t bytes)
{
	unsigned n = have_madt_override ? n_madt_ids : cpu_count;
	uint32_t len = 44 + 8 * n;
	if (len > bytes)
		return 9;
	memcpy(a, "APIC", 4);
	memcpy(a + 4, &len, 4);
	a[8] = 4; /* revision */
	memcpy(a + 10, "SNPM  ", 6);
	memcpy(a + 16, "SNPMMADT", 8);
	uint32_t lapic = 0xFEE00000u, flags = 1; /* PCAT_COMPAT */
	memcpy(a + 36, &lapic, 4);
	memcpy(a + 40, &flags, 4);
	for (unsigned i = 0; i < n; i++) {
		uint8_t *p = a + 44 + 8 * i;
		p[0] = 0, p[1] = 8, p[2] = (uint8_t)i;
		p[3] = have_madt_override ? madt_ids[i] : (uint8_t)percpus[i].apic_id;
		p[4] = 1; /* enabled */
	}
	uint8_t sum = 0;
	for (uint32_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + a[i]);
	a[9] = (uint8_t)-sum;
	return 0;
}

static int on_param(void *ctx, uint32_t type, uint32_t off, uint8_t *area, uint64_t bytes)
{
	uint32_t u32;
	switch (type) {
	case SNPM_IGVM_VP_COUNT_PARAMETER:
		u32 = have_vp_count_override ? vp_count_override : cpu_count;
		memcpy(area + off, &u32, 4);
		return 0;
	case SNPM_IGVM_ENVIRONMENT_INFO_PARAMETER:
		u32 = 0; /* memory is private (SNP) */
		memcpy(area + off, &u32, 4);
		return 0;
	case SNPM_IGVM_MEMORY_MAP:
		return fill_memory_map(area, bytes);
	case SNPM_IGVM_MADT:
		return fill_madt(area, bytes);
	}
	return 10;
}

static int on_vmsa(void *ctx, uint32_t vp, const uint8_t *page)
{
	if (vp != 0)
		return 11;
	memcpy(&L.bsp_vmsa, page, sizeof(L.bsp_vmsa));
	L.vmsas++;
	return 0;
}

/*
 * The machine's command line (qemu -append):
 *   snpm.trace=1           print every #VC, GHCB request and unknown #UD
 *   snpm.backing=4k|2m     how the host backs guest memory: 4K pages (the
 *                          default: guest_memfd, as QEMU/KVM give it, so
 *                          every 2M PVALIDATE fails with SIZEMISMATCH and
 *                          csvsm validates 4K pages) or 2 MiB pages (a
 *                          hugepage-backed host: 2M RMP entries)
 *   snpm.4k_only=S-E       with snpm.backing=2m: the host backs [S, E) (hex)
 *                          with 4K pages only, so csvsm's 2M PVALIDATE there
 *                          fails with SIZEMISMATCH
 *   snpm.stop_at_launch=1  end the VM (success) once csvsm first runs the
 *                          guest VMPL, after the acceptance audit
 *   snpm.memmap=P:N[:T],...  a hostile host: the IGVM memory map holds these
 *                          entries (hex page number, page count, entry type)
 *                          instead of the VM's RAM; `full` fills every slot
 *   snpm.vp_count=N        a hostile host: the VP count parameter says N (hex)
 *   snpm.madt=ID,...       a hostile host: the MADT lists these APIC IDs (hex)
 *   snpm.refuse_boot_vmsa=1  a hostile host: refuse the AP creation of the
 *                          guest's boot VMSA (csvsm then terminates)
 *   snpm.drop_flush=1      csvsm's INVLPGB does nothing: a revocation or
 *                          rescind stays usable on every vCPU, as if csvsm
 *                          had no TLB flush (the test that a missing flush
 *                          is caught, hostile.sh)
 *   snpm.zero_pages=zero   the host issues IGVM pages without data as the PSP
 *                          ZERO page type (a VMM such as Vanadium; csvsm-measure
 *                          --zero-pages zero) instead of QEMU + KVM's NORMAL
 *                          page of zeros (snpm.zero_pages=normal, the default)
 *   snpm.key_scan_at_launch=1  run the key scan (below) at the guest's launch
 *                          too, while csvsm holds VMPCK0: the scan's control
 *   snpm.cpuid_hide_aes=1  a hostile host: the CPUID page hides AES-NI and
 *                          PCLMULQDQ
 *   snpm.xsave=1           the CPUID page (and the GHCB CPUID answers) show
 *                          XSAVE, AVX, AVX2... and leaf 0xD for x87/SSE/AVX
 *                          (model/cpuid_page.c): csvsm and OVMF run with XCR0 = 7;
 *                          Linux refuses it (no XSAVEC/XSAVES under TCG)
 *   snpm.e820=qemu|seabios the guest's memory map (IGVM MEMORY_MAP and fw_cfg
 *                          etc/e820): QEMU's (default) or the outer one's
 *   snpm.vmrun_invalid=1   a self-test of the machine: VMPL0's first VMRUN
 *                          gets CR0.NW without CR0.CD, which VMRUN rejects;
 *                          the machine names the check and stops
 *   snpm.nmi_vmpl0=1       an NMI for the boot vCPU's VMPL0 at the guest's
 *                          launch, delivered through its #HV doorbell page
 *   snpm.xcr0_lie=N        with snpm.xsave=1: a host whose CPUID page offers
 *                          XCR0 components N (hex 0..7) in leaf 0xD.0 EAX
 *   snpm.hv_nest=ADDR      a hostile host that nests #HV injections into
 *                          VMPL0 once its IDT is loaded (the handler's page
 *                          unmapped in the nested table) and reports whether
 *                          the page holding ADDR changed (svm.c hv_nest_exit)
 *   snpm.irq_vmpl0=VEC     an interrupt with vector VEC (hex, 0x20..0xff) for
 *                          the boot vCPU's VMPL0 (a host IPI), posted in its
 *                          doorbell page after the NMI, if any
 *   snpm.run_vmpl=ghcb|msr a host with the GHCB RUN_VMPL event (default), or
 *                          one that answers it from VMPL0 as an unknown event
 *                          (csvsm then switches with the MSR form, 0x016)
 *   snpm.hv_doorbell_refuse=MASK  a host that refuses the #HV doorbell page of
 *                          these vCPUs (hex mask of vCPU indexes: 1 = the boot
 *                          vCPU; their events for VMPL0 are then blocked)
 *   snpm.vmsa_features=N   the SEV_FEATURES the host's KVM supports (hex,
 *                          KVM_X86_SEV_VMSA_FEATURES; default 29: SNPActive,
 *                          RestrictedInjection, DebugSwap): a launch VMSA or
 *                          AP creation asking for more is refused
 *   snpm.multi_vmpl=0      a host without the multi-VMPL events (no GHCB HV
 *                          feature bit 5, RUN_VMPL and MSR 0x016 unknown)
 *   snpm.delete_race=ADDR  the delete ordering of vmpl.c (tests/snpm/planes.sh);
 *                          ADDR: csvsm's vcpu_delete_waits (nm)
 *   snpm.create_race=1     the create ordering of vmpl.c (tests/snpm/planes.sh)
 *   snpm.va_probe=VA,...   at the guest's launch, walk VMPL0's page tables
 *                          (its CR3) for these addresses (hex, at most 8)
 *                          and print whether each is mapped (the tests probe
 *                          csvsm's guard pages with it)
 *   snpm.vmsa_busy=N       a hostile host that runs the guest VMSA on another
 *                          CPU while VMPL0 serves it: the next N (hex)
 *                          RMPADJUSTs of it in that time fail with FAIL_INUSE
 *   snpm.frame_swap=N      a hostile host: the first N (hex) page-state
 *                          changes to private of pages already private and
 *                          validated get a fresh frame behind their first
 *                          page, the old frame kept assigned and validated
 *                          (issue 17 item 2; "snpm: frames:" at the end)
 *   snpm.frame_swap_2m=N   the same for the first N (hex) such changes of a
 *                          2M entry, the page in the middle of the block
 *                          swapped (issue 36)
 *   snpm.psc_nonram=stop|error  a page-state change of memory the host does
 *                          not back: the VM stops, as QEMU stops it
 *                          (default), or the request fails (a host that
 *                          answers with an error)
 *   snpm.secrets_out=1     write the run's known secrets, never to the
 *                          console, to I/O port 0xE9 (QEMU's isa-debugcon,
 *                          a file of the test's; no guest reaches the port,
 *                          model/devpolicy.c): VMPCK0..3 at launch and, with
 *                          snpm.tpm_state, csvsm's TPM state when the VM
 *                          ends, for the console scan (issue 34 item 5,
 *                          tests/linux/console-scan.py)
 *   snpm.tpm_state=ADDR:SIZE  (hex) csvsm's libtpms PERSISTENT_DATA `gp`
 *                          (nm -S build/csvsm.elf), read from csvsm's
 *                          memory when the VM ends: the vTPM's primary
 *                          seeds and hierarchy proofs are in it
 *   snpm.zero_probe=ADDR:SIZE[,ADDR:SIZE...]  (hex, up to 4) with each key
 *                          scan, count the nonzero bytes of each of csvsm's
 *                          [ADDR, ADDR + SIZE) (its boot stack, its IST
 *                          stacks: what a terminating vCPU left of them)
 *   snpm.convert_csvsm=ADDR  a hostile host: at the guest's launch, csvsm's
 *                          page holding ADDR (hex) is converted to shared,
 *                          as KVM and QEMU convert it on a guest's C=0 read
 *                          (issue 34 item 6)
 *   snpm.psc_refuse=S-E    a hostile host: VMPL0's page-state changes to
 *                          private of [S, E) (hex) fail, the guest VMPL's
 *                          succeed (issue 34 item 2)
 */
static bool stop_at_launch, key_scan_at_launch, native_zero;
static uint64_t va_probe[8];
static unsigned n_va_probe;
/* snpm.ap_stack_probe=ADDR: csvsm's percpus[] (nm), whose APs' stack_top
 * the machine reads at the guest's launch to probe their guard pages. */
static uint64_t ap_stack_probe;
/* snpm.ist_probe=TSS,IDT: csvsm's cpu_tss[] and idt[] (nm), read at the guest's launch. */
static uint64_t ist_probe_tss, ist_probe_idt;
static uint64_t convert_csvsm; /* snpm.convert_csvsm=ADDR, 0 = none */
bool snpm_refuse_boot_vmsa;
static uint8_t scan_keys[4][32]; /* VMPCK0..3 as the PSP model made them */
static bool secrets_out;
static uint64_t tpm_state_addr, tpm_state_size;
/* snpm.zero_probe=ADDR:SIZE,...: ranges of csvsm's (its boot stack, its IST
 * stacks) whose nonzero bytes the key scan counts too. */
#define ZERO_PROBE_MAX 4
static uint64_t zero_probe_addr[ZERO_PROBE_MAX], zero_probe_size[ZERO_PROBE_MAX];
static unsigned n_zero_probe;
#define SECRETS_PORT	  0xE9
#define TPM_STATE_MAX	  0x4000
#define SECRETS_HEX_DIGIT "0123456789abcdef"

/* "secret NAME HEX" on the secrets port: the test's file, never the console. */
static void secrets_line(const char *name, const uint8_t *b, size_t n)
{
	for (const char *p = "secret "; *p; p++)
		outb(SECRETS_PORT, (uint8_t)*p);
	for (const char *p = name; *p; p++)
		outb(SECRETS_PORT, (uint8_t)*p);
	outb(SECRETS_PORT, ' ');
	for (size_t i = 0; i < n; i++) {
		outb(SECRETS_PORT, (uint8_t)SECRETS_HEX_DIGIT[b[i] >> 4]);
		outb(SECRETS_PORT, (uint8_t)SECRETS_HEX_DIGIT[b[i] & 15]);
	}
	outb(SECRETS_PORT, '\n');
}

/* When the VM ends: csvsm's TPM state as its memory holds it then (the
 * machine reads it as the hardware model; on hardware it is ciphertext). */
static void secrets_at_end(void)
{
	static uint32_t once;
	static uint8_t buf[TPM_STATE_MAX];
	if (!secrets_out || !tpm_state_size || __atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
		return;
	for (uint64_t off = 0; off < tpm_state_size; off++) {
		gpa_t g = tpm_state_addr + off;
		if (!hv_is_mem(g & ~(gpa_t)(PAGE_SIZE - 1), PAGE_SIZE)) {
			con_printf("snpm: secrets: csvsm's TPM state at 0x%llx is not memory the "
				   "machine backs\n",
				   (unsigned long long)g);
			return;
		}
		buf[off] = *(const uint8_t *)(uintptr_t)hv_hpa(g);
	}
	secrets_line("tpm-state", buf, tpm_state_size);
	memzero_explicit(buf, sizeof(buf));
	con_printf("snpm: secrets: %llu bytes of csvsm's TPM state at 0x%llx written to port "
		   "0x%x (not the console)\n",
		   (unsigned long long)tpm_state_size, (unsigned long long)tpm_state_addr,
		   SECRETS_PORT);
}

static bool option_is_1(const char *key)
{
	const char *v;
	size_t vlen;
	return cmdline_get(cmdline, cmdline_len, key, &v, &vlen) && vlen == 1 && v[0] == '1';
}

static void machine_options(void)
{
	const char *v0;
	size_t v0len;
	extern bool sim_snp_trace;
	sim_snp_trace = option_is_1("snpm.trace");
	stop_at_launch = option_is_1("snpm.stop_at_launch");
	snpm_refuse_boot_vmsa = option_is_1("snpm.refuse_boot_vmsa");
	sim_ignore_invlpgb = option_is_1("snpm.drop_flush");
	if (sim_ignore_invlpgb)
		con_printf("snpm: hostile: csvsm's INVLPGB does nothing (snpm.drop_flush=1): "
			   "revocations stay usable as if csvsm never flushed\n");
	key_scan_at_launch = option_is_1("snpm.key_scan_at_launch");
	cpuid_hide_aes = option_is_1("snpm.cpuid_hide_aes");
	if (option_is_1("snpm.xsave")) {
		cpuid_page_show_xsave(true);
		con_printf("snpm: cpuid: XSAVE and the AVX-state features shown (snpm.xsave=1)\n");
	}
	snpm_nmi_vmpl0 = option_is_1("snpm.nmi_vmpl0");
	snpm_no_multi_vmpl = cmdline_get(cmdline, cmdline_len, "snpm.multi_vmpl", &v0, &v0len) &&
			     v0len == 1 && v0[0] == '0';
	snpm_create_race = option_is_1("snpm.create_race");
	hv_vmrun_invalid_once = option_is_1("snpm.vmrun_invalid");
	const char *v;
	size_t vlen;
	if (cmdline_get(cmdline, cmdline_len, "snpm.e820", &v, &vlen)) {
		if (vlen == 7 && !memcmp(v, "seabios", 7))
			e820_seabios = true;
		else if (!(vlen == 4 && !memcmp(v, "qemu", 4)))
			fail("bad snpm.e820= value (want qemu or seabios)");
	}
	build_guest_e820();
	/*
	 * Guest memory as a KVM host backs it: guest_memfd in 4 KiB folios, so
	 * KVM makes 4K RMP entries as the guest first touches each page
	 * (arch/x86/kvm/svm/sev.c sev_gmem_prepare, at the folio's order); 2M
	 * RMP entries only where the host backs memory with 2 MiB pages.
	 */
	bool backing_4k = true;
	if (cmdline_get(cmdline, cmdline_len, "snpm.backing", &v, &vlen)) {
		if (vlen == 2 && !memcmp(v, "2m", 2))
			backing_4k = false;
		else if (!(vlen == 2 && !memcmp(v, "4k", 2)))
			fail("bad snpm.backing= value (want 4k or 2m)");
	}
	rmp_hv_set_backing_4k(backing_4k);
	snpm_phase("options", "guest memory backed by %s",
		   backing_4k ? "4K pages (guest_memfd: 4K RMP entries)"
			      : "2 MiB pages (2M RMP entries where asked)");
	if (cmdline_get(cmdline, cmdline_len, "snpm.run_vmpl", &v, &vlen)) {
		if (vlen == 3 && !memcmp(v, "msr", 3))
			snpm_run_vmpl_msr_only = true;
		else if (!(vlen == 4 && !memcmp(v, "ghcb", 4)))
			fail("bad snpm.run_vmpl= value (want ghcb or msr)");
	}
	extern bool snpm_psc_nonram_error;
	if (cmdline_get(cmdline, cmdline_len, "snpm.psc_nonram", &v, &vlen)) {
		if (vlen == 5 && !memcmp(v, "error", 5))
			snpm_psc_nonram_error = true;
		else if (!(vlen == 4 && !memcmp(v, "stop", 4)))
			fail("bad snpm.psc_nonram= value (want stop or error)");
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.memmap", &v, &vlen)) {
		const char *stop = v + vlen;
		have_mm_override = true;
		if (vlen == 4 && !memcmp(v, "full", 4)) {
			/* Every slot used, no zero entry to end the list. */
			n_mm_override = ARRAY_SIZE(mm_override);
			for (unsigned i = 0; i < n_mm_override; i++)
				mm_override[i] =
				    (struct igvm_mm_entry){.gpa_page = 0x100 + 2 * i, .pages = 1};
			v = stop;
		}
		while (v < stop) {
			uint64_t pg, np, type = 0;
			if (n_mm_override == ARRAY_SIZE(mm_override) ||
			    cmdline_parse_hex(&v, stop, &pg) || v == stop || *v++ != ':' ||
			    cmdline_parse_hex(&v, stop, &np))
				fail("bad snpm.memmap= value (want PAGE:COUNT[:TYPE],... in hex)");
			if (v < stop && *v == ':') {
				v++;
				if (cmdline_parse_hex(&v, stop, &type) || type > 0xFFFF)
					fail("bad snpm.memmap= value (want PAGE:COUNT[:TYPE],... "
					     "in hex)");
			}
			if (v < stop && *v++ != ',')
				fail("bad snpm.memmap= value (want PAGE:COUNT[:TYPE],... in hex)");
			mm_override[n_mm_override++] = (struct igvm_mm_entry){
			    .gpa_page = pg, .pages = np, .type = (uint16_t)type};
		}
		snpm_phase("options", "a hostile memory map of %u entries", n_mm_override);
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.zero_pages", &v, &vlen)) {
		if (vlen == 4 && !memcmp(v, "zero", 4))
			native_zero = true;
		else if (!(vlen == 6 && !memcmp(v, "normal", 6)))
			fail("bad snpm.zero_pages= value (want normal or zero)");
		snpm_phase("options", "pages without data issued as %s",
			   native_zero ? "the PSP ZERO page type" : "NORMAL pages of zeros");
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.vp_count", &v, &vlen)) {
		const char *stop = v + vlen;
		uint64_t n;
		if (cmdline_parse_hex(&v, stop, &n) || v != stop || n > 0xFFFFFFFFu)
			fail("bad snpm.vp_count= value (want a hex count)");
		vp_count_override = (uint32_t)n;
		have_vp_count_override = true;
		snpm_phase("options", "the host says %u vCPUs", vp_count_override);
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.madt", &v, &vlen)) {
		const char *stop = v + vlen;
		have_madt_override = true;
		while (v < stop) {
			uint64_t id;
			if (n_madt_ids == ARRAY_SIZE(madt_ids) ||
			    cmdline_parse_hex(&v, stop, &id) || id > 0xFF ||
			    (v < stop && *v++ != ','))
				fail(
				    "bad snpm.madt= value (want APIC IDs in hex, comma-separated)");
			madt_ids[n_madt_ids++] = (uint8_t)id;
		}
		snpm_phase("options", "the host's MADT lists %u APIC IDs", n_madt_ids);
	}
	struct {
		const char *key, *what;
		uint64_t *dst, max;
	} const hex_opts[] = {
	    {"snpm.hv_doorbell_refuse", "a hex mask of vCPU indexes", &snpm_hv_doorbell_refuse,
	     ~0ULL},
	    {"snpm.vmsa_features", "hex SEV_FEATURES bits", &snpm_kvm_vmsa_features, ~0ULL},
	    {"snpm.delete_race", "csvsm's vcpu_delete_waits address in hex", &snpm_delete_race_addr,
	     ~0ULL},
	};
	for (unsigned i = 0; i < ARRAY_SIZE(hex_opts); i++) {
		if (!cmdline_get(cmdline, cmdline_len, hex_opts[i].key, &v, &vlen))
			continue;
		const char *stop = v + vlen;
		uint64_t n;
		if (cmdline_parse_hex(&v, stop, &n) || v != stop || n > hex_opts[i].max)
			fail("bad %s= value (want %s)", hex_opts[i].key, hex_opts[i].what);
		*hex_opts[i].dst = n;
	}
	if (snpm_kvm_vmsa_features != SNPM_KVM_VMSA_FEATURES)
		snpm_phase("options", "the host's KVM supports SEV_FEATURES 0x%llx",
			   (unsigned long long)snpm_kvm_vmsa_features);
	if (snpm_no_multi_vmpl)
		snpm_phase("options",
			   "a host without the multi-VMPL events (GHCB HV feature bit 5)");
	if (cmdline_get(cmdline, cmdline_len, "snpm.vmsa_busy", &v, &vlen)) {
		const char *stop = v + vlen;
		uint64_t n;
		if (cmdline_parse_hex(&v, stop, &n) || v != stop || n > 0xFFFFFFFFu)
			fail("bad snpm.vmsa_busy= value (want a hex count)");
		snpm_vmsa_busy = n;
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.xcr0_lie", &v, &vlen)) {
		const char *stop = v + vlen;
		uint64_t n;
		if (cmdline_parse_hex(&v, stop, &n) || v != stop || n > 7)
			fail("bad snpm.xcr0_lie= value (want 0..7)");
		xcr0_lie = (uint32_t)n;
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.hv_nest", &v, &vlen)) {
		const char *stop = v + vlen;
		uint64_t n;
		if (cmdline_parse_hex(&v, stop, &n) || v != stop || !n || n & 7)
			fail(
			    "bad snpm.hv_nest= value (want the hex address of 8 bytes of VMPL0's)");
		hv_nest_addr = n;
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.irq_vmpl0", &v, &vlen)) {
		const char *stop = v + vlen;
		uint64_t n;
		if (cmdline_parse_hex(&v, stop, &n) || v != stop || n < 0x20 || n > 0xFF)
			fail("bad snpm.irq_vmpl0= value (want a hex vector, 20..ff)");
		snpm_irq_vmpl0 = (uint8_t)n;
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.frame_swap", &v, &vlen)) {
		extern unsigned snpm_frame_swap;
		const char *stop = v + vlen;
		uint64_t n;
		if (cmdline_parse_hex(&v, stop, &n) || v != stop || n == 0 || n > RMP_SPARE_FRAMES)
			fail("bad snpm.frame_swap= value (want a hex count, 1 to 0x%x)",
			     RMP_SPARE_FRAMES);
		snpm_frame_swap = (unsigned)n;
		snpm_phase("options",
			   "a hostile host swaps the frame behind %u page(s) asked private "
			   "again",
			   snpm_frame_swap);
	}
	secrets_out = option_is_1("snpm.secrets_out");
	if (cmdline_get(cmdline, cmdline_len, "snpm.zero_probe", &v, &vlen)) {
		const char *stop = v + vlen;
		for (;;) {
			uint64_t *a = &zero_probe_addr[n_zero_probe],
				 *n = &zero_probe_size[n_zero_probe];
			if (n_zero_probe == ZERO_PROBE_MAX || cmdline_parse_hex(&v, stop, a) ||
			    v == stop || *v++ != ':' || cmdline_parse_hex(&v, stop, n) || !*n ||
			    *a + *n < *a)
				fail("bad snpm.zero_probe= value (want ADDR:SIZE[,ADDR:SIZE...] in "
				     "hex, "
				     "at most %u)",
				     ZERO_PROBE_MAX);
			n_zero_probe++;
			if (v == stop)
				break;
			if (*v++ != ',')
				fail("bad snpm.zero_probe= value (want ADDR:SIZE[,ADDR:SIZE...] in "
				     "hex)");
		}
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.tpm_state", &v, &vlen)) {
		const char *stop = v + vlen;
		if (cmdline_parse_hex(&v, stop, &tpm_state_addr) || v == stop || *v++ != ':' ||
		    cmdline_parse_hex(&v, stop, &tpm_state_size) || v != stop || !tpm_state_size ||
		    tpm_state_size > TPM_STATE_MAX ||
		    tpm_state_addr + tpm_state_size < tpm_state_addr)
			fail("bad snpm.tpm_state= value (want ADDR:SIZE in hex, size 1..0x%x)",
			     TPM_STATE_MAX);
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.frame_swap_2m", &v, &vlen)) {
		extern unsigned snpm_frame_swap_2m;
		const char *stop = v + vlen;
		uint64_t n;
		if (cmdline_parse_hex(&v, stop, &n) || v != stop || n == 0 || n > RMP_SPARE_FRAMES)
			fail("bad snpm.frame_swap_2m= value (want a hex count, 1 to 0x%x)",
			     RMP_SPARE_FRAMES);
		snpm_frame_swap_2m = (unsigned)n;
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.ap_stack_probe", &v, &vlen)) {
		const char *stop = v + vlen;
		if (cmdline_parse_hex(&v, stop, &ap_stack_probe) || v != stop || !ap_stack_probe)
			fail(
			    "bad snpm.ap_stack_probe= value (want csvsm's percpus address in hex)");
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.va_probe", &v, &vlen)) {
		const char *stop = v + vlen;
		while (v < stop) {
			uint64_t va;
			if (n_va_probe == ARRAY_SIZE(va_probe) ||
			    cmdline_parse_hex(&v, stop, &va) || (v < stop && *v++ != ','))
				fail("bad snpm.va_probe= value (want at most 8 addresses in hex, "
				     "comma-separated)");
			va_probe[n_va_probe++] = va;
		}
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.redzone", &v, &vlen)) {
		const char *stop = v + vlen;
		uint64_t s, e;
		if (cmdline_parse_hex(&v, stop, &s) || v == stop || *v++ != '-' ||
		    cmdline_parse_hex(&v, stop, &e) || v != stop || !s || s >= e)
			fail("bad snpm.redzone= value (want START-END in hex)");
		redzone_start = s;
		redzone_end = e;
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.redzone_vc", &v, &vlen)) {
		const char *stop = v + vlen;
		while (v < stop) {
			uint64_t s, e;
			if (redzone_n_vc == REDZONE_VC_MAX || cmdline_parse_hex(&v, stop, &s) ||
			    v == stop || *v++ != '-' || cmdline_parse_hex(&v, stop, &e) || s >= e ||
			    (v < stop && *v++ != ','))
				fail(
				    "bad snpm.redzone_vc= value (want at most %u START-END in hex, "
				    "comma-separated)",
				    REDZONE_VC_MAX);
			redzone_vc[redzone_n_vc++] = (struct redzone_range){s, e};
		}
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.ist_probe", &v, &vlen)) {
		const char *stop = v + vlen;
		if (cmdline_parse_hex(&v, stop, &ist_probe_tss) || v == stop || *v++ != ',' ||
		    cmdline_parse_hex(&v, stop, &ist_probe_idt) || v != stop || !ist_probe_tss ||
		    !ist_probe_idt)
			fail("bad snpm.ist_probe= value (want csvsm's cpu_tss and idt addresses in "
			     "hex: TSS,IDT)");
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.convert_csvsm", &v, &vlen)) {
		const char *stop = v + vlen;
		if (cmdline_parse_hex(&v, stop, &convert_csvsm) || v != stop || !convert_csvsm)
			fail("bad snpm.convert_csvsm= value (want an address of csvsm's in hex)");
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.psc_refuse", &v, &vlen)) {
		extern gpa_t snpm_psc_refuse_start, snpm_psc_refuse_end;
		const char *stop = v + vlen;
		if (cmdline_parse_hex(&v, stop, &snpm_psc_refuse_start) || v == stop ||
		    *v++ != '-' || cmdline_parse_hex(&v, stop, &snpm_psc_refuse_end) || v != stop ||
		    snpm_psc_refuse_start >= snpm_psc_refuse_end)
			fail("bad snpm.psc_refuse= value (want START-END in hex)");
	}
	if (cmdline_get(cmdline, cmdline_len, "snpm.4k_only", &v, &vlen)) {
		const char *stop = v + vlen;
		uint64_t s, e;
		if (cmdline_parse_hex(&v, stop, &s) || v == stop || *v++ != '-' ||
		    cmdline_parse_hex(&v, stop, &e) || v != stop || s >= e ||
		    rmp_hv_set_4k_only(s, e) != 0)
			fail("bad snpm.4k_only= value (want START-END in hex)");
		snpm_phase("options", "the host backs 0x%llx-0x%llx with 4K pages only",
			   (unsigned long long)s, (unsigned long long)e);
	}
}

/*
 * Which of VMPCK0..3 does memory only VMPL0 can reach still hold? Every
 * page that is validated and has no permission for VMPL1..3 (csvsm's
 * region and anything else csvsm keeps to itself) is searched for each key
 * at every byte offset, a key crossing into the next page included. Run
 * when VMPL0 asks to terminate: csvsm's termination path must have wiped
 * every key by then (on hardware the memory is ciphertext after teardown;
 * here it shows what a csvsm compromise at that moment would find).
 */
static bool vmpl0_private(gpa_t g)
{
	struct rmp_entry_info e;
	return g < rmp_max_gpa() && !rmp_query(g, &e) && e.assigned && e.validated && !e.perms[1] &&
	       !e.perms[2] && !e.perms[3] && hv_hpa(g) != HV_NO_HPA;
}

void snpm_key_scan(const char *when)
{
	static uint8_t buf[PAGE_SIZE + 32];
	uint64_t pages = 0, found[4] = {0};
	uint64_t first[4];
	for (unsigned k = 0; k < 4; k++)
		memcpy(&first[k], scan_keys[k], 8);
	for (gpa_t g = 0; g < rmp_max_gpa(); g += PAGE_SIZE) {
		if (!vmpl0_private(g))
			continue;
		pages++;
		memcpy(buf, (const void *)(uintptr_t)hv_hpa(g), PAGE_SIZE);
		size_t n = PAGE_SIZE;
		if (vmpl0_private(g + PAGE_SIZE)) {
			memcpy(buf + PAGE_SIZE, (const void *)(uintptr_t)hv_hpa(g + PAGE_SIZE), 31);
			n += 31;
		}
		for (size_t i = 0; i + 32 <= n; i++) {
			uint64_t w;
			memcpy(&w, buf + i, 8);
			for (unsigned k = 0; k < 4; k++)
				if (w == first[k] && !memcmp(buf + i, scan_keys[k], 32))
					found[k]++;
		}
	}
	memzero_explicit(buf, sizeof(buf));
	con_printf(
	    "snpm: key-scan: %s: pages=%llu vmpck0=%llu vmpck1=%llu vmpck2=%llu vmpck3=%llu\n",
	    when, (unsigned long long)pages, (unsigned long long)found[0],
	    (unsigned long long)found[1], (unsigned long long)found[2],
	    (unsigned long long)found[3]);
	/* What a terminating vCPU left of its stack (issue 34 item 3): csvsm
	 * zeroes it but for the frame the termination request is sent from. */
	for (unsigned i = 0; i < n_zero_probe; i++) {
		uint64_t nonzero = 0, read = 0;
		for (uint64_t off = 0; off < zero_probe_size[i]; off++) {
			gpa_t g = zero_probe_addr[i] + off;
			if (!hv_is_mem(g & ~(gpa_t)(PAGE_SIZE - 1), PAGE_SIZE))
				break;
			read++;
			nonzero += *(const uint8_t *)(uintptr_t)hv_hpa(g) != 0;
		}
		con_printf(
		    "snpm: zero-probe: %s: addr=0x%llx size=0x%llx read=0x%llx nonzero=%llu\n",
		    when, (unsigned long long)zero_probe_addr[i],
		    (unsigned long long)zero_probe_size[i], (unsigned long long)read,
		    (unsigned long long)nonzero);
	}
}

/*
 * Whether VMPL0's page tables (4-level, rooted at cr3, a guest-physical
 * address; entries carry the C-bit at SNPM_CBIT) map va: 1 mapped, 0 not
 * present at some level, -1 a table outside the memory the host backs.
 * The walk reads csvsm's tables from guest memory, as a debugger on the
 * host could not on hardware (the pages are ciphertext there): it is the
 * machine's view, for the tests.
 */
static int vmpl0_va_mapped(uint64_t cr3, uint64_t va)
{
	const uint64_t addr = ((1ull << SNPM_CBIT) - 1) & ~(uint64_t)(PAGE_SIZE - 1);
	uint64_t table = cr3 & addr;
	for (int level = 3; level >= 0; level--) {
		if (!hv_is_mem(table, PAGE_SIZE))
			return -1;
		uint64_t e =
		    ((const uint64_t *)(uintptr_t)hv_hpa(table))[(va >> (12 + 9 * level)) & 511];
		if (!(e & 1))
			return 0;
		if ((level == 1 || level == 2) && (e & 0x80))
			return 1; /* a 2M or 1G page */
		table = e & addr;
	}
	return 1;
}

/*
 * snpm: vmpl0-exec: the ranges VMPL0's page tables map executable (a leaf
 * reached with NX clear at every level; NX is the OR of the levels, APM
 * vol. 2 §5.6.1; csvsm runs with EFER.NXE). At most 8 listed, ",..." after.
 * The machine's view, as vmpl0_va_mapped's: tests/snpm/hostile.sh holds
 * it to csvsm's R+X segment (linker.ld) from nm.
 */
static struct {
	uint64_t start, end;
} exec_r[8];
static unsigned n_exec_r;
static bool exec_more;

static void exec_add(uint64_t va, uint64_t size)
{
	if (n_exec_r && exec_r[n_exec_r - 1].end == va)
		exec_r[n_exec_r - 1].end = va + size;
	else if (n_exec_r < ARRAY_SIZE(exec_r))
		exec_r[n_exec_r++] = (typeof(exec_r[0])){va, va + size};
	else
		exec_more = true;
}

static void exec_walk(uint64_t table, int level, uint64_t va_base)
{
	const uint64_t addr = ((1ull << SNPM_CBIT) - 1) & ~(uint64_t)(PAGE_SIZE - 1);
	if (!hv_is_mem(table, PAGE_SIZE))
		return;
	const uint64_t *t = (const uint64_t *)(uintptr_t)hv_hpa(table);
	for (unsigned i = 0; i < 512; i++) {
		uint64_t e = t[i], va = va_base | ((uint64_t)i << (12 + 9 * level));
		if (!(e & 1) || (e >> 63))
			continue;
		if (level == 0 || ((level == 1 || level == 2) && (e & 0x80)))
			exec_add(va, 1ull << (12 + 9 * level));
		else
			exec_walk(e & addr, level - 1, va);
	}
}

static void exec_report(uint64_t cr3)
{
	n_exec_r = 0;
	exec_more = false;
	exec_walk(cr3 & ((1ull << SNPM_CBIT) - 1) & ~(uint64_t)(PAGE_SIZE - 1), 3, 0);
	con_printf("snpm: vmpl0-exec: ranges=");
	for (unsigned k = 0; k < n_exec_r; k++)
		con_printf("%s0x%llx-0x%llx", k ? "," : "", (unsigned long long)exec_r[k].start,
			   (unsigned long long)exec_r[k].end);
	con_printf("%s\n", !n_exec_r ? "none" : exec_more ? ",..." : "");
}

/*
 * Called once, when csvsm first runs a guest VMPL: audit pre-acceptance in
 * the RMP model, which csvsm cannot read. Every page of the guest's RAM
 * must be assigned, validated and readable and writable by the guest VMPL
 * (the pages csvsm keeps from it, such as a VMSA, are counted apart), but
 * for the pages the firmware expects to find unvalidated (OVMF's SEC GHCB):
 * the unvalidated ones are listed (`unvalidated_ranges=`, at most 8) and
 * the tests compare them with the firmware's own metadata, read by
 * tests/tools/ovmf_sec_gaps.py.
 */
/*
 * snpm.ist_probe: csvsm's IST stacks as it set them up (src/cpu.c,
 * include/csvsm/tss.h): for each vCPU, each IST top in its TSS, whether
 * the stack's lowest and highest pages are mapped in VMPL0's page tables
 * and the guard page under it is not; and the IST index of each of the
 * IDT's 32 gates (include/csvsm/exception.h). csvsm runs identity-mapped:
 * the addresses from nm are its GPAs.
 */
static void ist_probe(uint64_t vmpl0_cr3)
{
	if (!ist_probe_tss)
		return;
	for (unsigned i = 0; i < cpu_count; i++) {
		gpa_t at = ist_probe_tss + i * sizeof(struct tss) + offsetof(struct tss, ist);
		if (!hv_is_mem(at, EXC_IST_COUNT * 8))
			break;
		const uint64_t *ist = (const uint64_t *)(uintptr_t)hv_hpa(at);
		for (unsigned k = 0; k < EXC_IST_COUNT; k++) {
			uint64_t top = ist[k], low = top - IST_STACK_SIZE;
			con_printf("snpm: vmpl0-map: cpu=%u ist=%u top=0x%llx mapped_top=%d "
				   "mapped_low=%d guard=0x%llx mapped_guard=%d\n",
				   i, k + 1, (unsigned long long)top,
				   top ? vmpl0_va_mapped(vmpl0_cr3, top - PAGE_SIZE) : -1,
				   top ? vmpl0_va_mapped(vmpl0_cr3, low) : -1,
				   (unsigned long long)(low - PAGE_SIZE),
				   top ? vmpl0_va_mapped(vmpl0_cr3, low - PAGE_SIZE) : -1);
		}
	}
	if (!hv_is_mem(ist_probe_idt, 32 * 16))
		return;
	const uint8_t *idt = (const uint8_t *)(uintptr_t)hv_hpa(ist_probe_idt);
	con_printf("snpm: vmpl0-idt: ist=");
	for (unsigned n = 0; n < 32; n++)
		con_printf("%s%u", n ? "," : "", idt[n * 16 + 4] & 7);
	con_printf("\n");
}

void snpm_launch_audit(unsigned guest_vmpl, uint64_t vmpl0_cr3)
{
	uint64_t pages = 0, unvalidated = 0, no_access = 0, vmsa = 0, big = 0;
	struct {
		gpa_t start, end;
	} unval[8];
	unsigned nunval = 0;
	bool more = false;
	for (unsigned i = 0; i < mm.nr_ram; i++) {
		for (gpa_t g = mm.ram[i].start; g < mm.ram[i].end; g += PAGE_SIZE) {
			struct rmp_entry_info e;
			pages++;
			if (rmp_query(g, &e) || !e.assigned || !e.validated) {
				unvalidated++;
				if (nunval && unval[nunval - 1].end == g)
					unval[nunval - 1].end = g + PAGE_SIZE;
				else if (nunval < ARRAY_SIZE(unval))
					unval[nunval++] = (typeof(unval[0])){g, g + PAGE_SIZE};
				else
					more = true;
				continue;
			}
			if (e.size2m && IS_ALIGNED(g, PAGE_SIZE_2M))
				big++;
			unsigned perm = e.perms[guest_vmpl & 3];
			if (e.vmsa)
				vmsa++;
			else if ((perm & (RMP_PERM_R | RMP_PERM_W)) != (RMP_PERM_R | RMP_PERM_W))
				no_access++;
		}
	}
	struct rmp_hv_stats hs;
	rmp_hv_get_stats(&hs);
	con_printf("snpm: accept-audit: pages=%llu unvalidated=%llu no_guest_access=%llu vmsa=%llu "
		   "rmp_2m=%llu backing=%s psmash_sizem=%llu psmash_update=%llu guest_vmpl=%u "
		   "unvalidated_ranges=",
		   (unsigned long long)pages, (unsigned long long)unvalidated,
		   (unsigned long long)no_access, (unsigned long long)vmsa, (unsigned long long)big,
		   rmp_hv_backing_4k() ? "4k" : "2m", (unsigned long long)hs.psmash_sizem,
		   (unsigned long long)hs.psmash_update, guest_vmpl);
	for (unsigned k = 0; k < nunval; k++)
		con_printf("%s0x%llx-0x%llx", k ? "," : "", (unsigned long long)unval[k].start,
			   (unsigned long long)unval[k].end);
	con_printf("%s\n", !nunval ? "none" : more ? ",..." : "");
	for (unsigned k = 0; k < n_va_probe; k++)
		con_printf("snpm: vmpl0-map: va=0x%llx mapped=%d\n",
			   (unsigned long long)va_probe[k],
			   vmpl0_va_mapped(vmpl0_cr3, va_probe[k]));
	/* Each AP's stack as csvsm set it up (src/smp.c: AP_STACK_GUARD
	 * unmapped pages, then AP_STACK_SIZE of stack up to stack_top; csvsm
	 * runs identity-mapped, so the VA of percpus[] is its GPA). */
	for (unsigned i = 1; ap_stack_probe && i < cpu_count; i++) {
		gpa_t at =
		    ap_stack_probe + i * sizeof(struct percpu) + offsetof(struct percpu, stack_top);
		if (!hv_is_mem(at & ~(gpa_t)(PAGE_SIZE - 1), PAGE_SIZE))
			break;
		uint64_t top = *(const uint64_t *)(uintptr_t)hv_hpa(at);
		uint64_t low = top - AP_STACK_SIZE, guard = low - AP_STACK_GUARD;
		con_printf("snpm: vmpl0-map: ap=%u stack_top=0x%llx guard=0x%llx mapped=%d "
			   "guard_last=0x%llx mapped_last=%d stack_low=0x%llx mapped_low=%d\n",
			   i, (unsigned long long)top, (unsigned long long)guard,
			   vmpl0_va_mapped(vmpl0_cr3, guard), (unsigned long long)(low - PAGE_SIZE),
			   vmpl0_va_mapped(vmpl0_cr3, low - PAGE_SIZE), (unsigned long long)low,
			   vmpl0_va_mapped(vmpl0_cr3, low));
	}
	ist_probe(vmpl0_cr3);
	exec_report(vmpl0_cr3);
	redzone_report();
	if (key_scan_at_launch)
		snpm_key_scan("at the guest's launch");
	if (convert_csvsm && sim_host_convert_csvsm(convert_csvsm) != 0)
		fail("snpm.convert_csvsm=0x%llx: not a page of csvsm's region",
		     (unsigned long long)convert_csvsm);
	if (stop_at_launch) {
		/* Success: every page the guest can use is its to use; which pages
		 * are left unvalidated is the tests' to judge (see above). */
		con_printf("snpm: stopping at the guest's launch (snpm.stop_at_launch=1)\n");
		snpm_terminate(no_access == 0 && !more, 0, 0x30);
	}
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fmt_snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int psp_rng(void *ctx, unsigned char *buf, size_t len)
{
	return random_bytes(buf, len) ? 0 : -1;
}

static void launch(void)
{
	uint16_t key;
	uint32_t size;
	if (!fw_cfg_find("opt/csvsm/igvm", &key, &size) || size == 0 || size > IGVM_MAX)
		fail("no launch image (fw_cfg opt/csvsm/igvm)");
	uint8_t *file = pool_alloc(ALIGN_UP(size, PAGE_SIZE), PAGE_SIZE);
	fw_cfg_read_key(key, file, size);
	static uint8_t scratch[256 << 10];
	struct snpm_igvm_ops ops = {.page = on_page,
				    .required = on_required,
				    .fill_param = on_param,
				    .vmsa = on_vmsa,
				    .scratch = scratch,
				    .scratch_bytes = sizeof(scratch),
				    .native_zero = native_zero,
				    .vmsa_features = snpm_kvm_vmsa_features};
	uint8_t digest[SNPM_IGVM_DIGEST_LEN];
	uint64_t policy = 0;
	char why[160];
	/* One VMSA: the boot vCPU's, as the file has it; the others are created at run time. */
	int rc = snpm_igvm_load(file, size, 1, &ops, digest, &policy, why, sizeof(why));
	if (rc != 0)
		fail("launch image refused (%d): %s", rc, rc < 0 ? why : "see above");
	if (L.vmsas != 1 || L.secrets != 1)
		fail("launch image has %u VMSAs and %u secrets pages (need 1 and 1)", L.vmsas,
		     L.secrets);
	char h[2 * SNPM_IGVM_DIGEST_LEN + 1];
	hex(h, digest, sizeof(digest));
	con_printf("snpm: launch: measurement=%s pages=%u vmsas=%u\n", h, L.pages, L.vmsas);
	snpm_phase("launch",
		   "%u KiB image: %u pages (%u zero, %u unmeasured, %u CPUID), %llu KiB required "
		   "memory, policy 0x%llx",
		   size >> 10, L.pages, L.zero, L.unmeasured, L.cpuid,
		   (unsigned long long)(L.required >> 10), (unsigned long long)policy);

	/* The PSP model: the launch digest, the VMPCKs it put in the secrets page, its keys. */
	struct psp_model_keys keys;
	static uint8_t blob[PSP_MODEL_CERTS_MAX + PSP_MODEL_KEYS_HDR_SIZE];
	uint32_t blen = 0;
	if (!fw_cfg_load_file(PSP_MODEL_KEYS_FW_CFG, blob, sizeof(blob), &blen) ||
	    psp_model_keys_parse(blob, blen, &keys) != 0) {
		snpm_phase("psp", "no test VCEK (fw_cfg %s): guest requests are refused",
			   PSP_MODEL_KEYS_FW_CFG);
	} else {
		sim_fpu_enter();
		rc = psp_model_init(L.vmpck[0], &keys, digest, policy, psp_rng, NULL);
		for (unsigned i = 1; i < 4 && rc == 0; i++)
			rc = psp_model_set_vmpck(i, L.vmpck[i]);
		if (rc != 0)
			fail("PSP model: bad keys");
		snpm_phase("psp", "VCEK and certificate table loaded; VMPCK0..3 installed");
	}
	memzero_explicit(&keys, sizeof(keys));
	memzero_explicit(blob, sizeof(blob));
	memcpy(scan_keys, L.vmpck, sizeof(scan_keys)); /* machine memory: for the key scan only */
	if (secrets_out) {
		for (unsigned k = 0; k < 4; k++)
			secrets_line(k == 0   ? "vmpck0"
				     : k == 1 ? "vmpck1"
				     : k == 2 ? "vmpck2"
					      : "vmpck3",
				     L.vmpck[k], sizeof(L.vmpck[k]));
		con_printf("snpm: secrets: VMPCK0..3 written to port 0x%x (not the console)\n",
			   SECRETS_PORT);
	}
	memzero_explicit(L.vmpck, sizeof(L.vmpck));
	memzero_explicit(file, size); /* the guest gets none of the machine's inputs */
}

__noreturn void boot_main(uint32_t start_info_pa)
{
	con_init();
	idt_init();
	percpus[0].id = 0;
	cpu_init_self(&percpus[0]);
	timer_init();
	platform = &platform_snpm;
	con_printf("\nsnpm: SNP machine: SEV-SNP hardware, PSP and KVM host model\n");
	if (!random_available())
		fail("no RDRAND");

	unsigned n = read_start_info(start_info_pa);
	setup_memory(n);
	unsigned want = fw_cfg_present() ? fw_cfg_read16(5) : 1; /* FW_CFG_NB_CPUS */
	if (want == 0 || want > MAX_CPUS)
		fail("%u vCPUs: 1..%u supported", want, MAX_CPUS);
	void *heap = pool_alloc(HEAP_BYTES, PAGE_SIZE);
	libc_heap_init(heap, HEAP_BYTES);
	secret_register(heap, HEAP_BYTES); /* the PSP model's keys */
	unsigned got = smp_start_aps(want);
	sipi_trampoline_scrub();
	if (got != want)
		fail("%u of %u CPUs started", got, want);

	gpa_t top = MAX(mm.max_gpa, 4ULL << 30);
	size_t rmp_bytes = rmp_storage_bytes(top);
	if (rmp_init(pool_alloc(rmp_bytes, PAGE_SIZE), rmp_bytes, top) != 0)
		fail("RMP model");
	machine_options();
	struct guest_config gc = {.mm = &mm, .vmpl = 2};
	hv_tag = "snpm";
	svm_host_init(&gc);
	redzone_init();
	snpm_phase("machine", "%u vCPUs, %llu MiB guest RAM, machine 0x%llx-0x%llx", cpu_count,
		   (unsigned long long)(memmap_ram_bytes(&mm) >> 20),
		   (unsigned long long)mm.csvsm_start, (unsigned long long)mm.csvsm_end);

	launch();

	/* The guests' devices: default deny (tests/snpm/model/devpolicy.c); the
	 * probe, if one was given, is their kernel. */
	static uint8_t probe[4 << 20];
	uint32_t probe_size = 0;
	struct sim_io_config io = {.mm = &mm, .e820 = guest_e820, .n_e820 = n_guest_e820};
	if (fw_cfg_load_file("opt/csvsm/probe", probe, sizeof(probe), &probe_size) && probe_size) {
		io.probe = probe;
		io.probe_size = probe_size;
	}
	sim_io_init(&io);
	snpm_phase("run", "vCPU 0 at VMPL0 from the launch VMSA (RIP 0x%llx)",
		   (unsigned long long)L.bsp_vmsa.rip);
	snpm_run(&L.bsp_vmsa);
}
