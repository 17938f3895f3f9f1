/*
 * All of csvsm's inline assembly lives here. The image gets the real
 * instructions; the host build (CSVSM_HOST) gets declarations of the same
 * functions, implemented by the host fake in tests/fake/insn_fake.c, so the
 * logic above them runs in unit tests.
 */
#ifndef ARCH_X86_INSN_H
#define ARCH_X86_INSN_H

#include "base/types.h"

struct cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

/* PVALIDATE / RMPADJUST return codes (AMD APM vol. 3, reference §5). */
#define PVALIDATE_OK		    0
#define PVALIDATE_FAIL_INPUT	    1
#define PVALIDATE_FAIL_SIZEMISMATCH 6
#define RMPADJUST_FAIL_INPUT	    1
#define RMPADJUST_FAIL_PERMISSION   2
/* The page is a VMSA some CPU runs: hardware marks it in use from VMRUN to
 * #VMEXIT and refuses RMP changes to it (APM vol. 2 §15.36.12; AMD on LKML,
 * "KVM: SVM: Add support for AP creation" review). */
#define RMPADJUST_FAIL_INUSE	    3
#define RMPADJUST_FAIL_SIZEMISMATCH 6

#define RMP_PG_SIZE_4K 0
#define RMP_PG_SIZE_2M 1

/* RMPADJUST attributes (RDX), reference §5.2. */
#define RMPADJUST_VMPL_MASK  0xFFULL
#define RMPADJUST_READ	     (1ULL << 8)
#define RMPADJUST_WRITE	     (1ULL << 9)
#define RMPADJUST_EXEC_USER  (1ULL << 10)
#define RMPADJUST_EXEC_SUPER (1ULL << 11)
#define RMPADJUST_VMSA	     (1ULL << 16)
#define RMPADJUST_RWX                                                                              \
	(RMPADJUST_READ | RMPADJUST_WRITE | RMPADJUST_EXEC_USER | RMPADJUST_EXEC_SUPER)

#ifdef CSVSM_HOST

void cpuid_count(uint32_t leaf, uint32_t subleaf, struct cpuid_regs *r);
uint64_t rdmsr(uint32_t msr);
void wrmsr(uint32_t msr, uint64_t val);
uint64_t rdtsc(void);
bool rdrand64(uint64_t *v);
bool rdseed64(uint64_t *v);
void outb(uint16_t port, uint8_t v);
uint8_t inb(uint16_t port);
void outw(uint16_t port, uint16_t v);
uint16_t inw(uint16_t port);
void outl(uint16_t port, uint32_t v);
uint32_t inl(uint16_t port);
int pvalidate_insn(vaddr_t va, unsigned size, bool validate, bool *unchanged);
int rmpadjust_insn(vaddr_t va, unsigned size, uint64_t attrs);
void vmgexit(void);
void cpu_relax(void);
void cpu_halt(void);
void irq_disable(void);
uint64_t read_cr2(void);
uint64_t read_cr3(void);
void write_cr3(uint64_t v);
void invlpg(vaddr_t va);
void invlpgb_all_global(void);
void tlbsync(void);
void *read_gs0(void);
void lidt(const void *desc);
__noreturn void stack_zero_and_call(vaddr_t lo, vaddr_t hi, void (*fn)(uint64_t), uint64_t arg);

#else /* image */

