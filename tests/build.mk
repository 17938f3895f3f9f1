# tests/: unit tests (one cmocka binary per tests/unit/test_*.c, linked with
# the host library), the host fakes, and the test runner. Areas register
# their test scripts in their own build.mk (TEST_SCRIPTS += ...).
UNIT_TESTS += $(sort $(wildcard tests/unit/test_*.c))
HOST_SRCS  += tests/fake/insn_fake.c tests/fake/console_host.c
