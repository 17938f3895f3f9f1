/*
 * The SNP machine: the guests' device view, default deny for ports and MMIO
 * (the rules: tests/snpm/model/devpolicy.c; the list: docs/snp-machine-devices.md).
 * Device DMA is not confined by nested paging (sim notes §4 pitfall 10),
 * and under TCG an INIT or SMI reaches a CPU even in host mode, so every
 * guest port access exits (IOPM all ones) and every guest access outside
 * its RAM and flash exits (#NPF). csvsm emulates COM1, fw_cfg (port
 * interface only, a filtered view: one vCPU, a memory map without csvsm,
 * the probe as the kernel, only the items it lists), the IOAPIC (registers
 * filtered), local APIC stores (filtered), PCI configuration through
 * CF8/CFC and ECAM (one filter), the CMOS and i8042 command ports
 * (filtered), and passes through only devices that cannot DMA or signal a
 * CPU. Reset and power-off requests end the VM.
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "csvsm/cpu.h"
#include "tests/snpm/fw_cfg.h"
#include "tests/snpm/model/devpolicy.h"
#include "base/percpu.h"
#include "base/string.h"
#include "mm/memmap.h"
#include "svm.h"

volatile int guest_power_event;
static struct sim_io_config cfg;
static gpa_t ecam_base; /* PCIEXBAR's window, fixed for the guest's lifetime */

/*
 * ---- refusals: a console line for each ----
 * Every guest write the filter refuses (or changes) is printed as
 * "snpm: refused: <device>: <register> := <value>...", the first
 * REFUSAL_LINES of each device, so that the firmware's BAR sizing cannot
 * use up the lines of a later attempt (tests/snpm/hostile.sh requires the
 * machine's line for each attack it refuses, printed between the attempt
 * and its check). Power-off prints the counts (sim_io_print_refusals).
 * Called under the exit lock, like everything here.
 */
enum refusal {
	RF_LAPIC,
	RF_IOAPIC,
	RF_CMOS,
	RF_PCI,
	RF_BUS_MASTER,
	RF_PCIEXBAR,
	RF_FW_CFG,
	RF_KBC,
	RF_PORT,
	RF_MMIO,
	RF_N
};
static const char *const refusal_name[RF_N] = {"lapic",	   "ioapic", "cmos", "pci",  "bus-master",
					       "pciexbar", "fw_cfg", "kbc",  "port", "mmio"};
#define REFUSAL_LINES 64
static unsigned refusal_count[RF_N];

/* Counts a refusal of `dev`; true while its lines are still printed. */
static bool refusal_log(enum refusal dev)
{
	return ++refusal_count[dev] <= REFUSAL_LINES;
}

void sim_io_print_refusals(void)
{
	char line[256];
	size_t n = fmt_snprintf(line, sizeof(line), "%s: refusals:", hv_tag);
	for (unsigned i = 0; i < RF_N && n < sizeof(line); i++)
		n += fmt_snprintf(line + n, sizeof(line) - n, " %s=%u", refusal_name[i],
				  refusal_count[i]);
	con_printf("%s (lines: the first %u of each)\n", line, REFUSAL_LINES);
}

/* ---- fw_cfg, QEMU docs/specs/fw_cfg.txt ---- */
#define FW_SIG		  0x0000
#define FW_ID		  0x0001
#define FW_NB_CPUS	  0x0005
#define FW_MAX_CPUS	  0x000F
#define FW_KERNEL_ADDR	  0x0007
#define FW_KERNEL_SIZE	  0x0008
#define FW_KERNEL_CMDLINE 0x0009
#define FW_INITRD_ADDR	  0x000A
#define FW_INITRD_SIZE	  0x000B
#define FW_KERNEL_ENTRY	  0x0010
#define FW_KERNEL_DATA	  0x0011
#define FW_INITRD_DATA	  0x0012
#define FW_CMDLINE_ADDR	  0x0013
#define FW_CMDLINE_SIZE	  0x0014
#define FW_CMDLINE_DATA	  0x0015
#define FW_SETUP_ADDR	  0x0016
#define FW_SETUP_SIZE	  0x0017
#define FW_SETUP_DATA	  0x0018
#define FW_FILE_DIR	  0x0019
#define FW_MAX_FILES	  128
#define FW_HIDDEN_PREFIX  "opt/csvsm/"

