"""The tire model's orchestration: the sweep for the largest hard real-time
tire (sweep.py) and the fit of the published cost equation (fit.py)."""
