#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/ceph/cluster.sh - a single-node Ceph cluster for the tests: one
# monitor and one OSD (bluestore on a sparse file), every daemon bound to
# 127.0.0.1, no authentication, one pool of size 1.  Everything lives in
# DIR; nothing is installed or changed outside it.
#
#   cluster.sh start DIR [POOL]   make and start it; prints nothing, exits
#                                 0 once POOL (default objfs) takes a write
#   cluster.sh stop DIR           stop its daemons by the pids they wrote
#   cluster.sh osd-stop DIR       stop the OSD alone (a cluster out of reach)
#   cluster.sh osd-start DIR      start it again
#   cluster.sh pool DIR POOL      one more pool, once it takes a write
#   cluster.sh rgw-start DIR      Ceph's S3 gateway (radosgw) on the cluster,
#                                 bound to 127.0.0.1, with one user; exits 0
#                                 once it answers.  DIR/rgw.env then holds
#                                 AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID and
#                                 AWS_SECRET_ACCESS_KEY (sh syntax)
#   cluster.sh rgw-stop DIR       stop the gateway alone (an outage)
#   cluster.sh report DIR         what a failed test needs to know of the
#                                 cluster: each daemon running, stopped
#                                 (SIGSTOP) or gone, the cluster's status,
#                                 and the end of each daemon's log
#
# DIR/ceph.conf is the client's configuration (rados -c, -o remote_conf=).
# CLUSTER_OSD_GIB sets the OSD's sparse block file (default 10 GiB).
# Needs ceph-mon, ceph-osd and ceph-common (Debian's, 16.2).  A start that
# fails stops what it started and prints the daemons' last log lines.
set -u
cmd=${1:-}
D=${2:-}
POOL=${3:-objfs}
[ -n "$cmd" ] && [ -n "$D" ] || { echo "usage: cluster.sh start|stop|osd-stop|osd-start DIR [POOL]" >&2; exit 2; }

conf=$D/ceph.conf

C="timeout 20 ceph -c $conf --connect-timeout 10"

pid_of() { cat "$D/run/$1.pid" 2>/dev/null; }

stop_one() {	# stop_one NAME: SIGTERM, then SIGKILL after 10 s
	local p
	p=$(pid_of "$1") || return 0
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null || { rm -f "$D/run/$1.pid"; return 0; }
	for _ in $(seq 100); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$p" 2>/dev/null
	for _ in $(seq 50); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$D/run/$1.pid"
}