struct fw_item {
	uint16_t key;
	const uint8_t *data;
	uint32_t len;
	uint16_t real; /* != 0: the bytes are the real device's item `real` */
};

/*
 * A Linux guest (make run GUEST=linux): QEMU hands csvsm the kernel, initrd
 * and command line as hidden files opt/csvsm/linux/{kernel,initrd,cmdline};
 * the guest's firmware finds them where QEMU's own -kernel puts them
 * (FW_CFG_KERNEL_*, INITRD_*, CMDLINE_*; the setup items stay empty, so
 * OVMF's "kernel" file is the whole bzImage, which it starts through its
 * EFI stub). Kernel and initrd are read through from the device: no size
 * limit and no copy in csvsm.
 */
#define LINUX_CMDLINE_MAX 4096
static struct {
	uint16_t kernel_key, initrd_key, cmdline_key;
	uint32_t kernel_size, initrd_size, cmdline_file_size;
	uint32_t kernel_le, initrd_le, cmdline_le;
	char cmdline[LINUX_CMDLINE_MAX + 1];
} lx;

static uint8_t fw_dir[4 + 64 * FW_MAX_FILES];
static uint32_t fw_dir_len;
static uint8_t fw_e820[(MEMMAP_MAX_ENTRIES + 2) * 20];
static uint32_t fw_e820_len;
/* Keys of the files the guest's directory lists (passed through). */
static uint16_t file_keys[FW_MAX_FILES];
static unsigned nfile_keys;
/* The machine's own files (opt/csvsm/...): absent from the guest's directory. */
#define FW_HIDDEN_MAX 8
static struct {
	uint16_t key;
	char name[56];
} hidden[FW_HIDDEN_MAX];
static unsigned nhidden;
static uint32_t u32_zero, u32_one, u32_id = 1 /* traditional interface only, no DMA */,
				   probe_size_le;
static uint16_t u16_one = 1;
static struct fw_item synth[24];
static unsigned nsynth;

static uint16_t fw_sel;
static uint32_t fw_off;
static const struct fw_item *fw_cur; /* NULL: pass through to the real device */
static const struct fw_item fw_empty = {0, NULL, 0, 0};

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
	p[3] = (uint8_t)v;
}
static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static void synth_add(uint16_t key, const void *data, uint32_t len)
{
	if (nsynth < ARRAY_SIZE(synth))
		synth[nsynth++] = (struct fw_item){key, data, len, 0};
}

static void synth_pass(uint16_t key, uint16_t real, uint32_t len)
{
	if (nsynth < ARRAY_SIZE(synth))
		synth[nsynth++] = (struct fw_item){key, NULL, len, real};
}

static void fw_build_e820(void)
{
	const struct hvm_memmap_table_entry *e = cfg.e820;
	int n = e ? (int)MIN(cfg.n_e820, MEMMAP_MAX_ENTRIES + 2) : 0;
	for (int i = 0; i < n; i++) {
		uint8_t *p =
		    fw_e820 + 20 * i; /* QEMU struct e820_entry: u64 addr, u64 len, u32 type */
		memcpy(p, &e[i].addr, 8);
		memcpy(p + 8, &e[i].size, 8);
		memcpy(p + 16, &e[i].type, 4);
	}
	fw_e820_len = 20 * (uint32_t)n;
}

