/*
 * Boot phase 3+: the guest. Until the guest launch lands (issue 3), csvsm
 * ends the VM with a success status once memory is accepted.
 */
#include "csvsm/boot.h"
#include "csvsm/console.h"
#include "csvsm/platform.h"

uint64_t boot_heap_bytes(void) { return 0; }

__noreturn void boot_guest(void)
{
	boot_phase("guest", "no guest to launch yet; ending the VM");
	platform->terminate(true, 0, 0);
}
