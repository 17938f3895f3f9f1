/*
 * What every boot path shares: the platform in use, what the boot learnt
 * (struct boot_info), and the dashboard line printer.
 */
#include "csvsm/boot.h"
#include "csvsm/console.h"
#include "csvsm/cpu.h"
#include "csvsm/platform.h"

const struct platform_ops *platform;
struct boot_info boot;

void boot_phase(const char *phase, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	fmt_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	uint64_t us = timer_us();
	con_printf("[%5llu.%03llu ms] %-10s %s\n", (unsigned long long)(us / 1000),
		   (unsigned long long)(us % 1000), phase, buf);
}
