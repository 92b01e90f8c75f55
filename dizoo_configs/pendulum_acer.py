"""Continuous ACER (Gaussian policy, stochastic dueling network critic) on gymnasium Pendulum-v1.

Pendulum never terminates: every episode is truncated at 200 steps, and Retrace bootstraps through the time limit.
Measured (seeds 0, 1, 2): an evaluation mean of -400 at 30k, 37k, 34k env steps and -250 at 34k, 37k, 34k; seed 0 run
on to 150k stays between about -100 and -200.

Run it:  ding_lite -m serial -c dizoo_configs/pendulum_acer.py -s 0
"""
main_config = dict(
    exp_name="pendulum_acer",
    env=dict(
        env_id="Pendulum-v1",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-200,
    ),
    policy=dict(
        cuda=False,
        unroll_len=16,
        model=dict(
            encoder_hidden_size_list=[128, 128],
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
            # Gaussian policy with a state-dependent sigma, starting at 1 (the action range is [-2, 2]).
            sigma_type="conditioned",
            init_sigma=1.0,
            # n actions u_i ~ pi averaged in the stochastic dueling network's Q~ = V + A(a) - mean_i A(u_i).
            sdn_n_samples=5,
        ),
        learn=dict(
            update_per_collect=8,
            batch_size=32,
            learning_rate_actor=0.0005,
            learning_rate_critic=0.001,
            entropy_weight=0.0,
            # Swinging up needs a horizon of a few tens of steps; 0.95 keeps the Q values (rewards -16..0) moderate.
            discount_factor=0.95,
            c_clip_ratio=10.0,
            trust_region=True,
            trust_region_value=1.0,
            target_theta=0.01,
            # Q_opc in the policy gradient, as the paper does for continuous actions (the critic still learns Q_ret).
            use_q_opc=True,
            grad_clip_type="clip_norm",
            clip_value=10.0,
            learner=dict(hook=dict(log_show_after_iter=500)),
        ),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
    ),
)
create_config = dict(
    env=dict(type="gym"),
    env_manager=dict(type="base"),
    policy=dict(type="acer"),
)
