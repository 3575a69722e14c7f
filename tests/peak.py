"""`python tests/peak.py OUT -- ARGV...`: run ARGV as a child of this small interpreter,
write its peak resident set (KiB, wait4's ru_maxrss) to the file OUT, and exit with its
status (128 + N when signal N killed it).

Why a step between: a process's ru_maxrss keeps, across exec, the peak of the process
it was forked from, and the pytest worker that starts a test's program runs the command
line in process (tests/inproc.py) and holds hundreds of MB; a child of this fresh
interpreter starts from its few MB, so the figure is the program's own."""

import os
import subprocess
import sys

out, sep, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
assert sep == "--" and argv, __doc__
child = subprocess.Popen(argv)           # stdin, stdout and stderr are this one's
_, status, usage = os.wait4(child.pid, 0)
with open(out, "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
