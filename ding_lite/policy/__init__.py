"""Policies (POLICY_REGISTRY entries) and the Policy base class users subclass."""
from .base_policy import CollectMode, EvalMode, LearnMode, Policy
from .unroll_policy import UnrollBatch, UnrollPolicy
from .impala import IMPALAPolicy
from .sac import DiscreteSACPolicy, SACPolicy
from .acer import ACERPolicy
from .ppo import PPOPolicy
from .appo import APPOPolicy
from .dqn import DQNPolicy
