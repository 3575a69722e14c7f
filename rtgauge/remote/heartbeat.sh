# heartbeat.sh: what guard.sh and keep.sh share, sent as the first part of either
# (one script: a target may have no file to source). Before calling listen and
# watch, the script sets d (its directory), t (SILENCE_S), e (the process to
# watch), orphan (a file to create when rtgauge went without saying "stop", or
# /dev/null) and defines stop (how to end what it keeps).
# rtgauge sends a line on stdin every second: the lines are counted in $d/alive
# with shell builtins (no process a beat: a fork and an exec take a good part of a
# CPU under software emulation).

# listen: read the heartbeats from stdin; "stop" (said: $d/said) or the end of
# stdin (not said: $orphan) stop what is kept.
listen() {
    said=
    beats=0
    while IFS= read -r line; do
        [ "$line" = stop ] && said=1 && break
        beats=$((beats + 1))
        echo "$beats" >"$d/alive"
    done
    if [ -n "$said" ]; then : >"$d/said"; else : >"$orphan"; fi
    stop
}

# watch LOG: while $e runs, once a second, look at the count; t seconds without a
# new beat (a connection that died without closing, which sshd may notice only much
# later) stop what is kept, with a line in LOG.
watch() {
    seen=0 quiet=
    while kill -0 "$e" 2>/dev/null; do
        sleep 1
        [ -f "$d/said" ] && break          # rtgauge said stop: the listener stops it
        beats=
        read -r beats <"$d/alive" 2>/dev/null
        # read while the listener rewrites it (">" truncates, then echo writes): no
        # word read, so no silence seen either (an empty value in $((...)) is 0, which
        # once stopped the engine at once)
        case $beats in ''|*[!0-9]*) continue ;; esac
        # a beat since the last look: not silent. Only a silence costs a process (date)
        if [ "$beats" != "$seen" ]; then seen=$beats quiet=; continue; fi
        now=$(date +%s)
        [ -n "$quiet" ] || quiet=$now
        if [ $((now - quiet)) -ge "$t" ]; then
            echo "rtgauge: no word from the client for $t s: stopping" >>"$1"
            : >"$orphan"
            stop
            break
        fi
    done
}
