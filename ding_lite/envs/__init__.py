"""Env creation from gymnasium ids or ENV_REGISTRY, and vector env managers."""
from .env_manager import SubprocessEnvManager, SyncEnvManager, make_vector_env
from .envpool_manager import EnvpoolEnvManager, EnvpoolVectorEnv
from .atari import AtariPreprocess, EpisodicLife, make_atari_env
from .action_adapter import ACTION_BOUNDS, ActionAdapter
from .env_spec import EnvSpec
from .gym_env import EnvConfig, GymEnv, check_env_id, env_factory
from .toy import BlindCliffwalkEnv, GoalGridEnv, MixedTargetEnv, MovingDotEnv, WallGridEnv  # registers their types
from .pettingzoo_single import PettingZooSingle
