# The verifier's side of the Linux guest's credential activation (issue 18
# item 4), sourced by tests/linux/linux.sh and tests/qemu/run.sh (`make run
# GUEST=linux`), so that both answer /init's tpm-activate check the same way.
#
# The guest prints its SNP evidence (linux-guest: tsm nonce/outblob/
# manifestblob/auxblob), then its AK's TPM2B_PUBLIC ("tpm ak-public") and
# "linux-guest: tpm credential-request", and waits on ttyS1 (csvsm_chan=
# ttyS1): the machine's COM2, here QEMU's pipe chardev DIR/chan.{in,out}.
# cred_challenge checks the SNP report (test chain, VMPL 0, the
# measurement, REPORT_DATA = SHA-512(nonce || manifest)), takes the EK from
# the manifest REPORT_DATA binds (csvsm-verify --manifest-ek, written only
# if every check passed), makes a credential for the AK's Name under that
# EK (csvsm-cred make) and sends it as one line "credential <hex>"; a
# refused report, or missing evidence, is answered "refused", so that the
# guest does not wait.
#
# Use:
#   . tests/linux/cred-channel.sh
#   cred_channel_open DIR           # the FIFOs, held open on fds 7 and 8
#   qemu ... $(cred_channel_qemu_args DIR) ... (and csvsm_chan=ttyS1 on
#                                   the kernel command line)
#   on the console line "linux-guest: tpm credential-request":
#     cred_challenge LOG DIR MEASUREMENT
#   cred_channel_close
# It leaves in DIR: challenge.json (csvsm-verify's checks), mek-cred.bin
# (the manifest's EK), akpub.bin, cred.state and cred.bin (csvsm-cred
# make), cred-make.out, and c*.bin (the evidence it used).
# CHAIN, VERIFY and CRED name the test chain and the host tools (defaults:
# build/test-chain, build/csvsm-verify, build/csvsm-cred).

cred_evidence() { # cred_evidence LOG NAME FILE: the hex of "linux-guest: NAME <hex>" in LOG, as bytes
	sed -n "s/^linux-guest: $2 \([0-9a-f]*\)$/\1/p" "$1" | head -n1 | xxd -r -p >"$3"
	test -s "$3"
}

cred_channel_open() { # cred_channel_open DIR
	mkfifo "$1/chan.in" "$1/chan.out" || return 1
	# Held open read-write: neither this side nor QEMU blocks on open, and
	# what the guest sends (nothing, today) never blocks it.
	exec 7<>"$1/chan.in" 8<>"$1/chan.out"
}

cred_channel_close() { exec 7>&- 8>&-; }

cred_channel_qemu_args() { # cred_channel_qemu_args DIR: the guest's second serial port (ttyS1), on the FIFOs
	echo "-chardev pipe,id=chan,path=$1/chan -serial chardev:chan"
}

cred_challenge() { # cred_challenge LOG DIR MEASUREMENT: verify, then answer on fd 7; 0 if a credential was sent
	local log=$1 dir=$2 meas=$3 ok=1 e
	local chain=${CHAIN:-build/test-chain} verify=${VERIFY:-build/csvsm-verify} cred=${CRED:-build/csvsm-cred}
	rm -f "$dir/challenge.json" "$dir/mek-cred.bin" "$dir/cred.bin" "$dir/cred.state" "$dir/cred-make.out"
	for e in "tsm nonce:cnonce" "tsm outblob:creport" "tsm manifestblob:cmanifest" "tsm auxblob:ccerts" "tpm ak-public:akpub"; do
		cred_evidence "$log" "${e%%:*}" "$dir/${e##*:}.bin" || ok=0
	done
	if [ "$ok" = 1 ] && [ -n "$meas" ] &&
		"$verify" --cert-table "$dir/ccerts.bin" --trust-ark "$chain/ark.pem" --measurement "$meas" --json \
			--report "$dir/creport.bin" --vmpl 0 --nonce "$(xxd -p -c 256 "$dir/cnonce.bin")" \
			--manifest "$dir/cmanifest.bin" --manifest-ek "$dir/mek-cred.bin" >"$dir/challenge.json" 2>&1 &&
		"$cred" make --ek "$dir/mek-cred.bin" --ak "$dir/akpub.bin" --state "$dir/cred.state" \
			--out "$dir/cred.bin" >"$dir/cred-make.out" 2>&1; then
		printf 'credential %s\n' "$(xxd -p -c 4096 "$dir/cred.bin")" >&7
		return 0
	fi
	printf 'refused\n' >&7
	return 1
}

cred_check() { # cred_check LOG DIR: csvsm-cred check of the secret the guest printed ("tpm activated-secret")
	cred_evidence "$1" "tpm activated-secret" "$2/act.bin" &&
		"${CRED:-build/csvsm-cred}" check --state "$2/cred.state" --ak "$2/akpub.bin" --secret "$2/act.bin"
}