/* The guest's file directory: the real one minus opt/csvsm/, etc/e820 resized. */
static void fw_build_dir(void)
{
	uint8_t hdr[4];
	fw_cfg_read(FW_FILE_DIR, hdr, 4);
	uint32_t count = get_be32(hdr), kept = 0;
	for (uint32_t i = 0; i < count && i < FW_MAX_FILES; i++) {
		uint8_t e[64];
		for (int j = 0; j < 64; j++)
			e[j] = inb(0x511);
		e[63] = 0;
		uint16_t key = (uint16_t)(e[4] << 8 | e[5]);
		const char *name = (const char *)e + 8;
		if (strncmp(name, FW_HIDDEN_PREFIX, sizeof(FW_HIDDEN_PREFIX) - 1) == 0) {
			uint32_t size = get_be32(e);
			if (nhidden < FW_HIDDEN_MAX) {
				hidden[nhidden].key = key;
				memcpy(hidden[nhidden].name, name,
				       sizeof(hidden[nhidden].name) - 1);
				nhidden++;
			}
			if (strcmp(name, "opt/csvsm/linux/kernel") == 0)
				lx.kernel_key = key, lx.kernel_size = size;
			else if (strcmp(name, "opt/csvsm/linux/initrd") == 0)
				lx.initrd_key = key, lx.initrd_size = size;
			else if (strcmp(name, "opt/csvsm/linux/cmdline") == 0)
				lx.cmdline_key = key, lx.cmdline_file_size = size;
			continue;
		}
		if (strcmp(name, "etc/e820") == 0) {
			put_be32(e, fw_e820_len);
			synth_add(key, fw_e820, fw_e820_len);
		} else {
			file_keys[nfile_keys++] = key;
		}
		memcpy(fw_dir + 4 + 64 * kept++, e, 64);
	}
	put_be32(fw_dir, kept);
	fw_dir_len = 4 + 64 * kept;
	char line[FW_HIDDEN_MAX * 58];
	size_t n = 0;
	line[0] = 0;
	for (unsigned i = 0; i < nhidden && n < sizeof(line); i++)
		n +=
		    fmt_snprintf(line + n, sizeof(line) - n, "%s%s", i ? ", " : "", hidden[i].name);
	con_printf("%s: fw_cfg: hidden from the guest: %s\n", hv_tag, nhidden ? line : "nothing");
}

/* PCIEXBAR of the q35 MCH (00:00.0 0x60/0x64, Intel 3 Series datasheet
 * §5.1.13): SeaBIOS enables a 256 MiB window at 0xB0000000; csvsm does if
 * nothing did. The guest sees its own copy (guest_pciexbar) and may move
 * the window within devpolicy_pciexbar's limits (an SVSM-aware OVMF puts
 * it at 0xE0000000); csvsm's accesses always use the hardware's. */
static uint64_t guest_pciexbar;
static gpa_t guest_ecam; /* the guest's window, 0 while it has it disabled */
static struct dp_range ram_ranges[MEMMAP_MAX_ENTRIES];
static unsigned nr_ram_ranges;

static void pciexbar_set(gpa_t base)
{
	outl(0xCF8, 0x80000060u);
	outl(0xCFC, 0); /* disable while moving (QEMU remaps on every write) */
	outl(0xCF8, 0x80000064u);
	outl(0xCFC, (uint32_t)(base >> 32));
	outl(0xCF8, 0x80000060u);
	outl(0xCFC, (uint32_t)base | 1u);
	ecam_base = base;
}

static void ecam_init(void)
{
	outl(0xCF8, 0x80000060u);
	uint32_t lo = inl(0xCFC);
	outl(0xCF8, 0x80000064u);
	uint32_t hi = inl(0xCFC);
	ecam_base = ((gpa_t)hi << 32) | (lo & 0xF0000000u);
	if (!(lo & 1) || (lo & 6) != 0) /* disabled, or not the 256 MiB size */
		pciexbar_set(0xB0000000u);
	guest_pciexbar = ecam_base | 1;
	guest_ecam = ecam_base;
	nr_ram_ranges = 0;
	for (unsigned i = 0; cfg.mm && i < cfg.mm->nr_entries; i++) {
		const struct hvm_memmap_table_entry *e = &cfg.mm->entries[i];
		if (e->type == MEMMAP_TYPE_RAM)
			ram_ranges[nr_ram_ranges++] =
			    (struct dp_range){.start = e->addr, .end = e->addr + e->size};
	}
}

/*
 * The guest's access to its PCIEXBAR bytes [reg, reg + size) within
 * 0x60..0x67: reads see its copy; a write that leaves an enabled window
 * devpolicy_pciexbar accepts moves the hardware's window there.
 */
