# proxy/: build/csvsm-proxy, the host's side of csvsm's vTPM channel
# (docs/vtpm.md "Persistence"): the two-slot state file (proxy/slots.c, in
# the host library for its unit test), the relay to csvsm-kbs on Debian's
# libcurl (proxy/relay.c), the daemon (proxy/csvsm-proxy.c).
HOST_SRCS += proxy/slots.c
TOOLS += csvsm-proxy
csvsm-proxy_SRCS := proxy/csvsm-proxy.c proxy/relay.c
csvsm-proxy_LIBS := -lcurl -lmbedcrypto
DEPS_PKGS += libcurl4-openssl-dev
test_proxy_slots_LIBS := -lmbedcrypto
