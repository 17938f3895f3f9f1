#include "arch/x86/insn.h"
#include "csvsm/console.h"
#include "csvsm/cpu.h"
#include "csvsm/exception.h"
#include "csvsm/platform.h"
#include "csvsm/pvh.h"
const struct platform_ops *platform;
void con_init(void);
__noreturn void boot_main(uint32_t start_info_pa);
__noreturn void boot_main(uint32_t start_info_pa)
{
	con_init();
	idt_init();
	percpus[0].id = 0;
	cpu_init_self(&percpus[0]);
	timer_init();
	con_printf("csvsm: hello start_info=0x%x tsc=%llu MHz\n", start_info_pa, (unsigned long long)timer_tsc_hz() / 1000000);
	const struct hvm_start_info *si = (const void *)(uintptr_t)start_info_pa;
	con_printf("magic %x version %u memmap %llx entries %u\n", si->magic, si->version, (unsigned long long)si->memmap_paddr, si->memmap_entries);
	const struct hvm_memmap_table_entry *e = (const void *)(uintptr_t)si->memmap_paddr;
	for (unsigned i = 0; i < si->memmap_entries; i++)
		con_printf("  %016llx %016llx %u\n", (unsigned long long)e[i].addr, (unsigned long long)e[i].size, e[i].type);
	con_printf("cpus %u\n", fw_cfg_read16(5));
	outl(0xf4, 0);
	for (;;) cpu_halt();
}