static void pciexbar_access(unsigned reg, unsigned size, bool in, uint32_t *val)
{
	unsigned sh = 8 * (reg - DP_PCIEXBAR_REG);
	uint64_t mask = (size == 4 ? 0xFFFFFFFFULL : (1ULL << (8 * size)) - 1) << sh;
	if (in) {
		*val = (uint32_t)((guest_pciexbar & mask) >> sh);
		return;
	}
	uint64_t want = (guest_pciexbar & ~mask) | (((uint64_t)*val << sh) & mask);
	gpa_t base = 0;
	switch (devpolicy_pciexbar(want, ram_ranges, nr_ram_ranges, &base)) {
	case DPX_DISABLED:
		guest_pciexbar = want;
		guest_ecam = 0;
		break;
	case DPX_OK:
		guest_pciexbar = want;
		if (base != ecam_base)
			pciexbar_set(base);
		guest_ecam = base;
		con_printf("%s: guest ECAM window at 0x%llx\n", hv_tag, (unsigned long long)base);
		break;
	case DPX_REFUSED:
		if (refusal_log(RF_PCIEXBAR))
			con_printf(
			    "%s: refused: pciexbar: 0:0.0 reg 0x%x := 0x%x (PCIEXBAR 0x%llx)\n",
			    hv_tag, reg, *val, (unsigned long long)want);
		break;
	}
}

void sim_io_init(const struct sim_io_config *c)
{
	cfg = *c;
	ecam_init();
	fw_build_e820();
	fw_build_dir(); /* first: it finds the Linux files and adds etc/e820 */
	synth_add(FW_ID, &u32_id, 4);
	synth_add(FW_NB_CPUS, &u16_one, 2); /* one-vCPU view: guest APs only via CREATE_VCPU */
	synth_add(FW_MAX_CPUS, &u16_one, 2);
	synth_add(FW_KERNEL_ADDR, &u32_zero, 4);
	synth_add(FW_KERNEL_ENTRY, &u32_zero, 4);
	synth_add(FW_KERNEL_CMDLINE, &u32_zero, 4);
	synth_add(FW_INITRD_ADDR, &u32_zero, 4);
	synth_add(FW_CMDLINE_ADDR, &u32_zero, 4);
	synth_add(FW_SETUP_ADDR, &u32_zero, 4);
	synth_add(FW_SETUP_SIZE, &u32_zero, 4);
	synth_add(FW_SETUP_DATA, NULL, 0);
	/* The command line (QEMU's -append) for either kernel: Linux, or the probe,
	 * which OVMF's loader hands it to as LoadOptions (csvsm.nonce=, attest.sh). */
	uint32_t cn = lx.cmdline_file_size < LINUX_CMDLINE_MAX ? lx.cmdline_file_size
							       : LINUX_CMDLINE_MAX;
	if (lx.cmdline_key)
		fw_cfg_read(lx.cmdline_key, lx.cmdline, cn);
	lx.cmdline[cn] = 0;
	while (cn && (lx.cmdline[cn - 1] == '\n' || lx.cmdline[cn - 1] == 0))
		lx.cmdline[--cn] = 0;
	lx.cmdline_le = cn ? cn + 1 : 0; /* QEMU counts the NUL; OVMF checks it */
	if (lx.kernel_key) {
		lx.kernel_le = lx.kernel_size;
		lx.initrd_le = lx.initrd_key ? lx.initrd_size : 0;
		synth_add(FW_KERNEL_SIZE, &lx.kernel_le, 4);
		synth_pass(FW_KERNEL_DATA, lx.kernel_key, lx.kernel_size);
		synth_add(FW_INITRD_SIZE, &lx.initrd_le, 4);
		synth_pass(FW_INITRD_DATA, lx.initrd_key, lx.initrd_le);
		synth_add(FW_CMDLINE_SIZE, &lx.cmdline_le, 4);
		synth_add(FW_CMDLINE_DATA, lx.cmdline, lx.cmdline_le);
		con_printf("%s: guest kernel opt/csvsm/linux/kernel (%u KiB), initrd %u KiB, "
			   "command line \"%s\"\n",
			   hv_tag, lx.kernel_size >> 10, lx.initrd_le >> 10, lx.cmdline);
	} else {
		probe_size_le = cfg.probe_size;
		synth_add(FW_KERNEL_SIZE, &probe_size_le, 4);
		synth_add(FW_KERNEL_DATA, cfg.probe, cfg.probe_size);
		synth_add(FW_INITRD_SIZE, &u32_zero, 4);
		synth_add(FW_INITRD_DATA, NULL, 0);
		synth_add(FW_CMDLINE_SIZE, &lx.cmdline_le, 4);
		synth_add(FW_CMDLINE_DATA, lx.cmdline, lx.cmdline_le);
	}
	synth_add(FW_FILE_DIR, fw_dir, fw_dir_len);
	(void)u32_one;
}

