# src/: boot, CPU set-up, console, exceptions, SMP, platforms, request loop.
IMAGE_SRCS += src/boot.S src/pvh_entry.S src/snp_entry.S src/exception.S src/idt.c src/console.c src/cpu.c \
              src/smp.c src/boot_info.c src/main.c src/snp_boot.c src/accept_boot.c src/guest.c src/guest_snp.c src/platform/sim.c \
              src/platform/sim_svm.c src/platform/sim_guest.c src/platform/sipi.c src/platform/sim_io.c src/platform/svm_entry.S \
              src/platform/sim_psp_boot.c src/platform/sim_snp.c \
              mm/pool.c mm/pgtable.c
CORE_SRCS  += src/fmt.c src/platform/insn_decode.c src/platform/devpolicy.c src/requests.c \
              src/core_proto.c src/vcpu.c src/secret.c src/platform/snp_cpuid.c mm/guest_mem.c \
              mm/guest_walk.c
include src/snp.mk
# The sim platform (csvsm as the SVM host of its own guest, its PVH boot and
# the models it carries) is only in build/csvsm.elf, the old test image; the
# launch image for hardware (build/csvsm-snp.elf -> build/csvsm.igvm) is the
# rest: one platform, snp.
SIM_ONLY_SRCS := src/pvh_entry.S src/main.c src/platform/sim.c src/platform/sim_svm.c \
                 src/platform/sim_guest.c src/platform/sipi.c src/platform/sim_io.c \
                 src/platform/svm_entry.S src/platform/sim_psp_boot.c src/platform/sim_snp.c \
                 src/platform/detect.c src/platform/devpolicy.c src/platform/sim_hv.c \
                 mm/rmp.c mm/accept_check.c attest/sim_psp.c
$(IMGOBJ)/src/platform/sim_psp_boot.o: \
	IMAGE_CFLAGS += -idirafter /usr/include -idirafter /usr/include/x86_64-linux-gnu
