"""ding_lite: a small, fast reinforcement-learning framework in the DI-engine style."""
__version__ = "0.1.0"


def __getattr__(name):
    """``ding_lite.load`` (and ``ding_lite.Agent``) imported on first use (PEP 562), so that ``import ding_lite``
    (and ``ding_lite --help``) stays light: no torch until a policy is loaded."""
    if name in ("load", "Agent"):
        from ding_lite.deploy import agent
        return getattr(agent, name)
    raise AttributeError(f"module 'ding_lite' has no attribute {name!r}")
