"""ding_lite: a small, fast reinforcement-learning framework in the DI-engine style."""
__version__ = "0.1.0"
