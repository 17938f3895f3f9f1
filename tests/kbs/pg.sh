# A throw-away PostgreSQL cluster of Debian's `postgresql` package, sourced
# by tests/kbs/kbs.sh: initdb and pg_ctl in a temporary directory, a unix
# socket in that directory and no TCP listener, trust authentication for
# the cluster's own user. initdb refuses to run as root, so as root (CI) the
# cluster runs as the `postgres` system user the package creates.
#   pg_start    sets PGURL (postgresql:///postgres?host=DIR&user=...) or returns 1
#   pg_stop     stops the cluster (immediate) and removes the directory;
#               callers run it on every exit path (trap)
PG_DIR=
pg_start() {
	local bin
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
	[ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ] || { echo "# no initdb/pg_ctl (Debian's postgresql package)"; return 1; }
	PG_BIN=$bin
	PG_DIR=$(mktemp -d /tmp/csvsm-pg.XXXXXX) || return 1
	PG_USER=$(id -un)
	PG_AS=()
	if [ "$(id -u)" = 0 ]; then
		id postgres >/dev/null 2>&1 || { echo "# no postgres user"; return 1; }
		chown postgres: "$PG_DIR"
		PG_USER=postgres
		PG_AS=(runuser -u postgres --)
	fi
	# from /: the postgres user may not enter the checkout (a CI clone under /root)
	(cd / && "${PG_AS[@]}" "$bin/initdb" -D "$PG_DIR/data" --auth=trust --username="$PG_USER" -E UTF8 \
		--no-sync) >"$PG_DIR/initdb.log" 2>&1 || { sed 's/^/# initdb: /' "$PG_DIR/initdb.log" | tail -5; return 1; }
	(cd / && "${PG_AS[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
		-o "-k $PG_DIR -c listen_addresses= -c fsync=off -c max_connections=200" start) \
		>"$PG_DIR/pg_ctl.log" 2>&1 || { sed 's/^/# pg_ctl: /' "$PG_DIR/pg_ctl.log" "$PG_DIR/server.log" | tail -8; return 1; }
	PGURL="postgresql:///postgres?host=$PG_DIR&user=$PG_USER"
}
pg_stop() {
	[ -n "$PG_DIR" ] || return 0
	[ -d "$PG_DIR/data" ] && (cd / && "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 stop) >/dev/null 2>&1
	rm -rf "$PG_DIR"
	PG_DIR=
}
