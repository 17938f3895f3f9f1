# tests/snpm/model/: the SNP machine's models of what is outside csvsm (see
# docs/snp-machine.md "The models"). Never in csvsm's image (build/csvsm.elf,
# build/csvsm.igvm; tests/tools/layers.sh checks): built into the host
# library for the unit tests, benchmarks and host tools, and as image objects
# into build/snpm.elf (tests/snpm/snpm.mk lists them). Included by the
# top-level Makefile after tests/build.mk.
MODEL_SRCS += tests/snpm/model/rmp.c tests/snpm/model/psp.c tests/snpm/model/ghcb_host.c \
              tests/snpm/model/devpolicy.c tests/snpm/model/pvh_entry.S
HOST_SRCS  += tests/snpm/model/rmp.c tests/snpm/model/psp.c tests/snpm/model/ghcb_host.c \
              tests/snpm/model/devpolicy.c

test_rmp_LIBS := -lpthread
test_psp_LIBS := -lmbedx509 -lmbedcrypto
# ghcb_host.c calls the PSP model (exits 0x80000011/12), so whatever links
# ghcb_host.o also needs mbedTLS. (bench/build.mk and tests/fuzz/fuzz.mk set
# their own; see docs/attestation.md "Wiring".)
test_accept_LIBS     += -lmbedcrypto
test_core_proto_LIBS += -lmbedcrypto
