#!/bin/sh
# keep.sh DIR SILENCE_S CMD...: keep a load (or a tuning) on a target for as long as
# the rtgauge that started it is there. CMD runs in a session of its own (setsid),
# its output in DIR/log. rtgauge sends a line on stdin every second; "stop", the
# end of stdin or SILENCE_S seconds without a line (a connection that died without
# closing) end it: SIGINT to its whole process group (stress-ng then writes its
# metrics), SIGTERM 1 s later, SIGKILL to what is left 5 s later. Then DIR/atexit, when there, runs
# (the revert of a tuning). Its status goes to DIR/status; when rtgauge did not say
# "stop" (it is gone), DIR is removed. Sent after heartbeat.sh (listen, watch).
# POSIX sh, setsid, date, sleep, kill: BusyBox will do.
d=$1
t=$2
shift 2
exec 3<&0                       # an asynchronous list gets /dev/null as stdin
setsid "$@" >"$d/log" 2>&1 </dev/null &
e=$!                            # not a group leader: setsid execs, so $e is the session and group id
echo "$e" >"$d/pid"
echo "$e"                       # and to rtgauge, which waits for it
echo 0 >"$d/alive"
orphan="$d/orphan"              # rtgauge is gone: nobody reads the directory back

stop() {
    kill -INT -"$e" 2>/dev/null || kill -INT "$e" 2>/dev/null
    n=0
    while kill -0 -"$e" 2>/dev/null && [ $n -lt 50 ]; do
        # a command sh started in the background ignores SIGINT (POSIX): SIGTERM then
        [ $n = 10 ] && kill -TERM -"$e" 2>/dev/null
        sleep 0.1 2>/dev/null || sleep 1
        n=$((n + 1))
    done
    kill -KILL -"$e" 2>/dev/null
    kill -KILL "$e" 2>/dev/null
}

listen <&3 >/dev/null 2>&1 &
r=$!
watch "$d/log" </dev/null >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$e"
s=$?
# the group may outlive its leader (a load's workers): end it too
kill -0 -"$e" 2>/dev/null && stop
kill "$r" "$w" 2>/dev/null
if [ -f "$d/atexit" ]; then sh "$d/atexit" >>"$d/atexit.log" 2>&1; fi
echo "$s" >"$d/status"
# nobody will read the directory back (a load's log, a tuning's keeper: nothing
# measured): leave nothing on the target
[ -f "$d/orphan" ] && rm -rf "$d"
exit "$s"