/*
 * Default deny on the item the device would select (the selector with the
 * bits QEMU ignores cleared, devpolicy_fw_cfg_key): csvsm's own items, the
 * files of the guest's directory and a few plain items; anything else reads
 * as empty.
 */
static void fw_select(uint16_t selector)
{
	uint16_t key = devpolicy_fw_cfg_key(selector);
	fw_sel = selector;
	fw_off = 0;
	fw_cur = &fw_empty;
	for (unsigned i = 0; i < nsynth; i++)
		if (synth[i].key == key) {
			fw_cur = &synth[i];
			if (fw_cur->real)
				outw(0x510, fw_cur->real);
			return;
		}
	bool pass = devpolicy_fw_cfg_plain(key);
	for (unsigned i = 0; i < nfile_keys && !pass; i++)
		pass = file_keys[i] == key;
	if (pass) {
		fw_cur = NULL;
		outw(0x510, key);
		return;
	}
	for (unsigned i = 0; i < nhidden; i++)
		if (hidden[i].key == key && refusal_log(RF_FW_CFG))
			con_printf("%s: refused: fw_cfg: hidden item %s (selector 0x%x, item 0x%x) "
				   "reads empty\n",
				   hv_tag, hidden[i].name, selector, key);
}

static uint8_t fw_read_byte(void)
{
	if (!fw_cur)
		return inb(0x511);
	uint8_t b = 0;
	if (fw_off < fw_cur->len && fw_cur->real)
		b = inb(0x511);
	else if (fw_off < fw_cur->len && fw_cur->data)
		b = fw_cur->data[fw_off];
	fw_off++;
	return b;
}

/*
 * ---- COM1: QEMU's 16550, shared with csvsm's console ----
 * The guest drives the real UART, so its transmit interrupt (IRQ 4, routed
 * by the guest's filtered IOAPIC entry) reaches it and Linux's interrupt-
 * driven tty output runs as under any hypervisor; csvsm writes its own
 * lines to the same device. Loopback mode (MCR bit 4) is refused: it would
 * swallow csvsm's console. One byte per register access.
 */
#define UART_BASE     0x3F8
#define UART_LCR      3
#define UART_LCR_DLAB 0x80
#define UART_MCR      4
#define UART_MCR_LOOP 0x10

/*
 * csvsm's console (VMPL0) writes one byte per exit, on several CPUs at
 * once, while the machine prints its own lines from others: a machine line
 * could land inside a csvsm line, and the tests read both by line start
 * (a run under load once split "csvsm: vCPU 1: the host refused ..." that
 * way). So VMPL0's data bytes are kept per CPU until the end of the line
 * (or 255 bytes) and written in one piece under the console lock, like the
 * machine's own lines. The guest VMPL's bytes go to the UART at once: its
 * transmit interrupt drives Linux's tty output.
 */
static struct {
	char b[255];
	uint8_t n;
} uart_line[MAX_CPUS];

static void uart_line_out(unsigned cpu)
{
	if (uart_line[cpu].n)
		con_guest_write(uart_line[cpu].b, uart_line[cpu].n);
	uart_line[cpu].n = 0;
}

void sim_uart_flush(void)
{
	for (unsigned i = 0; i < MAX_CPUS; i++)
		uart_line_out(i);
}

static bool uart_vmpl0_data(uint16_t p, uint8_t b)
{
	struct percpu *cpu = this_cpu();
	if (p != UART_BASE || !cpu || cpu->id >= MAX_CPUS || sim_cur_vmpl() != 0 ||
	    (inb(UART_BASE + UART_LCR) & UART_LCR_DLAB))
		return false;
	uart_line[cpu->id].b[uart_line[cpu->id].n++] = (char)b;
	if (b == '\n' || uart_line[cpu->id].n == sizeof(uart_line[0].b))
		uart_line_out(cpu->id);
	return true;
}

static uint32_t uart_io(uint16_t port, unsigned size, bool in, uint32_t v)
{
	uint32_t out = 0;
	for (unsigned i = 0; i < size; i++) {
		uint16_t p = (uint16_t)(port + i);
		uint8_t b = (uint8_t)(v >> (8 * i));
		if (in) {
			out |= (uint32_t)inb(p) << (8 * i);
			continue;
		}
		if (p - UART_BASE == UART_MCR)
			b &= (uint8_t)~UART_MCR_LOOP;
		if (!uart_vmpl0_data(p, b))
			outb(p, b);
	}
	return out;
}

