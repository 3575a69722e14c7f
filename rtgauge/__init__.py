"""rtgauge: measure whether an operating system can carry a real-time job."""

__version__ = "0.1.0"
