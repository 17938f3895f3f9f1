/*
 * csvsm boot sequence on the boot vCPU (DESIGN.md "What it does"):
 * CPU set-up, platform choice, memory map, csvsm's region and page pool,
 * secondary vCPUs, pre-acceptance of all guest memory, then the guest.
 * Prints a human dashboard and the machine-readable `csvsm: ...` lines that
 * tests and tools parse.
 */
#include "arch/x86/insn.h"
#include "csvsm/boot.h"
#include "csvsm/console.h"
#include "csvsm/cpu.h"
#include "csvsm/exception.h"
#include "csvsm/platform.h"
#include "csvsm/pvh.h"
#include "csvsm/secret.h"
#include "csvsm/string.h"
#include "mm/accept.h"
#include "mm/memmap.h"
#include "mm/pgtable.h"
#include "mm/pool.h"
#include "mm/rmp.h"
#include "mm/cmdline.h"
#include "snp/snp.h"
#include "tpm/libc/libc.h"

extern const uint8_t __image_start[], __image_end[];
void con_init(void);
__noreturn void boot_main(uint32_t start_info_pa);

#define BOOT_STACK_GUARD   0
#define POOL_FIXED	   (12ULL << 20) /* page tables, NPT, GHCBs, the OVMF copy, slack */
#define AP_STACK_BYTES	   (68ULL << 10)
#define CMDLINE_MAX	   1024
#define CSVSM_REGION_SLACK (64ULL << 20)
#define LIBC_HEAP_BYTES                                                                            \
	(8ULL << 20) /* libtpms/OpenSSL/mbedTLS arena (tpm/boot.c reports the high water) */

/* OpenSSL's CPU detection (.init fragment, linker.ld) and the libraries' constructors. */
void _init(void);
extern void (*__init_array_start[])(void), (*__init_array_end[])(void);

static struct memmap memmap;
static struct hvm_memmap_table_entry raw_map[MEMMAP_MAX_ENTRIES];
static char cmdline[CMDLINE_MAX];

static __noreturn void fail(unsigned code, const char *what)
{
	con_printf("csvsm: error: %s\n", what);
	if (platform)
		platform->terminate(false, 1, code);
	outl(0xF4, 1);
	for (;;)
		cpu_halt();
}

/* Copy the hypervisor's PVH start info once; everything after uses the copy. */
static unsigned read_start_info(uint32_t pa)
{
	struct hvm_start_info si;
	memcpy(&si, (const void *)(uintptr_t)pa, sizeof(si));
	if (si.magic != HVM_START_MAGIC || si.version < 1)
		fail(2, "no PVH start info (boot csvsm with qemu -kernel)");
	if (si.cmdline_paddr && si.cmdline_paddr < (4ULL << 30)) {
		const char *src = (const char *)(uintptr_t)si.cmdline_paddr;
		size_t n = 0;
		while (n < CMDLINE_MAX - 1 && src[n])
			n++;
		memcpy(cmdline, src, n);
		cmdline[n] = 0;
		boot.cmdline_len = n;
	}
	boot.cmdline = cmdline;
	boot.guest_vmpl = 2; /* COCONUT-SVSM's default (reference §1.6) */
	const char *v;
	size_t vlen;
	if (cmdline_get(cmdline, boot.cmdline_len, "csvsm.guest_vmpl", &v, &vlen)) {
		if (vlen != 1 || v[0] < '1' || v[0] > '3')
			fail(2, "csvsm.guest_vmpl must be 1, 2 or 3");
		boot.guest_vmpl = (unsigned)(v[0] - '0');
	}

	unsigned n = si.memmap_entries;
	if (n > MEMMAP_MAX_ENTRIES)
		n = MEMMAP_MAX_ENTRIES + 1; /* memmap_build refuses it */
	if (si.memmap_paddr >= (4ULL << 30))
		fail(3, "PVH memory map above 4 GiB");
	memcpy(raw_map, (const void *)(uintptr_t)si.memmap_paddr,
	       MIN(n, MEMMAP_MAX_ENTRIES) * sizeof(raw_map[0]));
	return n;
}

static uint64_t pool_bytes_for(gpa_t max_gpa, unsigned ncpu)
{
	gpa_t top = MAX(max_gpa, 4ULL << 30);
	uint64_t b = rmp_storage_bytes(top) + accept_bitmap_bytes(top) + POOL_FIXED +
		     ncpu * (AP_STACK_BYTES + PAGE_SIZE) + boot_heap_bytes() + LIBC_HEAP_BYTES;
	return ALIGN_UP(b, PAGE_SIZE_2M);
}

