"""Record /proc/stat, the monotonic clock and rtgauge's own CPU time around a real
engine job, as rtgauge's idle check takes them (rtgauge/trace/counters.py)."""
import json, subprocess, sys
from rtgauge.trace.counters import take_snapshot
engine, cpu, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
argv = [engine, "preempt", "--event", "timer", "--period-us", "250", "--iterations", "20000", "--cpus", str(cpu)]
before = take_snapshot([cpu])
p = subprocess.run(argv, capture_output=True, text=True)
after = take_snapshot([cpu])
doc = json.loads(p.stdout)
json.dump({"argv": ["rtgauge-engine"] + argv[1:], "cpus": [cpu],
           "before": {"stat": before.stat, "own_s": before.own_s, "mono_s": before.mono_s},
           "after": {"stat": after.stat, "own_s": after.own_s, "mono_s": after.mono_s},
           "preempt": doc["metrics"]["preempt"]["count"], "low_not_running": doc["metrics"].get("low_not_running", {}).get("value", 0), "ok": doc["ok"]}, open(out, "w"), indent=1)
