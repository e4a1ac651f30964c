"""kernelwright.agent: settings, the front doors (CLI) and, later, the graph."""

__version__ = "0.1.0"
