"""``pettingzoo_single`` (ding_lite/envs/pettingzoo_single.py): one seat of PettingZoo's tic-tac-toe against a random
legal opponent, on the real game."""
import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="needs the pettingzoo extra: pip install -e '.[pettingzoo]'")

from ding_lite.entry.check_env import check_target  # noqa: E402
from ding_lite.envs.pettingzoo_single import PettingZooSingle  # noqa: E402
from ding_lite.utils import UserError  # noqa: E402


def play(env, rng, games):
    """Random legal games: (returns, episode lengths, the observations of the first game)."""
    returns, lengths, first = [], [], []
    obs, _ = env.reset(seed=7)
    for g in range(games):
        total, steps, done = 0.0, 0, False
        while not done:
            if g == 0:
                first.append(obs["observation"].copy())
            assert env.observation_space.contains(obs)
            obs, reward, terminated, truncated, _ = env.step(rng.choice(np.flatnonzero(obs["action_mask"])))
            total, steps, done = total + reward, steps + 1, terminated or truncated
            assert not truncated
        returns.append(total)
        lengths.append(steps)
        obs, _ = env.reset()
    return np.array(returns), lengths, first


def test_the_first_seat_gets_the_board_and_its_mask():
    env = PettingZooSingle(seat=0)
    assert env.action_space == gym.spaces.Discrete(9)
    assert set(env.observation_space.spaces) == {"observation", "action_mask"}
    obs, info = env.reset(seed=0)
    assert info == {"seat": 0} and obs["action_mask"].tolist() == [1] * 9 and obs["observation"].sum() == 0
    obs, reward, terminated, _, _ = env.step(4)  # the agent's move, then the opponent's
    assert reward == 0 and not terminated
    assert obs["observation"].sum() == 2 and obs["action_mask"].sum() == 7 and obs["action_mask"][4] == 0


@pytest.mark.slow
def test_random_games_score_as_tictactoe_does():
    """Random against random: the first player wins about 58.5% of games, loses 28.8%, draws 12.7%."""
    returns, lengths, _ = play(PettingZooSingle(seat=0), np.random.default_rng(0), 600)
    assert set(returns) <= {-1.0, 0.0, 1.0} and 3 <= min(lengths) and max(lengths) <= 5
    assert 0.52 < (returns == 1).mean() < 0.65 and 0.23 < (returns == -1).mean() < 0.35
    second, _, _ = play(PettingZooSingle(seat=1), np.random.default_rng(0), 600)
    assert 0.23 < (second == 1).mean() < 0.35 and 0.52 < (second == -1).mean() < 0.65


def test_a_seed_gives_the_same_games_and_seat_none_plays_both():
    _, _, a = play(PettingZooSingle(seat=1), np.random.default_rng(1), 1)
    _, _, b = play(PettingZooSingle(seat=1), np.random.default_rng(1), 1)
    assert len(a) == len(b) and all((x == y).all() for x, y in zip(a, b))
    assert a[0].sum() == 1  # the opponent moved first
    env = PettingZooSingle(seat=None)
    seats = {env.reset(seed=s)[1]["seat"] for s in range(10)}
    assert seats == {0, 1}


def test_an_illegal_move_loses_the_game():
    env = PettingZooSingle(seat=0)
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(0)
    _, reward, terminated, _, _ = env.step(0)  # the square is taken
    assert reward == -1 and terminated


@pytest.mark.parametrize("game, message", [
    ("classic/tictactoe-v9", "env.kwargs.game='classic/tictactoe-v9': "),
    ("pettingzoo.classic.tictactoe", "env.kwargs.game='pettingzoo.classic.tictactoe' has no env() function"),
    ("pettingzoo.classic.tic_tac_toe", "env.kwargs.game='pettingzoo.classic.tic_tac_toe': cannot import it"),
])
def test_a_game_it_cannot_make_is_one_line(game, message):
    with pytest.raises(UserError) as err:
        PettingZooSingle(game=game)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_game_named_by_a_module_outside_pettingzoo_is_never_imported(tmp_path, monkeypatch):
    """env.kwargs.game went to importlib.import_module as it was: a config could run any module's code."""
    (tmp_path / "planted_game.py").write_text("open('PWNED', 'w').write('ran')\nenv = None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UserError, match="env.kwargs.game='planted_game': name a PettingZoo AEC game"):
        PettingZooSingle(game="planted_game")
    assert not (tmp_path / "PWNED").exists()


def test_the_module_form_plays_the_same_game():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PettingZoo's older form (warned once, at import)
        env = PettingZooSingle(game="pettingzoo.classic.tictactoe_v3")
    returns, _, _ = play(env, np.random.default_rng(0), 20)
    reference, _, _ = play(PettingZooSingle(), np.random.default_rng(0), 20)
    assert (returns == reference).all()


def test_check_env_passes_it():
    report, ok = check_target("pettingzoo_single", steps=300)
    assert ok, report
