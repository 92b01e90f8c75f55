"""A suite for the runner's own test (tests/benchmarks/test_learning_suite.py) and a first try of the runner: CartPole
IMPALA with no early stop, 2 seeds of 6,000 env steps, a few seconds each. The target is a made-up bar, not a
published result; the anchor only shows how one is drawn."""
TASKS = [
    dict(name="cartpole_impala", config="benchmarks/suites/configs/cartpole_impala_smoke.py", seeds=[0, 1],
         env_step=6_000,
         checkpoints=[dict(env_step=2_000, target=50, source="a made-up bar"), dict(env_step=6_000, target=150,
                                                                                   source="a made-up bar")],
         anchors=[("the maximum", 6_000, 500)],
         reach=100, reach_within=6_000),
]
