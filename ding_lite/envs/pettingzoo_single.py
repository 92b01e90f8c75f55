"""``pettingzoo_single``: one seat of a PettingZoo AEC classic game (tic-tac-toe, connect four, ...) as a
single-agent gymnasium env, against an opponent that plays a uniformly random legal move.

The agent sees the game's own observation for its seat, a Dict ``{'observation': ..., 'action_mask': ...}`` (every
PettingZoo classic game gives one), so masked policies (IMPALA, APPO, PPO, ACER, discrete SAC) take the mask as
they take any Dict observation's (``env.action_mask_key='action_mask'``, the default). Each ``step`` plays the agent's move, then the
opponent's moves until it is the agent's turn again or the game is over. The reward is the agent's reward over those
moves: in the classic games +1 for a win, -1 for a loss (an illegal move, possible only without a mask, loses as
PettingZoo's ``TerminateIllegalWrapper`` rules), 0 otherwise, so an episode's return is the game's result.

The opponent draws its moves from the env's ``np_random``, seeded by ``reset(seed=...)`` as the game itself is, so a
seed gives the same games. ``game``: an id of PettingZoo's registry (``pettingzoo.make('aec', game)``), or a
module with an ``env()`` function (PettingZoo's older form); ``game_kwargs`` its arguments. ``seat``: 0 moves
first, 1 second, ``None`` a random seat each game. Needs ``pip install -e ".[pettingzoo]"`` (tic-tac-toe and
connect four need nothing more)::

    create_config = dict(env=dict(type="pettingzoo_single"), policy=dict(type="ppo"))
    main_config = dict(env=dict(kwargs=dict(game="classic/tictactoe-v3", seat=0)), ...)
"""
import importlib
from typing import Any, Optional, Tuple

import gymnasium as gym
import numpy as np

from ding_lite.utils import ENV_REGISTRY
from ding_lite.utils.errors import UserError

MASK = "action_mask"


def make_game(game: str, game_kwargs: Optional[dict]) -> Any:
    """The AEC env ``game``: an id of PettingZoo's registry ('classic/tictactoe-v3', made with
    ``pettingzoo.make('aec', game, **game_kwargs)``) or a module with an ``env()`` function
    ('pettingzoo.classic.tictactoe_v3', PettingZoo's older, deprecated form); a UserError naming the install or the
    name when it cannot be made."""
    try:
        import pettingzoo
    except ImportError as err:
        raise UserError(f"env type 'pettingzoo_single' needs PettingZoo ({err}): pip install -e \".[pettingzoo]\" "
                        f"(or pip install pettingzoo)") from None
    if "/" in game:
        if not hasattr(pettingzoo, "make"):
            raise UserError(f"env.kwargs.game='{game}' is a registry id, which needs PettingZoo 1.27 or later "
                            f"(this is {pettingzoo.__version__}): pip install -U pettingzoo, or name the game's "
                            f"module, e.g. 'pettingzoo.classic.tictactoe_v3'")
        from pettingzoo.env_registry.exceptions import PettingZooRegistryError
        try:
            return pettingzoo.make("aec", game, **(game_kwargs or {}))
        except PettingZooRegistryError as err:
            raise UserError(f"env.kwargs.game='{game}': {str(err).splitlines()[0]}") from None
    if not game.startswith("pettingzoo."):  # a config names a game, never a module to import (that runs its code)
        raise UserError(f"env.kwargs.game='{game}': name a PettingZoo AEC game by its registry id, e.g. "
                        f"'classic/tictactoe-v3', or by its module in PettingZoo, e.g. 'pettingzoo.classic.tictactoe_v3'")
    try:
        module = importlib.import_module(game)
    except ImportError as err:
        raise UserError(f"env.kwargs.game='{game}': cannot import it ({err}); name a PettingZoo AEC game, e.g. "
                        f"'classic/tictactoe-v3' or 'classic/connect_four-v3'") from None
    if not callable(getattr(module, "env", None)):
        raise UserError(f"env.kwargs.game='{game}' has no env() function; name a PettingZoo AEC game, e.g. "
                        f"'classic/tictactoe-v3'")
    return module.env(**(game_kwargs or {}))


@ENV_REGISTRY.register("pettingzoo_single")
class PettingZooSingle(gym.Env):
    """One seat of the AEC game ``game`` against a uniformly random legal opponent (module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, game: str = "classic/tictactoe-v3", seat: Optional[int] = 0,
                 game_kwargs: Optional[dict] = None) -> None:
        self.game = make_game(game, game_kwargs)
        self.game.reset()
        self.seats = list(self.game.possible_agents)
        if seat is not None and seat not in range(len(self.seats)):
            raise UserError(f"env.kwargs.seat={seat!r}: must be None (a random seat each game) or one of "
                            f"0..{len(self.seats) - 1} (the game's seats {self.seats})")
        self.seat = seat
        self.me = self.seats[seat or 0]
        self.observation_space = self.game.observation_space(self.me)
        self.action_space = self.game.action_space(self.me)
        if not isinstance(self.observation_space, gym.spaces.Dict) or MASK not in self.observation_space.spaces:
            raise UserError(f"env.kwargs.game='{game}': its observation {self.observation_space} has no "
                            f"'{MASK}' key; pettingzoo_single plays the classic games, whose observations carry the "
                            f"mask")

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[dict, dict]:
        super().reset(seed=seed)
        self.game.reset(seed=int(self.np_random.integers(2**31)))
        seat = self.seat if self.seat is not None else int(self.np_random.integers(len(self.seats)))
        self.me = self.seats[seat]
        self._opponents_move()
        return self.game.observe(self.me), {"seat": seat}

    def step(self, action: Any) -> Tuple[dict, float, bool, bool, dict]:
        self.game.step(int(action))
        reward = float(self.game.rewards.get(self.me, 0.0))
        if not self._over():
            reward += self._opponents_move()
        terminated = bool(self.game.terminations.get(self.me, True))
        truncated = bool(self.game.truncations.get(self.me, False)) and not terminated
        return self.game.observe(self.me), reward, terminated, truncated, {}

    def _over(self) -> bool:
        return (self.me not in self.game.agents or self.game.terminations[self.me]
                or self.game.truncations[self.me])

    def _opponents_move(self) -> float:
        """Random legal moves of the other seats until it is the agent's turn or the game is over; the agent's
        reward over them."""
        reward = 0.0
        while not self._over() and self.game.agent_selection != self.me:
            mask = np.asarray(self.game.observe(self.game.agent_selection)[MASK])
            self.game.step(int(self.np_random.choice(np.flatnonzero(mask))))
            reward += float(self.game.rewards.get(self.me, 0.0))
        return reward

    def close(self) -> None:
        self.game.close()
