"""`python3 -m rtgauge.hil veth|sustained ...`: an alias of `rtgauge hil ...`."""

import sys

from rtgauge.hil.command import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="python3 -m rtgauge.hil"))
