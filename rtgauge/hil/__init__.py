"""The hardware-in-the-loop loop beyond one process: the two roles in two network
namespaces joined by a veth pair (veth.py), and the sustained-rate sweep
(sustained.py). The engine test `hil` does the measuring; this package places it."""