static inline void cpuid_count(uint32_t leaf, uint32_t subleaf, struct cpuid_regs *r)
{
	__asm__ volatile("cpuid"
			 : "=a"(r->eax), "=b"(r->ebx), "=c"(r->ecx), "=d"(r->edx)
			 : "a"(leaf), "c"(subleaf));
}
static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}
static inline void wrmsr(uint32_t msr, uint64_t val)
{
	__asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)val), "d"((uint32_t)(val >> 32))
			 : "memory");
}
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
/* RDRAND/RDSEED: CF=1 when a value was delivered. Callers retry. */
static inline bool rdrand64(uint64_t *v)
{
	bool ok;
	__asm__ volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok)::"cc");
	return ok;
}
static inline bool rdseed64(uint64_t *v)
{
	bool ok;
	__asm__ volatile("rdseed %0; setc %1" : "=r"(*v), "=qm"(ok)::"cc");
	return ok;
}
static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port));
}
static inline uint8_t inb(uint16_t port)
{
	uint8_t v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
static inline void outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" ::"a"(v), "Nd"(port));
}
static inline uint16_t inw(uint16_t port)
{
	uint16_t v;
	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port));
}
static inline uint32_t inl(uint16_t port)
{
	uint32_t v;
	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
/* PVALIDATE, F2 0F 01 FF: RAX=va, RCX=size, RDX=validate; EAX=rc, CF=unchanged. */
static inline int pvalidate_insn(vaddr_t va, unsigned size, bool validate, bool *unchanged)
{
	int rc;
	bool cf;
	__asm__ volatile(".byte 0xf2,0x0f,0x01,0xff\n\tsetc %1"
			 : "=a"(rc), "=qm"(cf)
			 : "a"(va), "c"((uint64_t)size), "d"((uint64_t)validate)
			 : "memory", "cc");
	*unchanged = cf;
	return rc;
}
/* RMPADJUST, F3 0F 01 FE: RAX=va, RCX=size, RDX=attrs; EAX=rc. */
static inline int rmpadjust_insn(vaddr_t va, unsigned size, uint64_t attrs)
{
	int rc;
	__asm__ volatile(".byte 0xf3,0x0f,0x01,0xfe"
			 : "=a"(rc)
			 : "a"(va), "c"((uint64_t)size), "d"(attrs)
			 : "memory", "cc");
	return rc;
}
/* VMGEXIT = rep vmmcall, F3 0F 01 D9 (GNU as rejects the mnemonic). */
static inline void vmgexit(void)
{
	__asm__ volatile(".byte 0xf3,0x0f,0x01,0xd9" ::: "memory");
}
static inline void cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}
static inline void cpu_halt(void)
{
	__asm__ volatile("hlt" ::: "memory");
}
static inline void irq_disable(void)
{
	__asm__ volatile("cli" ::: "memory");
}
static inline uint64_t read_cr2(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}
/* XSAVE of every component XCR0 enables (the area 64-byte aligned). */
static inline void xsave_all(void *area)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	__asm__ volatile("xsave64 (%0)" ::"r"(area), "a"(lo), "d"(hi) : "memory");
}
/* x87 and SSE control state at their reset values (FNINIT, MXCSR 0x1F80). */
static inline void fpu_reset(void)
{
	const uint32_t mxcsr = 0x1F80;
	__asm__ volatile("fninit\n\tldmxcsr %0" ::"m"(mxcsr));
}

static inline uint16_t read_cs(void)
{
	uint16_t cs;
	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	return cs;
}

static inline uint64_t read_cr0(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr0, %0" : "=r"(v));
	return v;
}
static inline uint64_t read_cr4(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}
static inline uint64_t xgetbv0(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}
struct desc_ptr {
	uint16_t limit;
	uint64_t base;
} __packed;
static inline void sgdt(struct desc_ptr *d)
{
	__asm__ volatile("sgdt %0" : "=m"(*d));
}
static inline void sidt(struct desc_ptr *d)
{
	__asm__ volatile("sidt %0" : "=m"(*d));
}

static inline uint64_t read_cr3(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}
static inline void write_cr3(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr3" ::"r"(v) : "memory");
}
static inline void invlpg(vaddr_t va)
{
	__asm__ volatile("invlpg (%0)" ::"r"(va) : "memory");
}
/*
 * INVLPGB, 0F 01 FE: broadcast TLB invalidation. RAX = flags: ASID valid
 * (bit 2) and include global (bit 3) with no address: every translation of
 * this guest on every CPU (AMD APM vol. 3 INVLPGB; coconut-svsm
 * kernel/src/cpu/tlb.rs flush_tlb_global). TLBSYNC, 0F 01 FF, waits until
 * this CPU's broadcasts have completed everywhere.
 */
static inline void invlpgb_all_global(void)
{
	__asm__ volatile(".byte 0x0f,0x01,0xfe" ::"a"(0xCULL), "c"(0ULL), "d"(0ULL) : "memory");
}
static inline void tlbsync(void)
{
	__asm__ volatile(".byte 0x0f,0x01,0xff" ::: "memory");
}
/* STGI / CLGI (SVM global interrupt flag): the SNP machine's, to take a pending NMI. */
static inline void stgi(void)
{
	__asm__ volatile("stgi" ::: "memory");
}
static inline void clgi(void)
{
	__asm__ volatile("clgi" ::: "memory");
}
/* Per-CPU data: %gs:0 holds the struct percpu's own address. */
static inline void *read_gs0(void)
{
	void *p;
	__asm__ volatile("mov %%gs:0, %0" : "=r"(p));
	return p;
}
static inline void lidt(const void *desc)
{
	__asm__ volatile("lidt (%0)" ::"r"(desc) : "memory");
}
static inline void lgdt(const void *desc)
{
	__asm__ volatile("lgdt (%0)" ::"r"(desc) : "memory");
}
/* LTR marks the TSS descriptor busy: once per descriptor (APM vol. 3, LTR). */
static inline void ltr(uint16_t sel)
{
	__asm__ volatile("ltr %0" ::"r"(sel) : "memory");
}
/*
 * REP string moves for the glibc-ABI layer's memcpy/memmove/memset
 * (base/libc/string.c; image only). Each advances the pointers it is given.
 */
