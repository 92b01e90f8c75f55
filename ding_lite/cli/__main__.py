"""``python -m ding_lite.cli``: the ``ding_lite`` command."""
from .main import main

main()
