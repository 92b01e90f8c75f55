"""Runs the user policy of my_impala.py on CartPole-v1:

    ding_lite -m serial -c docs/examples/cartpole_my_impala.py -s 0

``import_names`` modules are imported from the current directory or from this config file's directory.
"""
main_config = dict(
    exp_name="cartpole_my_impala",
    env=dict(env_id="CartPole-v1", collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=475),
    policy=dict(
        # The key my_impala.py adds; validated by its check_config.
        reward_clip=1.0,
        unroll_len=16,
        model=dict(encoder_hidden_size_list=[64, 64]),
        learn=dict(batch_size=32, learning_rate=0.001, entropy_weight=0.01, lambda_=1.0),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    policy=dict(type="my_impala", import_names=["my_impala"]),
)
