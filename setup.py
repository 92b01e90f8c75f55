from setuptools import find_packages, setup

setup(
    name="ding_lite",
    version="0.1.0",
    description="A small, fast reinforcement-learning framework in the DI-engine style (IMPALA, ACER, SAC).",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["ding_lite", "ding_lite.*"]),
    python_requires=">=3.9",
    install_requires=[
        # The oldest releases the tests pass on (.ci/bounds runs the quick tier on them; .ci/run on the newest
        # gymnasium and numpy). torch 2.13 and numpy 1.26 are the oldest measured (checkpoints load with
        # weights_only=True and nothing else, safe since torch 2.6: CVE-2025-32434).
        "torch>=2.13",
        "easydict",
        "gymnasium>=1.1",
        "tensorboardX",
        "click>=8",
        "numpy>=1.26",
        # The live progress line on a terminal (small, pure Python, no dependencies of its own).
        "tqdm",
    ],
    extras_require={
        # minigrid: a third-party Dict-observation env for the env tests; pytest-xdist: .ci/run's two test workers;
        # ruff: its lint step (.ci/ruff.toml). pytest below 9.2: 9.2 derives a test's node id from a new field that
        # pytest-xdist 3.8 does not set, so --dist loadgroup put every test in a group of its own (tests/conftest.py)
        "test": ["pytest>=7,<9.2", "pytest-xdist>=3.5", "minigrid", "ruff>=0.6"],
        # 2.59: the first Ray whose local instances (ray.init without an address) turn token authentication on by
        # default (2.52-2.58 had it off unless RAY_AUTH_MODE=token), on top of ding_lite's loopback-only binding.
        "ray": ["ray[default]>=2.59"],
        # Compiled kernels for prioritised replay's sum tree (ding_lite/data/sum_tree_kernels.py): sample(256) at 1e6
        # transitions ~2x faster than the NumPy path it falls back to (docs/benchmarks.md). numba + llvmlite are
        # ~210 MB installed and follow new Python releases with a delay, so they stay optional.
        "fast": ["numba>=0.59"],
        # ding_lite tune (ding_lite/tune, docs/tune.md): hyperparameter search on Optuna; 4 for its heartbeat and
        # retry of interrupted trials as used there. Optuna pulls SQLAlchemy and alembic, so it stays optional.
        "tune": ["optuna>=4"],
        # Learning-curve PNGs (ding_lite.analysis.plot); everything else in ding_lite works without it.
        "plot": ["matplotlib"],
        # Benchmarks only: the SAC speed comparison (benchmarks/sac_speed.py) runs Stable-Baselines3 and SBX (SB3 in
        # JAX, with JAX's CPU build) beside ding_lite.
        "bench": ["stable-baselines3", "sbx-rl", "jax[cpu]"],
        # Box2D envs (LunarLander, BipedalWalker): the Box2D wheels, no swig or compiler (gymnasium[box2d] builds
        # box2d-py from source); pygame renders them (videos). Not needed by the tests.
        "box2d": ["box2d>=2.3.10", "pygame>=2.1.3"],
        "mujoco": ["gymnasium[mujoco]"],
        # Atari: ale-py ships the game ROMs (no download at run time); the preprocessing needs no OpenCV.
        "atari": ["ale-py>=0.9"],
        # Exporting a trained policy (`ding_lite export`): ONNX files (onnx, and onnxscript for torch's exporter) and
        # onnxruntime to run them; TorchScript needs only torch.
        "export": ["onnx", "onnxscript", "onnxruntime"],
        # Videos of evaluation episodes (MP4 through imageio's ffmpeg binary; GIF without it).
        "video": ["imageio", "imageio-ffmpeg"],
        # Experiment trackers beside TensorBoard: Weights & Biases, and MLflow (its client, which writes to a tracking
        # server or a local file store).
        "wandb": ["wandb"],
        "mlflow": ["mlflow-skinny"],
        # envpool's batched C++ Atari envs (env.manager.type='envpool'); wheels for Linux x86-64 only, ~0.9 GB
        # installed (its game and MuJoCo assets).
        "envpool": ["envpool"],
        # PettingZoo's classic games (tic-tac-toe, connect four) as single-agent envs against a random player
        # (ding_lite/envs/pettingzoo_single.py); 1.27 for its registry (pettingzoo.make). The classic board games
        # need nothing beyond PettingZoo (itself numpy and gymnasium).
        "pettingzoo": ["pettingzoo>=1.27"],
    },
    entry_points={"console_scripts": ["ding_lite=ding_lite.cli:main"]},
)
