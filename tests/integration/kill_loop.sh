#!/bin/bash
# SPDX-License-Identifier: MIT
# The SIGKILL loop: the daemon is killed at random moments under a mixed
# load (append-then-fsync logs, rewrite-then-fsync of fsynced files,
# creates, renames, unlinks, sealed objects mapped at the kill), and after
# each remount every byte a write
# returned for, fsynced or not (the next daemon adopts the arena), and
# every name change that returned, is compared with what the load was
# told (tests/crash/killload.py keeps that outside the mount).  Nothing
# may be lost.  KILL_MODE=fsync checks only what fsync acknowledged.
# KILL_OPTS replaces the mount options (remote_stress.sh adds remote=);
# KILL_LOSE=1 loses the whole machine at each kill: the data directory
# and the arena are deleted, and the next mount (from the pool, once the
# dead mount's hold lapses) must still have every fsynced byte.
# KILL_PAUSE=1 also stops (SIGSTOP) and resumes the daemon, for up to
# 5 s (past a remote_hold of 3), and with KILL_OSD_PID (the OSD's pid
# file) the OSD, for up to 8 s (past a remote_timeout of 6), at a random
# moment of most rounds before the kill: what the load was told must
# survive those as it survives the kill (an fsync the stopped OSD failed
# acknowledged nothing, and the load stops there).
. "${TESTS_LIB:-$(dirname "$0")/../lib.sh}"
t_init
SIM=$(cd "$(dirname "$0")/../crash" && pwd)
ROUNDS=${KILL_ROUNDS:-80}
MODE=${KILL_MODE:-written}
SEED=${KILL_SEED:-$((RANDOM * 32768 + RANDOM))}
OPTS=${KILL_OPTS:-arena=32M,chunk=64K}
LOSE=${KILL_LOSE:-0}
PAUSE=${KILL_PAUSE:-0}
OSD_PIDF=${KILL_OSD_PID:-}
# Names changed since the last fsync may go with a lost machine.
export KILLLOAD_NAMES_LOOSE=$LOSE
echo "# seed $SEED (KILL_SEED=$SEED reproduces the choices)"
kills=0 remounts=0 verified=0 lost=0 names=0 missing=0 bad=0 sealed=0
dpauses=0 opauses=0

add_up() {	# add_up OUTPUT: the load's "verified V lost L names N missing M"
	local v l n m k
	read -r _ v _ l _ n _ m < <(grep -m1 '^verified ' "$1")
	if [ -z "$v" ]; then
		bad=$((bad + 1))
		sed 's/^/# /' "$1" | tail -n 20
		return
	fi
	verified=$((verified + v)) lost=$((lost + l))
	names=$((names + n)) missing=$((missing + m))
	k=$(sed -n 's/^# sealed objects checked: \([0-9]*\) sealed.*/\1/p' "$1" | head -n 1)
	sealed=$((sealed + ${k:-0}))
	if [ "$l" != 0 ] || [ "$m" != 0 ]; then
		bad=$((bad + 1))
		sed 's/^/# /' "$1" | head -n 20
	fi
}

mount_round() {	# mount, waiting (KILL_LOSE) for a dead mount's hold to lapse
	local i log=$T/objfs.$(basename "$MNT").log
	for ((i = 0; i < 120; i++)); do
		start_objfs "$MNT" "$DATA" "$OPTS" && return 0
		[ "$LOSE" = 1 ] && tail -n 3 "$log" | grep -q "is mounted by another objfs" ||
			return 1
		sleep 0.5
	done
	return 1
}

for ((r = 0; r < ROUNDS; r++)); do
	mount_round >>"$T/mounts.log" 2>&1 || { bad=$((bad + 1)); break; }
	remounts=$((remounts + 1))
	# A file of its own: the last round's "verified" line must not be
	# read before this round's load has even opened it.
	out=$T/round.$r.out
	python3 "$SIM/killload.py" "$MNT" "$T/journal" $((SEED + r)) "$MODE" >"$out" 2>&1 &
	load=$!
	# The kill lands in the load, after this round's check of the last
	# (however long a busy machine makes that check: a kill during it
	# would count its unread bytes as lost).
	for ((i = 0; i < 12000; i++)); do
		grep -q '^verified ' "$out" 2>/dev/null && break
		kill -0 "$load" 2>/dev/null || break
		sleep 0.05
	done
	if ! grep -q '^verified ' "$out" 2>/dev/null; then
		echo "# round $r: the load did not finish its check of the last round"
		bad=$((bad + 1))
	fi
	sleep "$(printf '0.%03d' $((RANDOM % 700 + 50)))"
	if [ "$PAUSE" = 1 ]; then
		case $((RANDOM % 3)) in
		0)	# the daemon stopped: a GC pause, a frozen VM
			kill -STOP "$OBJFS_PID"
			sleep "$((RANDOM % 5)).$((RANDOM % 10))"
			kill -CONT "$OBJFS_PID"
			dpauses=$((dpauses + 1)) ;;
		1)	# the cluster out of reach
			if [ -n "$OSD_PIDF" ]; then
				osd=$(cat "$OSD_PIDF")
				kill -STOP "$osd"
				sleep "$((RANDOM % 8 + 1)).$((RANDOM % 10))"
				kill -CONT "$osd"
				opauses=$((opauses + 1))
			fi ;;
		esac
		sleep "$(printf '0.%03d' $((RANDOM % 700 + 50)))"
	fi
	kill -KILL "$OBJFS_PID"
	wait "$OBJFS_PID" 2>/dev/null
	st=$?
	if [ "$st" != 137 ]; then
		# It was not the kill that stopped it: say how, with its log.
		echo "# round $r: the daemon had already exited, status $st"
		grep -v ': info: ' "$T/objfs.$(basename "$MNT").log" | tail -n 20 |
			sed 's/^/# /'
		bad=$((bad + 1))
	fi
	kills=$((kills + 1))
	wait "$load"
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
	if [ "$LOSE" = 1 ]; then
		a=$(head -n 1 "$DATA/arena" 2>/dev/null)
		rm -rf "$DATA"
		case $a in */objfs.??????/arena) rm -rf "${a%/arena}" ;; esac
	fi
	add_up "$out"
	rm -f "$out"
done
# One last check, after a clean mount.
ok "mount after the last kill" mount_round
KILLLOAD_VERIFY_ONLY=1 python3 "$SIM/killload.py" "$MNT" "$T/journal" 0 "$MODE" >"$T/final.out" 2>&1
add_up "$T/final.out"
ok "unmount" stop_objfs
echo "# kills $kills, remounts $((remounts + 1)), bytes verified $verified, bytes lost $lost, names checked $names, names wrong $missing, sealed objects found sealed after a kill $sealed"
[ "$PAUSE" = 1 ] && echo "# daemon pauses $dpauses, OSD pauses $opauses"
ok "$kills kills, $verified bytes ($MODE) and $names names checked after remounts: $lost bytes lost, $missing names wrong" \
	test "$kills" -ge "$ROUNDS" -a "$lost" = 0 -a "$missing" = 0 -a "$bad" = 0
t_done