static inline void rep_movsq(void **d, const void **s, size_t n)
{
	__asm__ volatile("rep movsq" : "+D"(*d), "+S"(*s), "+c"(n)::"memory");
}
static inline void rep_movsb(void **d, const void **s, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(*d), "+S"(*s), "+c"(n)::"memory");
}
/* Backwards (DF=1) copies for overlapping memmove; DF is cleared again. */
static inline void rep_movsq_back(void *d, const void *s, size_t n)
{
	__asm__ volatile("std; rep movsq; cld" : "+D"(d), "+S"(s), "+c"(n)::"memory", "cc");
}
static inline void rep_movsb_back(void *d, const void *s, size_t n)
{
	__asm__ volatile("std; rep movsb; cld" : "+D"(d), "+S"(s), "+c"(n)::"memory", "cc");
}
static inline void rep_stosq(void **d, uint64_t v, size_t n)
{
	__asm__ volatile("rep stosq" : "+D"(*d), "+c"(n) : "a"(v) : "memory");
}
static inline void rep_stosb(void **d, uint8_t v, size_t n)
{
	__asm__ volatile("rep stosb" : "+D"(*d), "+c"(n) : "a"(v) : "memory");
}
/*
 * The end of a terminating vCPU (base/secret.c secret_end_on_clean_stack):
 * RSP moves to hi, so that no frame below it is live any more, the stack
 * [lo, hi) is zeroed (REP STOSB needs no stack; an exception taken meanwhile
 * pushes its frame below hi and is done with it before the zeroing goes on),
 * the general registers and, once SSE is on (CR4.OSFXSR), XMM0-15 are
 * cleared of whatever the abandoned frames left in them, and fn(arg) runs
 * on a fresh frame at hi. fn never returns. hi must be 16-byte aligned.
 */
static inline __noreturn void stack_zero_and_call(vaddr_t lo, vaddr_t hi, void (*fn)(uint64_t),
						  uint64_t arg)
{
	__asm__ volatile("mov %[top], %%rsp\n\t"
			 "cld\n\t"
			 "rep stosb\n\t"
			 "mov %[arg], %%rdi\n\t"
			 "mov %[fn], %%r11\n\t"
			 "mov %%cr4, %%rax\n\t"
			 "bt $9, %%rax\n\t"
			 "jnc 1f\n\t"
			 "pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\t"
			 "pxor %%xmm2, %%xmm2\n\tpxor %%xmm3, %%xmm3\n\t"
			 "pxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
			 "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\t"
			 "pxor %%xmm8, %%xmm8\n\tpxor %%xmm9, %%xmm9\n\t"
			 "pxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
			 "pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\t"
			 "pxor %%xmm14, %%xmm14\n\tpxor %%xmm15, %%xmm15\n"
			 "1:\n\t"
			 "xor %%eax, %%eax\n\txor %%ebx, %%ebx\n\txor %%ecx, %%ecx\n\t"
			 "xor %%edx, %%edx\n\txor %%esi, %%esi\n\txor %%ebp, %%ebp\n\t"
			 "xor %%r8d, %%r8d\n\txor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\t"
			 "xor %%r12d, %%r12d\n\txor %%r13d, %%r13d\n\t"
			 "xor %%r14d, %%r14d\n\txor %%r15d, %%r15d\n\t"
			 "call *%%r11\n\t"
			 "ud2"
			 :
			 : [top] "r"(hi), "D"(lo), "c"(hi - lo),
			   "a"(0), [arg] "r"(arg), [fn] "r"(fn)
			 : "memory");
	__builtin_unreachable();
}

#endif /* CSVSM_HOST */

static inline void cpuid(uint32_t leaf, struct cpuid_regs *r)
{
	cpuid_count(leaf, 0, r);
}

#endif