/* ---- PCI configuration: CF8/CFC and ECAM, one filter (devpolicy_pci_write) ---- */
static uint32_t pci_addr; /* the guest's CONFIG_ADDRESS */

static uint32_t port_in(uint16_t port, unsigned size)
{
	switch (size) {
	case 1:
		return inb(port);
	case 2:
		return inw(port);
	default:
		return inl(port);
	}
}
static void port_out(uint16_t port, unsigned size, uint32_t v)
{
	switch (size) {
	case 1:
		outb(port, (uint8_t)v);
		break;
	case 2:
		outw(port, (uint16_t)v);
		break;
	default:
		outl(port, v);
	}
}

static uint32_t mmio_rd(gpa_t a, unsigned size)
{
	switch (size) {
	case 1:
		return *(volatile uint8_t *)(uintptr_t)a;
	case 2:
		return *(volatile uint16_t *)(uintptr_t)a;
	default:
		return *(volatile uint32_t *)(uintptr_t)a;
	}
}
static void mmio_wr(gpa_t a, unsigned size, uint32_t v)
{
	switch (size) {
	case 1:
		*(volatile uint8_t *)(uintptr_t)a = (uint8_t)v;
		break;
	case 2:
		*(volatile uint16_t *)(uintptr_t)a = (uint16_t)v;
		break;
	default:
		*(volatile uint32_t *)(uintptr_t)a = v;
	}
}

/*
 * One configuration access of function `bdf` at byte `reg`, whichever way
 * the guest came: csvsm performs it through ECAM (every register), after
 * the filter for writes. Accesses must be naturally aligned.
 */
static void pci_cfg(uint16_t bdf, unsigned reg, unsigned size, bool in, uint32_t *val)
{
	gpa_t a = ecam_base + ((gpa_t)bdf << 12) + reg;
	if (!ecam_base || (reg & (size - 1)) || reg + size > 0x1000) {
		if (in)
			*val = 0xFFFFFFFFu;
		return;
	}
	if (bdf == 0 && reg >= DP_PCIEXBAR_REG && reg < DP_PCIEXBAR_REG + 8) {
		pciexbar_access(reg, size, in, val);
		return;
	}
	if (in) {
		*val = mmio_rd(a, size);
		return;
	}
	uint32_t v = *val, cur = mmio_rd(ALIGN_DOWN(a, 4), 4);
	if (devpolicy_pci_write(bdf, reg, size, &v, cur)) {
		if (v != *val && refusal_log(RF_BUS_MASTER))
			con_printf("%s: refused: bus-master: %x:%x.%x reg 0x%x := 0x%x (written as "
				   "0x%x)\n",
				   hv_tag, bdf >> 8, (bdf >> 3) & 31, bdf & 7, reg, *val, v);
		mmio_wr(a, size, v);
	} else if (refusal_log(RF_PCI)) {
		con_printf("%s: refused: pci: %x:%x.%x reg 0x%x := 0x%x (%u bytes)\n", hv_tag,
			   bdf >> 8, (bdf >> 3) & 31, bdf & 7, reg, *val, size);
	}
}

/* ---- MMIO: the local APIC (stores), the IOAPIC and ECAM; nothing else ---- */
static uint32_t ioregsel;
#define LAPIC_ICR_LO_OFF 0x300
#define LAPIC_ICR_HI_OFF 0x310
static uint32_t guest_icr_hi[MAX_CPUS]; /* per csvsm vCPU: each runs one guest vCPU */

