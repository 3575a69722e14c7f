"""Targets: the machine a measurement runs on (this one, or a board over SSH),
and engines built for its architecture."""
