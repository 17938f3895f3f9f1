/* Restricted injection at VMPL0: the #HV doorbell (src/hv_doorbell.c). */
#ifndef CSVSM_HV_DOORBELL_H
#define CSVSM_HV_DOORBELL_H

#include "base/percpu.h"

/* Boot vCPU, right after the IDT: installs the #HV handler (no page yet: #HV is dropped). */
void hv_doorbell_init(void);
/* Boot vCPU, before the APs serve: one shared doorbell page per vCPU. */
void hv_doorbell_alloc(void);
/* Each vCPU for itself: register its page with the host if it reports restricted injection. */
void hv_doorbell_register(struct percpu *cpu);
/* Print what #HV brought on this vCPU since the last report (not from the handler). */
void hv_doorbell_report(struct percpu *cpu);

#endif
