# Sourced: private_apt DIR makes a private apt tree in DIR (etc/, state/,
# cache/) and writes DIR/apt.conf; the caller writes DIR/etc/sources.list and
# runs apt with APT_CONFIG=DIR/apt.conf. Newer suites' packages are
# downloaded and unpacked this way, never installed on the system.
# Dir::Etc/State/Cache point at the tree; an empty dpkg status means apt
# resolves against nothing installed; empty apt.conf.d and preferences.d keep
# apt from warning about missing directories; the Packages indexes stay
# compressed and only the binary cache apt needs is kept. Sandbox user:
# whoever runs this (the tree may not be writable by _apt). A proxy the
# system's apt is configured with applies here too (the private configuration
# reads none of the system's apt.conf.d).
private_apt() {
	local A=$1
	mkdir -p "$A/etc/apt.conf.d" "$A/etc/preferences.d" "$A/etc/sources.list.d" \
		"$A/state/lists/partial" "$A/cache/archives/partial" || return 1
	[ -e "$A/state/status" ] || : >"$A/state/status"
	cat >"$A/apt.conf" <<EOF
Dir::Etc "$A/etc/";
Dir::Etc::sourcelist "$A/etc/sources.list";
Dir::Etc::sourceparts "$A/etc/sources.list.d/";
Dir::Etc::parts "$A/etc/apt.conf.d/";
Dir::Etc::preferencesparts "$A/etc/preferences.d/";
Dir::State "$A/state/";
Dir::State::status "$A/state/status";
Dir::Cache "$A/cache/";
Dir::Cache::srcpkgcache "";
Acquire::GzipIndexes "true";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
Acquire::Languages "none";
Acquire::Retries "1";
Acquire::http::Timeout "20";
APT::Sandbox::User "$(id -un)";
EOF
	env -u APT_CONFIG apt-config dump 2>/dev/null | grep -E '^Acquire::(http|https)::Proxy' >>"$A/apt.conf" || true
}
