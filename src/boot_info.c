/* What the boot learned (struct boot_info, include/csvsm/boot.h). */
#include "csvsm/boot.h"

struct boot_info boot;
