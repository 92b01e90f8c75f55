"""The age of what the learner trains on (learner updates between the weights that collected a sample and the update
that trains on it), measured by a real serial run: in result.json, the progress line and TensorBoard. The 'fifo' data
flow of IMPALA keeps it below update_per_collect; uniform replay from a large buffer does not."""
from entry_helpers import all_scalars, read_result

FIFO = ["--set", "policy.other.replay_buffer.type=fifo", "--set", "policy.other.replay_buffer.max_use=4",
        "--set", "policy.learn.batch_size=16", "--set", "policy.learn.update_per_collect=4",
        "--set", "policy.collect.n_sample=16", "--set", "policy.learn.learner.hook.log_show_after_iter=4"]


def test_the_fifo_flow_trains_each_unroll_in_the_updates_after_its_collection(cli, in_tmp):
    res = cli.train(*FIFO, "--set", "env.stop_value=None", env_step=3000)
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_impala_seed0"
    result = read_result(run)
    # 16 unrolls x 4 uses = 4 updates x 16: each collection's unrolls in the 4 updates after it, ages 0, 1, 2, 3
    assert result["batch_age"] == {"mean": 1.5, "max": 3}
    assert "| age 1.5/3 |" in (run / "log" / "train.log").read_text()
    ages = [v for tag, _, v in all_scalars(run) if tag == "buffer/batch_age_max"]
    assert ages and set(ages) == {3.0}


def test_uniform_replay_trains_on_older_unrolls_and_says_so(cli, in_tmp):
    """cartpole_impala.py's columnar replay (8 updates of 32 per 16 unrolls, max_use 16, 1,000 slots)."""
    res = cli.train("--set", "env.stop_value=None", "--set", "policy.learn.learner.hook.log_show_after_iter=8",
                    env_step=3000)
    assert res.exit_code == 0, res.output
    age = read_result(in_tmp / "cartpole_impala_seed0")["batch_age"]
    assert age["max"] > 8 and age["mean"] > 3.5