bool sim_mmio(gpa_t gpa, unsigned size, bool write, uint64_t *val)
{
	uint64_t v = write ? *val : ~0ULL;
	unsigned off = (unsigned)(gpa & 0xFFF);
	bool dword = size == 4 && IS_ALIGNED(gpa, 4);

	switch (devpolicy_mmio(gpa, guest_ecam)) {
	case DPM_LAPIC:
		if (!dword)
			break;
		if (off == LAPIC_ICR_HI_OFF) {
			/* The guest's ICR high half is its own: csvsm sends NMIs from the
			 * same local APIC (shootdown kicks), which would otherwise
			 * change where the guest's next IPI goes. */
			if (write)
				guest_icr_hi[this_cpu()->id] = (uint32_t)v;
			else
				v = guest_icr_hi[this_cpu()->id];
		} else if (!write) {
			v = mmio_rd(gpa, 4);
		} else if (devpolicy_lapic_write(off, (uint32_t)v)) {
			if (off == LAPIC_ICR_LO_OFF)
				mmio_wr(DP_LAPIC_BASE + LAPIC_ICR_HI_OFF, 4,
					guest_icr_hi[this_cpu()->id]);
			mmio_wr(gpa, 4, (uint32_t)v);
		} else if (refusal_log(RF_LAPIC))
			con_printf("%s: refused: lapic: register 0x%x := 0x%x\n", hv_tag, off,
				   (uint32_t)v);
		break;
	case DPM_IOAPIC:
		if (!dword)
			break;
		if (off == 0x00) { /* IOREGSEL */
			if (write)
				ioregsel = (uint32_t)v & 0xFF;
			else
				v = ioregsel;
		} else if (off == 0x10) { /* IOWIN */
			mmio_wr(DP_IOAPIC_BASE, 4, ioregsel);
			if (!write)
				v = mmio_rd(DP_IOAPIC_BASE + 0x10, 4);
			else if (devpolicy_ioapic_write(ioregsel, (uint32_t)v))
				mmio_wr(DP_IOAPIC_BASE + 0x10, 4, (uint32_t)v);
			else if (refusal_log(RF_IOAPIC))
				con_printf("%s: refused: ioapic: register 0x%x := 0x%x\n", hv_tag,
					   ioregsel, (uint32_t)v);
		} else if (off == 0x40 && write) { /* EOI */
			mmio_wr(gpa, 4, (uint32_t)v);
		}
		break;
	case DPM_ECAM: {
		if (size > 4)
			break;
		uint32_t w = (uint32_t)v;
		gpa_t o = gpa - guest_ecam;
		pci_cfg((uint16_t)(o >> 12), (unsigned)(o & 0xFFF), size, !write, &w);
		v = w;
		break;
	}
	case DPM_DENY:
		if (refusal_log(RF_MMIO))
			con_printf("%s: refused: mmio: %s at gpa 0x%llx (%u bytes)\n", hv_tag,
				   write ? "write" : "read", (unsigned long long)gpa, size);
		break;
	}
	if (!write)
		*val = size >= 8 ? v : v & ((1ULL << (8 * size)) - 1);
	return true;
}

/* ---- ports ---- */
static uint8_t cmos_index;

static bool io_byte(uint16_t port, bool in, uint32_t *val);

