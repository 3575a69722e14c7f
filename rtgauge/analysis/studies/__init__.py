"""The published studies beside the measured runs (docs/studies.md).

published.py (each published row beside the measurement whose method matches),
conclusions.py (the studies' stated conclusions, checked), micro.py (the
microbenchmark table, each row with the published figures of its test), rhealstone.py
(Kar & Porter's composite figure) and tirecost.py (the tire study's cost equation,
its constants measured and tested by prediction). They read a run's own figures from
rtgauge/analysis/run/ and never the other way round (docs/design.md, "analysis/ by
concern")."""
