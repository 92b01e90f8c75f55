"""Model templates registered in MODEL_REGISTRY."""
from .vac import VAC
from .qac import QAC
from .acer import ACER
from .qnet import QNet
