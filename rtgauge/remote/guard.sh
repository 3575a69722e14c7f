#!/bin/sh
# guard.sh DIR SILENCE_S ENGINE ARGS...: run the engine on a target for as long as
# the rtgauge that started it is there. rtgauge sends a line on stdin every
# second; "stop", the end of stdin or SILENCE_S seconds without a line (a
# connection that died without closing, which sshd may notice only much later)
# stop the engine with SIGTERM (it exits 130 keeping what it measured), then
# SIGKILL 5 s later if it is still there. The document goes to DIR/doc.json, the
# engine's stderr to DIR/err (kept there when rtgauge is gone: what it measured).
# Sent after heartbeat.sh (listen, watch). Plain POSIX sh, date, sleep, kill:
# BusyBox will do.
d=$1
t=$2
shift 2
exec 3<&0                       # an asynchronous list gets /dev/null as stdin
"$@" --out "$d/doc.json" 2>"$d/err" </dev/null &
e=$!
echo 0 >"$d/alive"
orphan=/dev/null                # the directory is read back, and removed, by rtgauge

stop() {
    kill -TERM "$e" 2>/dev/null
    n=0
    while kill -0 "$e" 2>/dev/null && [ $n -lt 50 ]; do sleep 0.1 2>/dev/null || sleep 1; n=$((n + 1)); done
    kill -KILL "$e" 2>/dev/null
}

listen <&3 >/dev/null 2>&1 &
r=$!
watch "$d/err" </dev/null >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$e"
s=$?
kill "$r" "$w" 2>/dev/null
echo "$s" >"$d/status"
exit "$s"
