"""Two runs or more, figure by figure: how sure we are that a figure changed.

noise.py (the statistics: rounds, batches, the drift model), regress.py (every comparable
figure of a baseline and a candidate, called worse, better or not significantly
different; compare's rule language), trend.py (a system's runs over time) and gate.py
(`run --fail-on`: compare's absolute rules on one run). They import downwards in that
order (docs/design.md, "analysis/ by concern")."""
