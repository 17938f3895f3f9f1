# src/: the top layer: the SNP entry and boot sequence, CPU set-up, exceptions,
# SMP, the snp platform, the request loop and the protocols' core.
IMAGE_SRCS += src/boot.S src/snp_entry.S src/exception.S src/idt.c src/cpu.c \
              src/smp.c src/boot_info.c src/snp_boot.c src/accept_boot.c src/guest.c src/guest_snp.c src/hv_doorbell.c \
              mm/pool.c mm/pgtable.c
CORE_SRCS  += src/requests.c src/core_proto.c src/vcpu.c mm/guest_mem.c mm/guest_walk.c
include src/snp.mk
