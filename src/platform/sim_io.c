/*
 * sim platform: the guest's device view. Device DMA is not confined by
 * nested paging (sim notes §4 pitfall 10), so the guest gets no DMA-capable
 * device and no port by default (IOPM all ones). csvsm emulates COM1 and
 * fw_cfg (port interface only, with a filtered view: one vCPU, a memory map
 * without csvsm, the probe as the kernel, nothing under opt/csvsm/), and
 * passes through only ports of devices that cannot DMA, listed in
 * docs/sim-platform.md. Reset and power-off requests end the VM.
 */
#include "arch/x86/insn.h"
#include "csvsm/console.h"
#include "csvsm/cpu.h"
#include "csvsm/string.h"
#include "mm/memmap.h"
#include "sim_svm.h"

volatile int sim_guest_power_event;
static struct sim_io_config cfg;

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
};

static uint8_t fw_dir[4 + 64 * FW_MAX_FILES];
static uint32_t fw_dir_len;
static uint8_t fw_e820[(MEMMAP_MAX_ENTRIES + 2) * 20];
static uint32_t fw_e820_len;
static uint16_t hidden_keys[16];
static unsigned nhidden;
static uint32_t u32_zero, u32_one, u32_id = 1 /* traditional interface only, no DMA */,
				   probe_size_le;
static uint16_t u16_one = 1;
static struct fw_item synth[24];
static unsigned nsynth;

static uint16_t fw_sel;
static uint32_t fw_off;
static const struct fw_item *fw_cur; /* NULL: pass through to the real device */

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
		synth[nsynth++] = (struct fw_item){key, data, len};
}

static void fw_build_e820(void)
{
	struct hvm_memmap_table_entry e[MEMMAP_MAX_ENTRIES + 2];
	int n = memmap_guest_e820(cfg.mm, e, ARRAY_SIZE(e));
	if (n < 0)
		n = 0;
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
			if (nhidden < ARRAY_SIZE(hidden_keys))
				hidden_keys[nhidden++] = key;
			continue;
		}
		if (strcmp(name, "etc/e820") == 0) {
			put_be32(e, fw_e820_len);
			synth_add(key, fw_e820, fw_e820_len);
		}
		memcpy(fw_dir + 4 + 64 * kept++, e, 64);
	}
	put_be32(fw_dir, kept);
	fw_dir_len = 4 + 64 * kept;
}

void sim_io_init(const struct sim_io_config *c)
{
	cfg = *c;
	fw_build_e820();
	probe_size_le = cfg.probe_size;
	synth_add(FW_ID, &u32_id, 4);
	synth_add(FW_NB_CPUS, &u16_one, 2); /* one-vCPU view: guest APs only via CREATE_VCPU */
	synth_add(FW_MAX_CPUS, &u16_one, 2);
	synth_add(FW_KERNEL_ADDR, &u32_zero, 4);
	synth_add(FW_KERNEL_SIZE, &probe_size_le, 4);
	synth_add(FW_KERNEL_DATA, cfg.probe, cfg.probe_size);
	synth_add(FW_KERNEL_ENTRY, &u32_zero, 4);
	synth_add(FW_KERNEL_CMDLINE, &u32_zero, 4);
	synth_add(FW_INITRD_ADDR, &u32_zero, 4);
	synth_add(FW_INITRD_SIZE, &u32_zero, 4);
	synth_add(FW_INITRD_DATA, NULL, 0);
	synth_add(FW_CMDLINE_ADDR, &u32_zero, 4);
	synth_add(FW_CMDLINE_SIZE, &u32_zero, 4);
	synth_add(FW_CMDLINE_DATA, NULL, 0);
	synth_add(FW_SETUP_ADDR, &u32_zero, 4);
	synth_add(FW_SETUP_SIZE, &u32_zero, 4);
	synth_add(FW_SETUP_DATA, NULL, 0);
	fw_build_dir();
	synth_add(FW_FILE_DIR, fw_dir, fw_dir_len);
	(void)u32_one;
}

static void fw_select(uint16_t key)
{
	fw_sel = key;
	fw_off = 0;
	fw_cur = NULL;
	static const struct fw_item empty = {0, NULL, 0};
	for (unsigned i = 0; i < nhidden; i++)
		if (hidden_keys[i] == key) {
			fw_cur = &empty;
			return;
		}
	for (unsigned i = 0; i < nsynth; i++)
		if (synth[i].key == key) {
			fw_cur = &synth[i];
			return;
		}
	outw(0x510, key);
}

static uint8_t fw_read_byte(void)
{
	if (!fw_cur)
		return inb(0x511);
	uint8_t b = fw_off < fw_cur->len && fw_cur->data ? fw_cur->data[fw_off] : 0;
	fw_off++;
	return b;
}

/* ---- COM1: a 16550 that is always ready to send and never has input ---- */
static uint8_t uart_lcr, uart_ier, uart_mcr, uart_scr, uart_dll = 1, uart_dlm;

