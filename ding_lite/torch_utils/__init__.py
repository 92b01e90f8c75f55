from .distributions import (ACTION_SPACES, MultiCategorical, kl, make_dist, sample_action, greedy_action, epsilon_greedy,
                            mask_logits)
from .network import activation, mlp, flat_dim
from .optimizer import make_optimizer, adam_step, grad_norm, GradClipper
from .tree import tree_map, tree_stack, tree_cat
from .target_network import polyak_update
from .conv import ENCODER_REGISTRY, build_encoder, encoder_types, pixels_to_float
