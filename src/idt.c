/*
 * IDT and the fault dump. Every exception csvsm does not expect is fatal:
 * print vector, error code, RIP, CR2 and all registers, then end the VM with
 * a failure status. The snp #VC (29) and #HV (28) are routed to their handlers.
 * NMI, #DF, #MC, #HV and #VC arrive on IST stacks (include/csvsm/exception.h).
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "csvsm/exception.h"
#include "base/percpu.h"
#include "base/platform.h"

struct idt_entry {
	uint16_t off_lo, sel;
	uint8_t ist, type;
	uint16_t off_mid;
	uint32_t off_hi, rsvd;
} __packed;
_Static_assert(sizeof(struct idt_entry) == 16, "AMD APM vol. 2 §4.8.4: 16-byte gate");

extern const uint64_t exc_stub_table[32];
static struct idt_entry idt[32] __aligned(16);

/* The IST slot of each vector that has one (0: the current stack). */
static uint8_t ist_of(unsigned vector)
{
	switch (vector) {
	case 2:
		return EXC_IST_NMI;
	case 8:
		return EXC_IST_DF;
	case 18:
		return EXC_IST_MC;
	case 28:
		return EXC_IST_HV;
	case 29:
		return EXC_IST_VC;
	default:
		return 0;
	}
}

/* Optional #VC handler, set by the snp platform. Returns true if handled. */
bool (*exception_vc_handler)(struct exc_frame *f);
void (*exception_hv_handler)(struct exc_frame *f);

void idt_init(void)
{
	for (int i = 0; i < 32; i++) {
		uint64_t a = exc_stub_table[i];
		idt[i] = (struct idt_entry){.off_lo = (uint16_t)a,
					    .sel = 0x08,
					    .ist = ist_of((unsigned)i),
					    .type = 0x8E,
					    .off_mid = (uint16_t)(a >> 16),
					    .off_hi = (uint32_t)(a >> 32)};
	}
}

void idt_load(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __packed d = {sizeof(idt) - 1, (uint64_t)idt};
	lidt(&d);
}

static const char *const exc_names[32] = {
    "#DE",  "#DB",  "NMI",  "#BP",  "#OF",  "#BR",  "#UD", "#NM", "#DF", "CSO", "#TS",
    "#NP",  "#SS",  "#GP",  "#PF",  "rsvd", "#MF",  "#AC", "#MC", "#XM", "#VE", "#CP",
    "rsvd", "rsvd", "rsvd", "rsvd", "rsvd", "rsvd", "#HV", "#VC", "#SX", "rsvd"};

void exception_dispatch(struct exc_frame *f)
{
	/* A same-vector event overwrote this one's frame on the IST stack
	 * (src/exception.S): nothing to return to. No console: the event may
	 * have interrupted csvsm inside it. */
	if (f->vector & EXC_NESTED_IST) {
		if (platform)
			platform->terminate(false, 1,
					    EXC_TERM_NESTED_IST | (unsigned)(f->vector & 31));
		for (;;)
			cpu_halt();
	}
	if (f->vector == 29 && exception_vc_handler && exception_vc_handler(f))
		return;
	if (f->vector == 28 && exception_hv_handler) {
		exception_hv_handler(f);
		return;
	}
	/* NMIs carry nothing for csvsm to handle (the SNP machine, which links
	 * this IDT too, kicks its own CPUs with them). */
	if (f->vector == 2)
		return;
	con_printf("\ncsvsm: FAULT %s vector=%llu error=0x%llx on vCPU %u\n",
		   exc_names[f->vector & 31], (unsigned long long)f->vector,
		   (unsigned long long)f->error_code, this_cpu() ? this_cpu()->id : 0);
	con_printf("  rip=%016llx cs=%llx rflags=%016llx rsp=%016llx ss=%llx cr2=%016llx\n",
		   (unsigned long long)f->rip, (unsigned long long)f->cs,
		   (unsigned long long)f->rflags, (unsigned long long)f->rsp,
		   (unsigned long long)f->ss, (unsigned long long)read_cr2());
	con_printf("  rax=%016llx rbx=%016llx rcx=%016llx rdx=%016llx\n",
		   (unsigned long long)f->rax, (unsigned long long)f->rbx,
		   (unsigned long long)f->rcx, (unsigned long long)f->rdx);
	con_printf("  rsi=%016llx rdi=%016llx rbp=%016llx r8 =%016llx\n",
		   (unsigned long long)f->rsi, (unsigned long long)f->rdi,
		   (unsigned long long)f->rbp, (unsigned long long)f->r8);
	con_printf("  r9 =%016llx r10=%016llx r11=%016llx r12=%016llx\n", (unsigned long long)f->r9,
		   (unsigned long long)f->r10, (unsigned long long)f->r11,
		   (unsigned long long)f->r12);
	con_printf("  r13=%016llx r14=%016llx r15=%016llx cr3=%016llx\n",
		   (unsigned long long)f->r13, (unsigned long long)f->r14,
		   (unsigned long long)f->r15, (unsigned long long)read_cr3());
	if (platform)
		platform->terminate(false, 1, (unsigned)(0x80 | (f->vector & 31)));
	for (;;)
		cpu_halt();
}
