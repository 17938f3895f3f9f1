# mm/: build fragment (see the variables in the top-level Makefile).
# Pre-acceptance, memory map, software RMP model; plus the GHCB page-state
# change (src/ghcb_psc.c) and the sim hypervisor model (src/platform/sim_hv.c)
# that acceptance is built on. All of it is pure logic: CORE (image + host).
CORE_SRCS += mm/rmp.c mm/memmap.c mm/cmdline.c mm/accept_plan.c mm/accept.c mm/accept_check.c \
             src/ghcb_psc.c src/platform/sim_hv.c

# csvsm-accept-plan: predicted acceptance counts for a console log's memmap.
TOOLS += csvsm-accept-plan
csvsm-accept-plan_SRCS := tests/tools/accept_plan.c
csvsm-accept-plan_LIBS :=

test_accept_LIBS := -lpthread
test_rmp_LIBS := -lpthread
