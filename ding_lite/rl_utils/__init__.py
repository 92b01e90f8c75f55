from .vtrace import (
    VTraceReturns, from_importance_weights, log_rhos_from_log_probs, vtrace_data, vtrace_loss, vtrace_nstep_return,
    vtrace_advantage, compute_importance_weights, vtrace_error_discrete_action, vtrace_error_continuous_action
)
