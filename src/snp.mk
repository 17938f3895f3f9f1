# src/snp.mk: the snp platform (#VC handling, platform ops, detection).
# Included from src/build.mk. All of it is CORE: the hardware access goes
# through arch/x86/insn.h, which the host build fakes.
CORE_SRCS += src/vc.c src/platform/snp.c src/platform/detect.c
