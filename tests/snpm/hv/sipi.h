/* INIT-SIPI-SIPI start of secondary CPUs (src/platform/sipi.c). */
#ifndef SIPI_H
#define SIPI_H

struct percpu;

/* Start `cpu` at ap_entry64 (platform_ops.start_ap); 0. */
int sipi_start_ap(struct percpu *cpu);
/* Zero the trampoline page once every AP is up (it lies in guest memory). */
void sipi_trampoline_scrub(void);

#endif