free_port() {	# a TCP port free on 127.0.0.1 now
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

fail() {
	echo "cluster.sh: $*" >&2
	for l in "$D"/log/*.log; do
		[ -f "$l" ] && { echo "---- $l" >&2; tail -n 20 "$l" >&2; }
	done
	stop_one client.rgw.a
	stop_one osd.0
	stop_one mon.a
	exit 1
}

start_osd() {
	ceph-osd -c "$conf" -i 0 >"$D/log/osd.0.out" 2>&1 || return 1
	for _ in $(seq 300); do
		[ -s "$D/run/osd.0.pid" ] && return 0
		sleep 0.1
	done
	return 1
}

make_pool() {	# make_pool NAME: a pool of size 1; 0 once it takes a write
	local i
	$C osd pool create "$1" 8 8 >/dev/null 2>&1 || return 1
	$C osd pool set "$1" size 1 --yes-i-really-mean-it >/dev/null 2>&1 || true
	$C osd pool application enable "$1" objfs >/dev/null 2>&1 || true
	# Up once a write is taken (the PGs peered, the OSD up and in).
	echo ready >"$D/probe"
	for i in $(seq 120); do
		timeout 5 rados -c "$conf" -p "$1" put cluster-probe "$D/probe" >/dev/null 2>&1 && break
		[ "$i" = 120 ] && return 1
		sleep 0.5
	done
	timeout 5 rados -c "$conf" -p "$1" rm cluster-probe >/dev/null 2>&1
	return 0
}

# The gateway: on an `auth none` cluster it must ask the monitor for a
# crc connection (else it asks for a secure one, is refused, and never
# listens).  Its port and user stay in DIR (rgw.port, rgw.env), so that a
# start after rgw-stop serves the same endpoint.
start_rgw() {
	local port i
	command -v radosgw >/dev/null || { echo "cluster.sh: radosgw is not installed" >&2; return 1; }
	if [ -s "$D/rgw.port" ]; then
		port=$(cat "$D/rgw.port")
	else
		port=$(free_port)
		echo "$port" >"$D/rgw.port"
	fi
	mkdir -p "$D/rgw.a"
	radosgw -c "$conf" -n client.rgw.a --ms-mon-client-mode=crc \
		--rgw-frontends="beast endpoint=127.0.0.1:$port" \
		--rgw-data="$D/rgw.a" >"$D/log/rgw.out" 2>&1 || return 1
	for i in $(seq 600); do
		python3 - "$port" <<'PY' && break
import sys, urllib.request
try:
    urllib.request.urlopen('http://127.0.0.1:%s/' % sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass
except Exception:
    sys.exit(1)
PY
		[ "$i" = 600 ] && return 1
		sleep 0.1
	done
	if [ ! -s "$D/rgw.env" ]; then
		radosgw-admin -c "$conf" --ms-mon-client-mode=crc user create \
			--uid=objfs --display-name=objfs --access-key=objfs-test-key \
			--secret-key=objfs-test-secret >/dev/null 2>&1 || return 1
		cat >"$D/rgw.env" <<EOE
AWS_ENDPOINT_URL=http://127.0.0.1:$port
AWS_ACCESS_KEY_ID=objfs-test-key
AWS_SECRET_ACCESS_KEY=objfs-test-secret
AWS_REGION=us-east-1
EOE
	fi
	return 0
}

report() {	# the cluster's state, for a test that failed
	local n p st
	for n in mon.a osd.0 client.rgw.a; do
		p=$(pid_of "$n") || { [ "$n" = client.rgw.a ] || echo "$n: no pid file"; continue; }
		if [ -r "/proc/$p/stat" ]; then
			st=$(sed 's/^.*) \(.\).*/\1/' "/proc/$p/stat")
			echo "$n: pid $p, state $st$([ "$st" = T ] && echo ' (stopped)')"
		else
			echo "$n: pid $p is gone"
		fi
	done
	timeout 15 ceph -c "$conf" --connect-timeout 5 -s 2>&1 | head -n 30
	for l in "$D"/log/*.log "$D"/log/*.out; do
		[ -s "$l" ] || continue
		echo "---- $l (last 25 lines)"
		tail -n 25 "$l"
	done
}

case $cmd in
report)
	report
	exit 0
	;;
stop)
	stop_one client.rgw.a
	stop_one osd.0
	stop_one mon.a
	exit 0
	;;
rgw-start)
	start_rgw || fail "the S3 gateway did not start (log/rgw.out, log/client.rgw.a.log)"
	exit 0
	;;
rgw-stop)
	stop_one client.rgw.a
	exit 0
	;;
osd-stop)
	stop_one osd.0
	exit 0
	;;
osd-start)
	start_osd || fail "the OSD did not start again"
	exit 0
	;;
pool)
	make_pool "$POOL" || { echo "cluster.sh: pool $POOL takes no write after 60 s" >&2; exit 1; }
	exit 0
	;;
start) ;;
*) echo "cluster.sh: unknown command $cmd" >&2; exit 2 ;;
esac

command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null && command -v ceph >/dev/null ||
	{ echo "cluster.sh: ceph-mon, ceph-osd and ceph-common are not installed" >&2; exit 1; }
mkdir -p "$D/run" "$D/log" "$D/mon.a" "$D/osd.0" || exit 1
port=$(free_port)
fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
cat >"$conf" <<EOC
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$port]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
run dir = $D/run
pid file = $D/run/\$name.pid
admin socket = $D/run/\$name.asok
log file = $D/log/\$name.log
log to stderr = false
err to stderr = false
keyring = $D/keyring
[mon.a]
mon data = $D/mon.a
[osd.0]
osd data = $D/osd.0
osd objectstore = bluestore
bluestore block path = $D/osd.0.block
bluestore block create = true
bluestore block size = $((${CLUSTER_OSD_GIB:-10} << 30))
bluestore block db create = false
bluestore block wal create = false
osd memory target = 939524096
bluestore cache autotune = false
bluestore cache size = 134217728
EOC
ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null 2>&1 ||
	fail "ceph-authtool failed"
monmaptool --create --addv a "[v2:127.0.0.1:$port]" --fsid "$fsid" "$D/monmap" >/dev/null 2>&1 ||
	fail "monmaptool failed"
ceph-mon -c "$conf" --mkfs -i a --monmap "$D/monmap" --keyring "$D/keyring" \
	>"$D/log/mon.a.mkfs" 2>&1 || fail "ceph-mon --mkfs failed: $(tail -n 3 "$D/log/mon.a.mkfs")"
ceph-mon -c "$conf" -i a >"$D/log/mon.a.out" 2>&1 || fail "ceph-mon did not start"
for i in $(seq 100); do
	$C mon stat >/dev/null 2>&1 && break
	[ "$i" = 100 ] && fail "the monitor does not answer"
	sleep 0.2
done
uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
id=$($C osd new "$uuid" 2>"$D/log/osd.new.err") || fail "ceph osd new: $(cat "$D/log/osd.new.err")"
[ "$id" = 0 ] || fail "ceph osd new gave id $id"
ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$uuid" >"$D/log/osd.0.mkfs" 2>&1 ||
	fail "ceph-osd --mkfs failed: $(tail -n 3 "$D/log/osd.0.mkfs")"
start_osd || fail "the OSD did not start"
make_pool "$POOL" || fail "pool $POOL takes no write after 60 s"
exit 0