static void setup_memory(unsigned nraw, unsigned ncpu)
{
	int override =
	    memmap_parse_test_override(boot.cmdline, boot.cmdline_len, raw_map, MEMMAP_MAX_ENTRIES);
	if (override < 0) {
		con_printf("csvsm: memmap: refused: csvsm.test_memmap: %s\n",
			   memmap_strerror(override));
		fail(4, "memory map refused");
	}
	if (override > 0) {
		con_printf("csvsm: memmap: using the test override (%d entries)\n", override);
		nraw = (unsigned) override;
	}
	gpa_t img_start = (gpa_t)(uintptr_t)__image_start, img_end = (gpa_t)(uintptr_t)__image_end;
	int rc = memmap_build(&memmap, raw_map, nraw, img_start, img_end);
	if (rc == MEMMAP_OK) {
		gpa_t end = img_end + pool_bytes_for(memmap.max_gpa, ncpu);
		/* The rest of the RAM range csvsm was loaded into, when little is
		 * left above its pool, is csvsm's too: a sliver of RAM above it would
		 * put csvsm inside the range an SVSM-aware firmware validates. */
		for (unsigned i = 0; i < memmap.nr_ram; i++)
			if (memmap.ram[i].start == img_end && memmap.ram[i].end >= end &&
			    memmap.ram[i].end - end <= CSVSM_REGION_SLACK)
				end = memmap.ram[i].end;
		rc = memmap_build(&memmap, raw_map, nraw, img_start, end);
	}
	if (rc != MEMMAP_OK) {
		con_printf("csvsm: memmap: refused: %s (entry %d)\n", memmap_strerror(rc),
			   memmap.bad_index);
		fail(4, "memory map refused");
	}
	boot.memmap = &memmap;
	boot.csvsm_start = memmap.csvsm_start;
	boot.csvsm_end = memmap.csvsm_end;
	pool_init(img_end, memmap.csvsm_end);
	pgtable_identity_map_to(MAX(memmap.max_gpa, 4ULL << 30));
	memmap_print(&memmap);
	boot_phase(
	    "memory",
	    "%llu MiB RAM in %u ranges; csvsm region 0x%llx-0x%llx (%llu MiB, image %llu KiB)",
	    (unsigned long long)(memmap_ram_bytes(&memmap) >> 20), memmap.nr_ram,
	    (unsigned long long)memmap.csvsm_start, (unsigned long long)memmap.csvsm_end,
	    (unsigned long long)((memmap.csvsm_end - memmap.csvsm_start) >> 20),
	    (unsigned long long)((img_end - img_start) >> 10));
}

__noreturn void boot_main(uint32_t start_info_pa)
{
	con_init();
	idt_init();
	percpus[0].id = 0;
	cpu_init_self(&percpus[0]);
	timer_init();
	con_printf("\ncsvsm: Secure VM Service Module\n");

	platform = platform_detect();
	if (!platform)
		fail(5, "unsupported CPU: need SEV-SNP (snp) or SVM with nested paging (sim)");
	if (!random_available())
		fail(6, "no RDRAND: csvsm never runs without a hardware entropy source");
	boot_phase("platform", "%s, TSC %llu MHz", platform->name,
		   (unsigned long long)(timer_tsc_hz() / 1000000));

	unsigned nraw = read_start_info(start_info_pa);
	unsigned want = fw_cfg_present() ? fw_cfg_read16(5) : 1; /* FW_CFG_NB_CPUS */
	if (want == 0 || want > MAX_CPUS)
		want = want ? MAX_CPUS : 1;
	setup_memory(nraw, want);
	if (platform->setup && platform->setup(&memmap, boot.cmdline, boot.cmdline_len) != 0)
		fail(7, "platform set-up failed");

	percpus[0].ghcb = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	percpus[0].ghcb_gpa = (gpa_t)(uintptr_t)percpus[0].ghcb;
	percpus[0].stack_top = 0;
	/* The glibc-ABI layer (tpm/libc) before any library code: heap, then constructors. */
	void *heap = pool_alloc(LIBC_HEAP_BYTES, PAGE_SIZE);
	libc_heap_init(heap, LIBC_HEAP_BYTES);
	/* The libraries' heap holds the vTPM's seeds and keys: wiped when the VM ends. */
	secret_register(heap, LIBC_HEAP_BYTES);
	_init();
	for (void (**f)(void) = __init_array_start; f < __init_array_end; f++)
		(*f)();
	unsigned n = smp_start_aps(want);
	boot_phase("vcpus", "%u of %u online", n, want);

	accept_all(&memmap);

	boot_guest();
}
