# tests/: unit tests (one cmocka binary per tests/unit/test_*.c, linked with
# the host library), the host fakes, the QEMU tests and the test runner.
# Areas register their own test scripts in their build.mk (TEST_SCRIPTS += ...).
UNIT_TESTS   += $(sort $(wildcard tests/unit/test_*.c))
TEST_SCRIPTS += tests/tools/layers.sh
TEST_SCRIPTS += tests/tools/tpm-bss.sh tests/tools/run-selftest.sh
test_core_proto_LIBS += -lpthread
test_timer_LIBS += -lpthread
test_wipe_race_LIBS += -ltpms -lcrypto -lmbedcrypto -lpthread
HOST_SRCS    += tests/fake/insn_fake.c tests/fake/console_host.c tests/fake/host_sim.c tests/fake/files.c
