"""Videos of evaluation episodes (ding_lite/worker/eval_video.py): the MP4 writer and its GIF fallback, the separate
rendering env (CartPole; ALE Pong under the Atari preprocessing), ``-m eval --video`` and
``policy.eval.evaluator.video_every`` in a serial run."""
import csv
import glob
import os
import re

import imageio.v2 as imageio
import numpy as np
import pytest
import torch

from ding_lite.config import compile_config, read_config_file
from ding_lite.policy.base_policy import EvalMode
from ding_lite.utils import ConfigError
from ding_lite.worker import eval_video as video_module
from ding_lite.worker.eval_video import EvalVideo, VideoWriter

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
CARTPOLE = os.path.join(REPO, "dizoo_configs", "cartpole_impala.py")
PONG = os.path.join(REPO, "dizoo_configs", "pong_impala.py")
SMALL = ["env.collector_env_num=2", "env.evaluator_env_num=1", "env.n_evaluator_episode=1"]


def frames_of(path):
    return [np.asarray(f) for f in imageio.get_reader(path)]


def no_ffmpeg(monkeypatch):
    import imageio_ffmpeg

    def missing():
        raise RuntimeError("No ffmpeg exe could be found")
    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", missing)


def zero_policy(calls=None):
    """An eval mode that always takes action 0 (and counts its batch sizes in ``calls``)."""
    def forward(obs):
        if calls is not None:
            calls.append(len(obs))
        return {"action": torch.zeros(len(obs), dtype=torch.long)}
    return EvalMode(forward=forward, reset=lambda env_ids: None)


def test_mp4_writer_uses_the_bundled_ffmpeg(tmp_path):
    assert video_module.ffmpeg_available()
    writer = VideoWriter(str(tmp_path / "v"), fps=10)
    for i in range(7):
        writer.append(np.full((30, 40, 3), 30 * i, dtype=np.uint8))
    writer.close()
    assert writer.path.endswith(".mp4")
    frames = frames_of(writer.path)
    assert len(frames) == 7 and frames[0].shape == (30, 40, 3)
    assert abs(int(frames[-1].mean()) - 180) <= 3  # H.264 is lossy, but a flat frame stays close


def test_gif_fallback_without_ffmpeg(tmp_path, monkeypatch):
    no_ffmpeg(monkeypatch)
    assert not video_module.ffmpeg_available()
    writer = VideoWriter(str(tmp_path / "v"), fps=10)
    for i in range(5):
        writer.append(np.full((30, 40, 3), 50 * i, dtype=np.uint8))
    writer.close()
    assert writer.path.endswith(".gif") and not os.path.exists(str(tmp_path / "v.mp4"))
    frames = frames_of(writer.path)
    assert len(frames) == 5 and frames[0].shape[:2] == (30, 40)


def test_cartpole_episode_named_with_env_step_and_return(tmp_path):
    cfg = compile_config(read_config_file(CARTPOLE), overrides=SMALL, seed=0)
    calls = []
    video = EvalVideo(cfg.env, 0, str(tmp_path / "videos"))
    try:
        path = video.record(zero_policy(calls), env_step=1234)
        again = video.record(zero_policy(), env_step=1234)
    finally:
        video.close()
    # always pushing left, CartPole falls within a few dozen steps: one frame a step plus the reset frame
    assert os.path.basename(path) == f"eval_envstep1234_return{video_module_return(path):.1f}.mp4"
    assert len(frames_of(path)) == len(calls) + 1 == int(video_module_return(path)) + 1
    assert frames_of(path)[0].shape == (400, 600, 3)
    assert again != path and os.path.exists(path)  # never overwritten (the same return: a _2 suffix)


def video_module_return(path):
    return float(os.path.basename(path).split("_return")[1].split(".mp4")[0].split("_")[0])


def test_atari_render_mode_reaches_the_ale_under_preprocessing(tmp_path, monkeypatch):
    cfg = compile_config(read_config_file(PONG), seed=0,
                         overrides=["env.max_episode_steps=12", "env.collector_env_num=1", "env.evaluator_env_num=1",
                                    "env.n_evaluator_episode=1"])
    assert cfg.env.atari.preprocess and "render_mode" not in cfg.env.kwargs
    calls = []
    video = EvalVideo(cfg.env, 0, str(tmp_path))
    try:
        path = video.record(zero_policy(calls), env_step=7)
    finally:
        video.close()
    assert os.path.basename(path).startswith("eval_envstep7_return") and path.endswith(".mp4")
    assert len(calls) == 12  # TimeLimit: 12 agent steps, each its policy input (1, 4, 84, 84)
    frames = frames_of(path)
    assert len(frames) == 13 and frames[0].shape == (210, 160, 3)  # the ALE's RGB screen, not the 84x84 obs
    assert imageio.get_reader(path).get_meta_data()["fps"] == 15.0  # 60 frames/s over frame_skip 4
    assert "render_mode" not in cfg.env.kwargs  # the recorder's copy only


