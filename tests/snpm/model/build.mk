# tests/snpm/model/: the SNP machine's models of what is outside csvsm (see
# docs/snp-machine.md "The models"): the RMP, the PSP, the KVM host's side of
# the GHCB, the CPUID page the host and the PSP give a guest, the device
# policy, the RMP audit of an acceptance and the prediction of its counts,
# and the PVH entry the machine boots through. Never in csvsm's image
# (build/csvsm.elf, build/csvsm.igvm): no IMAGE_SRCS or CORE_SRCS lists them, and
# tests/tools/layers.sh checks. The C files are in the host library for the
# unit tests, benchmarks, fuzzers and host tools; build/snpm.elf links their
# image objects (tests/snpm/snpm.mk lists the ones it needs). Included by the
# top-level Makefile after tests/build.mk.
MODEL_SRCS := tests/snpm/model/rmp.c tests/snpm/model/psp.c tests/snpm/model/ghcb_host.c \
              tests/snpm/model/cpuid_page.c tests/snpm/model/devpolicy.c \
              tests/snpm/model/accept_check.c tests/snpm/model/accept_predict.c \
              tests/snpm/model/pvh_entry.S
HOST_SRCS  += $(filter %.c,$(MODEL_SRCS))

test_rmp_LIBS := -lpthread
test_psp_LIBS := -lmbedx509 -lmbedcrypto
# ghcb_host.c calls the PSP model (exits 0x80000011/12), so whatever links
# ghcb_host.o also needs mbedTLS. (bench/build.mk and tests/fuzz/fuzz.mk set
# their own; see docs/attestation.md "Wiring".)
test_accept_LIBS     += -lmbedcrypto
test_core_proto_LIBS += -lmbedcrypto
