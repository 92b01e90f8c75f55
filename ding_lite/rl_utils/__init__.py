"""Pure loss and target math. DI-engine's V-trace API is in :mod:`.vtrace_dingengine_compat` (not re-exported)."""
from .vtrace import VTraceReturns, from_importance_weights
from .acer import (
    AcerTraceBoundaries, AcerPolicyLoss, acer_trace_coef, acer_trace_boundaries, acer_retrace_targets,
    acer_q_opc_targets, acer_state_values, acer_policy_loss_discrete, acer_policy_loss_continuous,
    acer_kl_grad_categorical, acer_kl_grad_gaussian, acer_trust_region_update, acer_trust_region_loss,
    acer_value_target, acer_critic_loss_discrete, acer_critic_loss_continuous
)
from .sac import (
    squashed_gaussian_action, squashed_gaussian_sample, squashed_gaussian_log_prob, log_one_minus_tanh_sq, ensemble_min,
    gather_q, boltzmann_policy, discrete_entropy, discrete_soft_value, sac_critic_target, discrete_sac_critic_target,
    mixed_sac_critic_target, sac_critic_loss, sac_actor_loss, discrete_sac_actor_loss, mixed_sac_actor_loss,
    mixed_joint_log_prob, sac_alpha_loss, sac_alpha_loss_from_entropy, clamp_log_alpha_, continuous_target_entropy,
    discrete_target_entropy
)
from .ppo import (GAEReturns, PPOPolicyLoss, gae, gae_next_value_rows, impact_old_log_prob, normalized_advantages,
                  ppo_policy_loss, ppo_value_loss, weighted_mean)
