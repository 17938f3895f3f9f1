/*
 * The platform in use (include/base/platform.h): set once at boot by the
 * top layer (src/snp_boot.c; the SNP machine and the host programs set
 * their own); every layer calls through it, none tests which one it is.
 */
#include "base/platform.h"

const struct platform_ops *platform;
