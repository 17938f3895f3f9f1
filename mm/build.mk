# mm/: build fragment (see the variables in the top-level Makefile).
# Pre-acceptance, memory map, the GHCB page-state change acceptance is built
# on. All of it is pure logic: CORE (image + host).
CORE_SRCS += mm/memmap.c mm/cmdline.c mm/accept_plan.c mm/accept.c mm/ghcb_psc.c

# csvsm-accept-plan: predicted acceptance counts for a console log's memmap.
TOOLS += csvsm-accept-plan
csvsm-accept-plan_SRCS := tests/tools/accept_plan.c
csvsm-accept-plan_LIBS :=

test_accept_LIBS := -lpthread