/* One access inside one device class (devpolicy_port); *val in/out. */
static bool io_one(uint16_t port, unsigned size, bool in, uint32_t *val)
{
	uint32_t v = in ? 0 : *val;
	uint32_t mask = size == 1 ? 0xFF : size == 2 ? 0xFFFF : 0xFFFFFFFFu;

	switch (devpolicy_port(port)) {
	case DP_UART:
		v = uart_io(port, size, in, v);
		break;
	case DP_FWCFG_SEL:
		if (!in)
			fw_select((uint16_t)v);
		else
			v = fw_sel;
		break;
	case DP_FWCFG_DATA:
		if (in) {
			v = 0;
			for (unsigned i = 0; i < size; i++)
				v |= (uint32_t)fw_read_byte() << (8 * i);
		}
		break;
	case DP_PCI_ADDR: /* byte accesses to 0xCF8 are not CONFIG_ADDRESS: nothing */
		v = 0xFFFFFFFFu;
		break;
	case DP_PCI_DATA: {
		unsigned reg = (pci_addr & 0xFC) + (port - 0xCFC);
		if (!(pci_addr & 0x80000000u) || (pci_addr & 0xFF000000u) != 0x80000000u) {
			v = 0xFFFFFFFFu; /* disabled, or the reserved bits 30:24 set */
			break;
		}
		pci_cfg((uint16_t)((pci_addr >> 8) & 0xFFFF), reg, size, in, &v);
		break;
	}
	case DP_RESET:
		if (!in && (v & 0x04)) {
			guest_power_event = 2;
			return false;
		}
		v = 0;
		break;
	case DP_PM1A_CNT: {
		/* SLP_EN (bit 13 of PM1a_CNT at 0x604) ends the VM: no sleep state is
		 * ever entered, so no resume path through firmware exists. */
		uint32_t wide = v << (8 * (port - 0x604));
		if (!in && (wide & (1u << 13))) {
			guest_power_event = 1;
			return false;
		}
		if (in)
			v = port_in(port, size);
		else
			port_out(port, size, v);
		break;
	}
	case DP_CMOS_INDEX:
		if (in) {
			v = inb(0x70);
		} else {
			cmos_index = (uint8_t)v;
			outb(0x70, (uint8_t)v);
		}
		break;
	case DP_CMOS_DATA:
		outb(0x70, cmos_index);
		if (in)
			v = inb(0x71);
		else if (devpolicy_cmos_write(cmos_index))
			outb(0x71, (uint8_t)v);
		else if (refusal_log(RF_CMOS))
			con_printf("%s: refused: cmos: register 0x%x := 0x%x\n", hv_tag,
				   cmos_index & 0x7F, v & 0xFF);
		break;
	case DP_KBC_CMD:
		if (in)
			v = inb(0x64);
		else if (devpolicy_kbc_command((uint8_t)v))
			outb(0x64, (uint8_t)v);
		else if (refusal_log(RF_KBC))
			con_printf("%s: refused: kbc: command 0x%x\n", hv_tag, v & 0xFF);
		break;
	case DP_SVSM_CHAN:
		/*
		 * csvsm's channel to its host: the guest never reaches it. On a real
		 * host QEMU's UART answers every VMPL alike (KVM passes every plane's
		 * IOIO to the same device): there a guest could only do what the host
		 * can, inject or swallow bytes of a stream that is sealed and signed.
		 */
		if (sim_cur_vmpl() != 0) {
			if (refusal_log(RF_PORT))
				con_printf("%s: refused: port: 0x%x %s (%u bytes): csvsm's channel\n",
					   hv_tag, port, in ? "in" : "out", size);
			v = 0xFFFFFFFFu;
			break;
		}
		/* VMPL0's accesses reach the device */
		__attribute__((fallthrough));
	case DP_PASS:
		if (in)
			v = port_in(port, size);
		else
			port_out(port, size, v);
		break;
	case DP_DENY:
		/* Port 0x80 (POST codes) is written all through the firmware's boot. */
		if (port != 0x80 && refusal_log(RF_PORT))
			con_printf("%s: refused: port: 0x%x %s (%u bytes)\n", hv_tag, port,
				   in ? "in" : "out", size);
		v = 0xFFFFFFFFu;
		break;
	}
	if (in)
		*val = v & mask;
	return true;
}

static bool io_byte(uint16_t port, bool in, uint32_t *val)
{
	return io_one(port, 1, in, val);
}

bool sim_io_port(uint16_t port, unsigned size, bool in, uint32_t *val)
{
	if (port == 0xCF8 && size == 4) { /* CONFIG_ADDRESS (PCI mechanism #1) */
		if (in)
			*val = pci_addr;
		else
			pci_addr = *val;
		return true;
	}
	/* The fw_cfg selector is the 16-bit register at 0x510, which QEMU
	 * decodes over 0x510-0x511 (hw/nvram/fw_cfg.c fw_cfg_comb_write): a
	 * 16-bit write there selects, it is not a byte of data at 0x511. */
	if (port == 0x510 && size == 2)
		return io_one(port, size, in, val);
	/* An access that spans devices of different classes (outw 0x70 writes
	 * the CMOS index and its data) is taken apart byte by byte, as QEMU's
	 * 1-byte devices do, so each byte meets its own rule. */
	enum devpolicy_port cls = devpolicy_port(port);
	bool split = false;
	for (unsigned i = 1; i < size; i++)
		split |= devpolicy_port((uint16_t)(port + i)) != cls;
	if (!split)
		return io_one(port, size, in, val);
	uint32_t out = 0;
	for (unsigned i = 0; i < size; i++) {
		uint32_t b = in ? 0 : (*val >> (8 * i)) & 0xFF;
		if (!io_byte((uint16_t)(port + i), in, &b))
			return false;
		out |= (b & 0xFF) << (8 * i);
	}
	if (in)
		*val = out;
	return true;
}
