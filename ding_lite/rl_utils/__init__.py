from .vtrace import (
    VTraceReturns, from_importance_weights, log_rhos_from_log_probs, vtrace_data, vtrace_loss, vtrace_nstep_return,
    vtrace_advantage, compute_importance_weights, vtrace_error_discrete_action, vtrace_error_continuous_action
)
from .acer import (
    AcerTraceBoundaries, AcerPolicyLoss, acer_trace_coef, acer_trace_boundaries, acer_retrace_targets,
    acer_q_opc_targets, acer_state_values, acer_policy_loss_discrete, acer_policy_loss_continuous,
    acer_kl_grad_categorical, acer_kl_grad_gaussian, acer_trust_region_update, acer_trust_region_loss,
    acer_value_target, acer_critic_loss_discrete, acer_critic_loss_continuous
)
