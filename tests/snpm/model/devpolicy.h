/*
 * The guest's device view: what a guest may do with each device the SNP
 * machine passes through or emulates (devpolicy.c). Default deny: a
 * port, an MMIO address, a register or a value that is not listed here is
 * refused. The list, and why each entry is safe, is in
 * docs/snp-machine-devices.md "Devices: default deny". The SNP machine's
 * device model uses it (not in csvsm's image).
 *
 * The rule behind every entry: nothing the guest does through a device may
 * deliver INIT, SIPI, SMI or NMI to a CPU csvsm runs on, reset or resume
 * the machine through firmware the guest can influence, make a device
 * master DMA, move a device window over memory, or show the guest data it
 * was not given (fw_cfg items csvsm hides). Pure functions: unit-tested on
 * the host (tests/unit/test_devpolicy.c).
 */
#ifndef TESTS_SNPM_MODEL_DEVPOLICY_H
#define TESTS_SNPM_MODEL_DEVPOLICY_H

#include "base/types.h"

/* ---- port I/O ---- */
enum devpolicy_port {
	DP_DENY,       /* reads all ones, writes dropped */
	DP_PASS,       /* a device that cannot DMA or signal a CPU: passed through */
	DP_UART,       /* COM1, emulated */
	DP_FWCFG_SEL,  /* fw_cfg selector (0x510), emulated */
	DP_FWCFG_DATA, /* fw_cfg data (0x511), emulated */
	DP_PCI_ADDR,   /* 0xCF8 */
	DP_PCI_DATA,   /* 0xCFC..0xCFF */
	DP_RESET,      /* 0xCF9 reset control: a reset request ends the VM */
	DP_PM1A_CNT,   /* ACPI PM1a control: SLP_EN ends the VM (no sleep state is entered) */
	DP_CMOS_INDEX, /* 0x70: index (and NMI mask) */
	DP_CMOS_DATA,  /* 0x71: writes only to the RTC registers */
	DP_KBC_CMD,    /* i8042 command port 0x64: commands filtered */
	DP_SVSM_CHAN,  /* COM4 0x2E8-0x2EF: csvsm's host channel, VMPL0 only (passed through) */
};
enum devpolicy_port devpolicy_port(uint16_t port);

/* CMOS register `idx` may be written (RTC time, alarm and status A-D only). */
bool devpolicy_cmos_write(uint8_t idx);
/* i8042 controller command `cmd` may be passed on (no reset pulse, no output-port write). */
bool devpolicy_kbc_command(uint8_t cmd);

/*
 * fw_cfg: the item QEMU's device selects for a selector value. QEMU masks
 * the selector with FW_CFG_ENTRY_MASK (0x3fff) and takes bit 15
 * (FW_CFG_ARCH_LOCAL) as the table; bit 14 (FW_CFG_WRITE_CHANNEL) is
 * ignored for reads (hw/nvram/fw_cfg.c fw_cfg_select). Filters must compare
 * this value, never the raw selector.
 */
uint16_t devpolicy_fw_cfg_key(uint16_t selector);
/* Plain (non-file) fw_cfg items the guest may read as QEMU has them. */
bool devpolicy_fw_cfg_plain(uint16_t key);

/* ---- MMIO ---- */
#define DP_LAPIC_BASE  0xFEE00000ULL
#define DP_IOAPIC_BASE 0xFEC00000ULL
#define DP_ECAM_SIZE   (256ULL << 20)

enum devpolicy_mmio { DPM_DENY, DPM_LAPIC, DPM_IOAPIC, DPM_ECAM };
/* Which emulated device (if any) owns guest-physical `gpa`; ecam_base 0 = no ECAM. */
enum devpolicy_mmio devpolicy_mmio(gpa_t gpa, gpa_t ecam_base);

/* A 32-bit store to local APIC register `off` (xAPIC MMIO offset) may be performed. */
bool devpolicy_lapic_write(unsigned off, uint32_t val);
/* A 32-bit store of `val` to IOAPIC register `index` (through IOWIN) may be performed. */
bool devpolicy_ioapic_write(uint32_t index, uint32_t val);

/*
 * PCI configuration write of `size` bytes at byte offset `reg` of function
 * `bdf` (bus << 8 | dev << 3 | fn), through CF8/CFC or ECAM alike.
 * `cur` is the current value of the aligned dword holding `reg`; `*val`
 * holds the bytes to write in its low `size` bytes and may be changed
 * (bus mastering is cleared). Returns false to drop the write.
 */
bool devpolicy_pci_write(uint16_t bdf, unsigned reg, unsigned size, uint32_t *val, uint32_t cur);

/*
 * The q35 MCH's PCIEXBAR (00:00.0 0x60, 64 bits) is the guest's own view:
 * the guest writes it in pieces (disable, high, low | enable). Where the
 * hardware window may move to when the guest's value is `want`:
 *   DPX_DISABLED  the guest has no ECAM window (the hardware keeps its own);
 *   DPX_OK        *base = a 256 MiB window below 0xF0000000 that overlaps
 *                 no RAM entry of `ram` (csvsm's region is RAM there too);
 *   DPX_REFUSED   any other size, reserved bits, or an overlap.
 * `ram`/`n` are the hypervisor's memory map ranges of type RAM, any order.
 */
enum devpolicy_pciexbar { DPX_DISABLED, DPX_OK, DPX_REFUSED };
#define DP_PCIEXBAR_REG 0x60
#define DP_ECAM_LIMIT	0xF0000000ULL
struct dp_range {
	gpa_t start, end;
};
enum devpolicy_pciexbar devpolicy_pciexbar(uint64_t want, const struct dp_range *ram, unsigned n,
					   gpa_t *base);

#endif
