import sys

from rtgauge.cli import main

sys.exit(main())
