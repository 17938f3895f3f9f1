# shellcheck shell=bash disable=SC2154
# Shared by the QEMU benchmarks in bench/ (svsm_bench.sh, accept_guest.sh):
# stamp_run LOG STOP_REGEX qemu-args...: runs $QEMU with its serial on
# stdio (stdin closed), writes "<seconds since QEMU start> <line>" per
# serial line into LOG, and, STOP_REGEX not empty, stops QEMU (by its own
# pid file) once a line matches it. Needs $tmp (a scratch directory) and
# $TIMEOUT (seconds, a hang guard).
stamp_run() {
	local log=$1 stop=$2 t0 line pid
	shift 2
	rm -f "$tmp/qemu.pid"
	t0=$EPOCHREALTIME
	timeout --foreground -k 5 "$TIMEOUT" "$QEMU" "$@" -pidfile "$tmp/qemu.pid" -serial stdio \
		2>"$log.stderr" </dev/null |
		while IFS= read -r line; do
			line=${line//$'\r'/}
			printf '%s %s\n' "$(bc <<<"$EPOCHREALTIME - $t0")" "$line"
			if [ -n "$stop" ] && [[ $line =~ $stop ]]; then
				pid=$(cat "$tmp/qemu.pid" 2>/dev/null) && [ -n "$pid" ] && kill "$pid" 2>/dev/null
			fi
		done | sed 's/\x1b\[[0-9;=?]*[a-zA-Z]//g' >"$log"
}