def test_atari_gif_without_ffmpeg(tmp_path, monkeypatch):
    no_ffmpeg(monkeypatch)
    cfg = compile_config(read_config_file(PONG), seed=0,
                         overrides=["env.max_episode_steps=5", "env.evaluator_env_num=1", "env.n_evaluator_episode=1"])
    video = EvalVideo(cfg.env, 0, str(tmp_path))
    try:
        path = video.record(zero_policy(), env_step=0)
    finally:
        video.close()
    # pillow merges identical frames (Pong's first ones are), adding up their durations: count none, read one
    assert path.endswith(".gif") and frames_of(path)[0].shape == (210, 160, 3)


@pytest.mark.parametrize("value", [-1, 1.5, True])
def test_video_every_must_be_a_count(value):
    with pytest.raises(ConfigError, match="video_every"):
        compile_config(read_config_file(CARTPOLE), overrides=[f"policy.eval.evaluator.video_every={value}"], seed=0)


def test_serial_run_records_every_nth_evaluation_and_eval_cli_records(in_tmp, cli):
    from ding_lite.entry.serial import serial_pipeline

    serial_pipeline(read_config_file(CARTPOLE), 0, max_env_step=600, quiet=True,
                    overrides=SMALL + ["policy.eval.evaluator.eval_freq=4", "policy.eval.evaluator.video_every=2"])
    with open("cartpole_impala_seed0/eval.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 3
    videos = sorted(glob.glob("cartpole_impala_seed0/videos/*.mp4"))
    # the 1st, 3rd, 5th, ... evaluation, named by its env step; the first video replays the first evaluation's
    # episode (evaluator env 0's seed), so it has that evaluation's return. Later ones play the video env's next
    # episode, not necessarily the one the evaluator env played (which has been reset once per evaluation).
    expected = [rows[i] for i in range(0, len(rows), 2)]
    steps = [int(re.search(r"envstep(\d+)_", os.path.basename(v)).group(1)) for v in videos]
    assert sorted(steps) == sorted(int(r["env_step"]) for r in expected)
    first = f"eval_envstep{expected[0]['env_step']}_return{float(expected[0]['return_mean']):.1f}.mp4"
    assert first in [os.path.basename(v) for v in videos]
    assert not glob.glob("cartpole_impala_seed0/videos/.*")  # no partial file left

    result = cli("-m", "eval", "-c", CARTPOLE, "--load-path", "cartpole_impala_seed0/ckpt/ckpt_last.pth.tar",
                 *sum((["--set", s] for s in SMALL), []), "--video", "eval_videos")
    assert result.exit_code == 0, result.output
    (made,) = glob.glob("eval_videos/*.mp4")
    ret = float(result.output.split("return ")[1].split()[0])
    assert os.path.basename(made) == f"eval_envstep{rows[-1]['env_step']}_return{ret:.1f}.mp4"
    assert f"video: {made}" in result.output


def test_no_video_by_default_and_video_is_for_eval_mode(in_tmp, cli):
    result = cli("-m", "serial", "-c", CARTPOLE, "--env-step", "400", "-q", "--video", "v",
                 *sum((["--set", s] for s in SMALL), []))
    assert result.exit_code == 2 and "--video is for -m eval" in result.output
    from ding_lite.entry.serial import serial_pipeline
    serial_pipeline(read_config_file(CARTPOLE), 0, max_env_step=400, quiet=True, overrides=SMALL)
    assert os.path.isdir("cartpole_impala_seed0") and not os.path.exists("cartpole_impala_seed0/videos")


def test_parallel_run_records_in_the_evaluator_worker_named_by_train_iter(in_tmp):
    """-m parallel: the evaluator worker records into <run_dir>/videos, every video_every-th evaluation, each file
    named with the train iteration of the weights it played (eval.csv's rows) and the recorded return."""
    from ding_lite.entry.parallel import parallel_pipeline

    parallel_pipeline(read_config_file(CARTPOLE), 0, max_env_step=1500, quiet=True,
                      overrides=SMALL + ["policy.eval.evaluator.eval_freq=4", "policy.eval.evaluator.video_every=1",
                                         "parallel.collector_num=1"])
    with open("cartpole_impala_seed0/eval.csv") as f:
        iters = {int(r["train_iter"]) for r in csv.DictReader(f)}
    videos = glob.glob("cartpole_impala_seed0/videos/*.mp4")
    assert videos, "no video from the parallel evaluator"
    named = {int(os.path.basename(v).split("_")[1][len("iter"):]) for v in videos}
    assert all(os.path.basename(v).startswith("eval_iter") for v in videos)
    # the first evaluation (train_iter 0) is recorded; the others belong to evaluations the worker ran (an evaluation
    # still running when the run stopped may have no eval.csv row)
    assert 0 in named and 0 in iters