static uint32_t uart_io(uint16_t reg, bool in, uint32_t v)
{
	bool dlab = uart_lcr & 0x80;
	switch (reg) {
	case 0:
		if (in)
			return dlab ? uart_dll : 0;
		if (dlab)
			uart_dll = (uint8_t)v;
		else
			con_guest_putc((char)v);
		return 0;
	case 1:
		if (in)
			return dlab ? uart_dlm : uart_ier;
		if (dlab)
			uart_dlm = (uint8_t)v;
		else
			uart_ier = (uint8_t)v & 0x0F;
		return 0;
	case 2:
		return in ? 0x01 : 0; /* IIR: no interrupt pending */
	case 3:
		if (!in)
			uart_lcr = (uint8_t)v;
		return uart_lcr;
	case 4:
		if (!in)
			uart_mcr = (uint8_t)v;
		return uart_mcr;
	case 5:
		return 0x60; /* LSR: THR and transmitter empty */
	case 6:
		return 0xB0; /* MSR: CTS, DSR, DCD */
	default:
		if (!in)
			uart_scr = (uint8_t)v;
		return uart_scr;
	}
}

/* ---- PCI configuration mechanism #1, filtered ---- */
static uint32_t pci_addr;

/* Returns false to drop the write. */
static bool pci_filter_write(unsigned reg, unsigned size, uint32_t *v)
{
	unsigned bdf = (pci_addr >> 8) & 0xFFFF;
	/* Command register: never let the guest enable bus mastering (DMA). */
	if (reg <= 0x04 && reg + size > 0x04)
		*v &= ~(0x4u << ((0x04 - reg) * 8));
	/* q35 MCH (00:00.0) PCIEXBAR (0x60..0x67): the ECAM window must stay in
	 * the 32-bit MMIO hole, never over RAM or csvsm. */
	if (bdf == 0 && reg < 0x68 && reg + size > 0x60) {
		if (size != 4)
			return false;
		if (reg == 0x64)
			return *v == 0;
		return !(*v & 1) || (*v & 0xF0000000u) >= 0x80000000u;
	}
	return true;
}

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

/* Ports of devices that cannot DMA, passed through unchanged. */
static bool passthrough(uint16_t port)
{
	return (port >= 0x20 && port <= 0x21) ||   /* PIC master */
	       (port >= 0xA0 && port <= 0xA1) ||   /* PIC slave */
	       (port >= 0x4D0 && port <= 0x4D1) || /* ELCR */
	       (port >= 0x40 && port <= 0x43) ||   /* PIT */
	       port == 0x61 ||			   /* NMI status / PIT gate */
	       (port >= 0x70 && port <= 0x71) ||   /* RTC / CMOS */
	       port == 0x60 ||			   /* i8042 data */
	       (port >= 0x600 && port <= 0x67F);   /* ICH9 ACPI PM block (PMBASE 0x600) */
}

static unsigned unknown_logged;

bool sim_io_port(uint16_t port, unsigned size, bool in, uint32_t *val)
{
	uint32_t v = in ? 0 : *val;
	uint32_t mask = size == 1 ? 0xFF : size == 2 ? 0xFFFF : 0xFFFFFFFFu;

	if (port >= 0x3F8 && port <= 0x3FF) {
		v = uart_io((uint16_t)(port - 0x3F8), in, v);
	} else if (port == 0x510) {
		if (!in)
			fw_select((uint16_t)v);
		else
			v = fw_sel;
	} else if (port == 0x511) {
		if (in) {
			v = 0;
			for (unsigned i = 0; i < size; i++)
				v |= (uint32_t)fw_read_byte() << (8 * i);
		}
	} else if (port >= 0x514 && port <= 0x51B) {
		v = 0; /* no fw_cfg DMA for the guest */
	} else if (port == 0xCF8 && size == 4) {
		if (in)
			v = pci_addr;
		else
			outl(0xCF8, pci_addr = v);
	} else if (port >= 0xCFC && port <= 0xCFF) {
		outl(0xCF8, pci_addr);
		if (in) {
			v = port_in(port, size);
		} else {
			unsigned reg = (pci_addr & 0xFC) + (port - 0xCFC);
			if (pci_filter_write(reg, size, &v))
				port_out(port, size, v);
			else
				con_printf("csvsm: guest PCI config write 0x%x to %x:%x refused\n",
					   v, (pci_addr >> 8) & 0xFFFF, reg);
		}
	} else if (port == 0xCF9) {
		if (!in && (v & 0x04)) {
			sim_guest_power_event = 2;
			return false;
		}
		v = 0;
	} else if (port == 0x604 && !in && (v & (1u << 13))) {
		sim_guest_power_event = 1; /* PM1a_CNT.SLP_EN: ACPI power-off */
		return false;
	} else if (port == 0x64) {
		if (in)
			v = inb(0x64);
		else if ((v & 0xF0) != 0xF0) /* pulse-output commands (0xFE) reset the machine */
			outb(0x64, (uint8_t)v);
	} else if (passthrough(port)) {
		if (in)
			v = port_in(port, size);
		else
			port_out(port, size, v);
	} else {
		if (unknown_logged < 8 && port != 0x80) {
			unknown_logged++;
			con_printf("csvsm: guest port 0x%x denied (%s, %u bytes)\n", port,
				   in ? "in" : "out", size);
		}
		v = 0xFFFFFFFFu;
	}
	if (in)
		*val = v & mask;
	return true;
}
