"""Small envs with known answers, for tests, examples and studies (each a few milliseconds a step, each with the
return that counts as solved): a masked-action grid (``wall_grid``), Dict observations (``goal_grid``), pixels
(``moving_dot``), mixed discrete and continuous actions (``mixed_target``), prioritised replay's Blind Cliffwalk
(``blind_cliffwalk``) and CartPole with its velocities hidden (``masked_cartpole``, a wrapper). Importing the
package registers their env types."""
from .blind_cliffwalk import BlindCliffwalkEnv
from .goal_grid import GoalGridEnv
from .mixed_target import MixedTargetEnv
from .moving_dot import MovingDotEnv
from .wall_grid import WallGridEnv

__all__ = ["BlindCliffwalkEnv", "GoalGridEnv", "MixedTargetEnv", "MovingDotEnv", "WallGridEnv"]
