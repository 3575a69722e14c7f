"""A lab: one profile run on many targets at once (docs/lab.md).

config.py reads LAB.toml; places.py holds labgrid places for the run through
labgrid's client; runner.py runs one `rtgauge run --target` process a target,
forwarding Ctrl-C to them. The command is rtgauge/cli/lab.py."""
