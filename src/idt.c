/*
 * IDT and the fault dump. Every exception csvsm does not expect is fatal:
 * print vector, error code, RIP and, for a #PF, CR2 (nothing more: see
 * exception_dispatch), then end the VM with a failure status. The snp #VC (29) and #HV (28) are
 * routed to their handlers.
 * NMI, #DF, #MC, #HV and #VC arrive on IST stacks (include/csvsm/exception.h).
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "csvsm/exception.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "base/secret.h"

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
	/*
	 * What the host may read (issue 34 item 5, docs/console.md): the
	 * vector, its error code (an access type, a selector, a #VC exit
	 * code), the vCPU, the faulting instruction's address and, for a #PF,
	 * the address it touched (CR2; for other vectors CR2 is stale). They
	 * say where csvsm broke, in an image the host loaded itself. Not the
	 * general registers, RFLAGS or the stack: at a fault in library code
	 * they hold its data (key schedules, bignum limbs, a guest's TPM
	 * command). Once csvsm is terminating, another vCPU is ending the VM
	 * and this one may be running on wiped memory: nothing at all.
	 */
	unsigned id = this_cpu() ? this_cpu()->id : 0;
	const char *name = exc_names[f->vector & 31];
	if (secret_terminating())
		; /* nothing */
	else if (f->vector == 14)
		con_printf("\ncsvsm: FAULT %s vector=%llu error=0x%llx on vCPU %u rip=%016llx "
			   "cr2=%016llx\n",
			   name, (unsigned long long)f->vector, (unsigned long long)f->error_code,
			   id, (unsigned long long)f->rip, (unsigned long long)read_cr2());
	else
		con_printf("\ncsvsm: FAULT %s vector=%llu error=0x%llx on vCPU %u rip=%016llx\n",
			   name, (unsigned long long)f->vector, (unsigned long long)f->error_code,
			   id, (unsigned long long)f->rip);
	if (platform)
		platform->terminate(false, 1, (unsigned)(0x80 | (f->vector & 31)));
	for (;;)
		cpu_halt();
}
