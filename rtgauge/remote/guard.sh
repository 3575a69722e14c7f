#!/bin/sh
# guard.sh DIR SILENCE_S ENGINE ARGS...: run the engine on a target for as long as
# the rtgauge that started it is there. rtgauge sends a line on stdin every
# second; "stop", the end of stdin or SILENCE_S seconds without a line (a
# connection that died without closing, which sshd may notice only much later)
# stop the engine with SIGTERM (it exits 130 keeping what it measured), then
# SIGKILL 5 s later if it is still there. The document goes to DIR/doc.json, the
# engine's stderr to DIR/err (kept there when rtgauge is gone: what it measured).
# Plain POSIX sh, date, sleep, kill: BusyBox will do.
d=$1
t=$2
shift 2
exec 3<&0                       # an asynchronous list gets /dev/null as stdin
"$@" --out "$d/doc.json" 2>"$d/err" </dev/null &
e=$!
echo 0 >"$d/alive"               # the heartbeats counted (shell builtins: no process a beat)

stop() {
    kill -TERM "$e" 2>/dev/null
    n=0
    while kill -0 "$e" 2>/dev/null && [ $n -lt 50 ]; do sleep 0.1 2>/dev/null || sleep 1; n=$((n + 1)); done
    kill -KILL "$e" 2>/dev/null
}

(
    said=
    beats=0
    while IFS= read -r line; do
        [ "$line" = stop ] && said=1 && break
        beats=$((beats + 1))
        echo "$beats" >"$d/alive"
    done
    [ -n "$said" ] && : >"$d/said"
    stop
) <&3 >/dev/null 2>&1 &
r=$!
(
    seen=0 quiet=
    while kill -0 "$e" 2>/dev/null; do
        sleep 1
        [ -f "$d/said" ] && break
        beats=
        read -r beats <"$d/alive" 2>/dev/null
        # read while the reader rewrites it (">" truncates, then echo writes): no word
        # read, so no silence seen either (an empty value in $((...)) is 0, which once
        # stopped the engine at once)
        case $beats in ''|*[!0-9]*) continue ;; esac
        # a beat since the last look: not silent. Only a silence costs a process (date):
        # a fork and an exec a second take a good part of a CPU under software emulation
        if [ "$beats" != "$seen" ]; then seen=$beats quiet=; continue; fi
        now=$(date +%s)
        [ -n "$quiet" ] || quiet=$now
        if [ $((now - quiet)) -ge "$t" ]; then
            echo "rtgauge: no word from the client for $t s: stopping the engine" >>"$d/err"
            stop
            break
        fi
    done
) </dev/null >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$e"
s=$?
kill "$r" "$w" 2>/dev/null
echo "$s" >"$d/status"
exit "$s"
