"""PPO on MuJoCo HalfCheetah-v5 (needs gymnasium's mujoco extra: ``pip install "gymnasium[mujoco]"``). A long run, not
part of CI: the issue-47 benchmark trains 3 seeds for 300k env steps beside Tianshou's published PPO.

Tianshou's published MuJoCo PPO settings (examples/mujoco/mujoco_ppo.py at its benchmark's commit), but for the
differences docs/ppo.md measures: 2,048 env steps per collection, 10 epochs of 32 minibatches of 64 steps, learning
rate 3e-4, gamma 0.99, GAE lambda 0.95, clip 0.2, no entropy bonus, gradient norm clipped at 0.5 (actor and critic
together), separate actor and critic of two 64-unit tanh layers, state-independent log std starting at -0.5,
observations normalised by running statistics, value targets normalised by the running std of the returns
(``value_norm``, Tianshou's rew_norm), no advantage normalisation. Different here: 8 envs x 256 steps per collection
(Tianshou's 64 x 32), the rate annealed linearly to 0 at 300k env steps (Tianshou's reaches 0 at 3M), and the value
loss value_weight x 0.5 (V - R)^2 with value_weight 0.25 (Tianshou's 0.25 (V - R)^2); also off: Tianshou's
recomputation of the advantages before each epoch (``--set policy.learn.recompute_adv=True``). Evaluation: 10
deterministic episodes every 5 collections (Tianshou's are stochastic).

Run it:  ding_lite -m serial -c dizoo_configs/halfcheetah_ppo.py -s 0 --env-step 300000 --set torch_threads=1
"""
main_config = dict(
    exp_name="halfcheetah_ppo",
    env=dict(
        env_id="HalfCheetah-v5",
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=None,
        normalize_obs=True,
    ),
    policy=dict(
        cuda=False,
        unroll_len=256,
        model=dict(
            share_encoder=False,
            encoder_hidden_size_list=[64, 64],
            actor_head_layer_num=0,  # the heads are single linear layers on the two 64-unit layers
            critic_head_layer_num=0,
            activation="tanh",
            init_sigma=0.6065,  # exp(-0.5)
        ),
        learn=dict(
            batch_size=8,
            epochs=10,
            minibatch_size=64,
            learning_rate=0.0003,
            # 300k env steps are 146 collections of 2,048: the rate reaches 0 at the benchmark's budget.
            lr_scheduler=dict(type="linear", over="env_step", steps=300_000),
            clip_ratio=0.2,
            value_weight=0.25,
            entropy_weight=0.0,
            value_norm=True,
            normalize_advantage=False,
            discount_factor=0.99,
            gae_lambda=0.95,
            learner=dict(hook=dict(log_show_after_iter=10)),
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=5)),
        other=dict(replay_buffer=dict(replay_buffer_size=8)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
