"""Workers: the collector, the evaluator (and its videos), the learner and its training step, and how the training
loop reaches them (``transport``: the ``Transport`` interface; ``in_process_transport``: the serial pipeline's)."""
from .collector import SampleCollector
from .evaluator import Evaluator
from .learner import Learner
