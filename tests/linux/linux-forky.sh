#!/usr/bin/env bash
# tests/linux/linux.sh with the second firmware choice (issue 18 item 3):
# build/csvsm-forky.igvm, csvsm with Debian's 2026.08 OVMF (forky's
# ovmf-generic, fetched by `make deps`), which drives csvsm's vTPM
# (edk2-stable202505 and later: Tpm2DeviceLibDTpmSvsm) and hands the kernel
# a TCG2 log. The same checks, plus: the firmware's log is there, the
# printed log is csvsm's then the firmware's events, and every quoted PCR
# replays. One vCPU and no plain-QEMU baseline (linux.sh measures that).
set -u
cd "$(dirname "$0")/../.."
CSVSM_FW=forky SMP=${SMP:-1} BASELINE=0 exec bash tests/linux/linux.sh
