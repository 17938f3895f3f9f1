/* Host fake of the instruction layer (see insn_fake.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/fake/insn_fake.h"

int (*fake_pvalidate)(vaddr_t, unsigned, bool, bool *);
int (*fake_rmpadjust)(vaddr_t, unsigned, uint64_t);
void (*fake_vmgexit)(void);
void (*fake_cpuid)(uint32_t, uint32_t, struct cpuid_regs *);

uint8_t fake_port_out[8192];
size_t fake_port_out_len;
uint16_t fake_port_last;
uint32_t fake_in_value;
uint64_t fake_tsc;
bool fake_rdrand_fail;

#define FAKE_MSRS 32
static struct {
	uint32_t msr;
	uint64_t val;
} msrs[FAKE_MSRS];
static unsigned nmsrs;

static __noreturn void fake_missing(const char *what)
{
	fprintf(stderr, "insn_fake: %s used without a hook\n", what);
	abort();
}

void fake_msr_reset(void)
{
	nmsrs = 0;
}

void cpuid_count(uint32_t leaf, uint32_t subleaf, struct cpuid_regs *r)
{
	if (fake_cpuid) {
		fake_cpuid(leaf, subleaf, r);
		return;
	}
	memset(r, 0, sizeof(*r));
}

uint64_t rdmsr(uint32_t msr)
{
	for (unsigned i = 0; i < nmsrs; i++)
		if (msrs[i].msr == msr)
			return msrs[i].val;
	return 0;
}

void wrmsr(uint32_t msr, uint64_t val)
{
	for (unsigned i = 0; i < nmsrs; i++)
		if (msrs[i].msr == msr) {
			msrs[i].val = val;
			return;
		}
	if (nmsrs == FAKE_MSRS)
		fake_missing("msr table space");
	msrs[nmsrs].msr = msr;
	msrs[nmsrs++].val = val;
}

uint64_t rdtsc(void)
{
	return fake_tsc += 1000;
}

bool rdrand64(uint64_t *v)
{
	if (fake_rdrand_fail)
		return false;
	*v = ((uint64_t)rand() << 33) ^ ((uint64_t)rand() << 11) ^ (uint64_t)rand();
	return true;
}
bool rdseed64(uint64_t *v)
{
	return rdrand64(v);
}

static void port_out(uint16_t port, const void *v, size_t n)
{
	fake_port_last = port;
	if (fake_port_out_len + n <= sizeof(fake_port_out)) {
		memcpy(fake_port_out + fake_port_out_len, v, n);
		fake_port_out_len += n;
	}
}
void outb(uint16_t port, uint8_t v)
{
	port_out(port, &v, 1);
}
void outw(uint16_t port, uint16_t v)
{
	port_out(port, &v, 2);
}
void outl(uint16_t port, uint32_t v)
{
	port_out(port, &v, 4);
}
uint8_t inb(uint16_t port)
{
	fake_port_last = port;
	return (uint8_t)fake_in_value;
}
uint16_t inw(uint16_t port)
{
	fake_port_last = port;
	return (uint16_t)fake_in_value;
}
uint32_t inl(uint16_t port)
{
	fake_port_last = port;
	return fake_in_value;
}

int pvalidate_insn(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	if (!fake_pvalidate)
		fake_missing("PVALIDATE");
	return fake_pvalidate(va, size, validate, unchanged);
}
int rmpadjust_insn(vaddr_t va, unsigned size, uint64_t attrs)
{
	if (!fake_rmpadjust)
		fake_missing("RMPADJUST");
	return fake_rmpadjust(va, size, attrs);
}
/* The host has no stack to give up: fn runs on the caller's (it never returns). */
void stack_zero_and_call(vaddr_t lo, vaddr_t hi, void (*fn)(uint64_t), uint64_t arg)
{
	(void)lo;
	(void)hi;
	fn(arg);
	abort();
}
void vmgexit(void)
{
	if (!fake_vmgexit)
		fake_missing("VMGEXIT");
	fake_vmgexit();
}
void cpu_relax(void) {}
void cpu_halt(void)
{
	fake_missing("HLT");
}
void irq_disable(void) {}
static uint64_t cr3;
uint64_t read_cr2(void)
{
	return 0;
}
uint64_t read_cr3(void)
{
	return cr3;
}
void write_cr3(uint64_t v)
{
	cr3 = v;
}
void invlpg(vaddr_t va)
{
	(void)va;
}
unsigned fake_invlpgb_count, fake_tlbsync_count;
void invlpgb_all_global(void)
{
	fake_invlpgb_count++;
}
void tlbsync(void)
{
	fake_tlbsync_count++;
}
void *read_gs0(void)
{
	return NULL;
}
void lidt(const void *desc)
{
	(void)desc;
}

/* mm/pgtable.c is image-only: the host records which pages snp code maps shared. */
uint64_t pgtable_cbit;
vaddr_t fake_shared_pages[64];
unsigned fake_shared_count;

int pgtable_set_shared(vaddr_t va, bool shared)
{
	if (shared && fake_shared_count < 64)
		fake_shared_pages[fake_shared_count++] = va;
	return 0;
}
