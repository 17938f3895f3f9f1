/*
 * Serial console on COM1 (0x3F8) and panic(). On snp the port accesses trap
 * to the #VC handler, which forwards them through the GHCB; in the SNP
 * machine and the libc smoke test they reach QEMU's UART directly. A spinlock keeps lines from
 * different vCPUs whole.
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "base/cpu.h"
#include "base/platform.h"
#include "base/percpu.h"
#include "base/string.h"

#define COM1 0x3F8

static volatile uint32_t con_lock;
static bool con_ready;
/*
 * On snp the first lines come before the boot vCPU's GHCB exists, and port
 * I/O needs it (#VC -> GHCB IOIO): they are kept here until con_release.
 */
static bool con_held;
static char con_early[8192];
static size_t con_early_len;

void con_hold(void)
{
	con_held = true;
}

static void lock(void)
{
	while (__atomic_exchange_n(&con_lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
}
static void unlock(void)
{
	__atomic_store_n(&con_lock, 0, __ATOMIC_RELEASE);
}

void con_init(void)
{
	outb(COM1 + 1, 0x00); /* no interrupts */
	outb(COM1 + 3, 0x80); /* DLAB */
	outb(COM1 + 0, 0x01); /* 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03); /* 8N1 */
	outb(COM1 + 2, 0xC7); /* FIFO */
	outb(COM1 + 4, 0x03);
	con_ready = true;
}

static void putc_raw(char c)
{
	for (int i = 0; i < 100000 && !(inb(COM1 + 5) & 0x20); i++)
		cpu_relax();
	outb(COM1, (uint8_t)c);
}

void con_write(const char *s, size_t n)
{
	if (con_held) {
		size_t room = sizeof(con_early) - con_early_len;
		memcpy(con_early + con_early_len, s, MIN(n, room));
		con_early_len += MIN(n, room);
		return;
	}
	if (!con_ready)
		con_init();
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			putc_raw('\r');
		putc_raw(s[i]);
	}
}

void con_release(void)
{
	lock();
	con_held = false;
	con_write(con_early, con_early_len);
	con_early_len = 0;
	unlock();
}

int con_vprintf(const char *fmt, va_list ap)
{
	char buf[512];
	int n = fmt_vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t len = (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	lock();
	con_write(buf, len);
	unlock();
	return n;
}

int con_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = con_vprintf(fmt, ap);
	va_end(ap);
	return n;
}

__noreturn void panic(const char *fmt, ...)
{
	va_list ap;
	irq_disable();
	con_printf("\ncsvsm: PANIC on vCPU %u: ", this_cpu() ? this_cpu()->id : 0);
	va_start(ap, fmt);
	con_vprintf(fmt, ap);
	va_end(ap);
	con_printf("\n");
	if (platform)
		platform->terminate(false, 1, 0xFF);
	for (;;)
		cpu_halt();
}

/* Bytes a guest wrote to its COM1, passed through whole (no CR insertion)
 * and in one piece: no other line lands inside them. */
void con_guest_write(const char *s, size_t n)
{
	lock();
	for (size_t i = 0; i < n; i++)
		putc_raw(s[i]);
	unlock();
}

void boot_vphase(const char *who, const char *phase, const char *fmt, va_list ap)
{
	char buf[256];
	fmt_vsnprintf(buf, sizeof(buf), fmt, ap);
	uint64_t us = timer_us();
	con_printf("[%5llu.%03llu ms] %s%-*s %s\n", (unsigned long long)(us / 1000),
		   (unsigned long long)(us % 1000), who, (int)(who[0] ? 8 : 10), phase, buf);
}

/* A dashboard line: "[   t.ttt ms] phase      text" (time since boot). */
void boot_phase(const char *phase, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	boot_vphase("", phase, fmt, ap);
	va_end(ap);
}
