"""Continuous SAC's update with its gradients written out by hand (``learn.manual_update``): the same losses as
:meth:`~.continuous.ContinuousSAC.losses`, without autograd.

Why: at SAC's sizes on a CPU (batch 256, [256, 256] networks) an autograd update spends about a third of its time
outside the matmuls, in some 150 small operations and the autograd engine's bookkeeping. Written out, the update is
the matmuls plus a few fused elementwise passes:

* the actor runs once on ``[s'; s]`` (2B rows) instead of twice;
* the online critics run once on ``[(s, a); (s, a~pi(s))]`` (2B rows): the first B rows make the critic loss, the
  last B the actor loss, whose gradient goes back to the action only (no weight gradients for those rows);
* every backward step is the matmul it needs and one pass for the activation's derivative.

It applies to the built-in QAC model with an MLP actor and an :class:`~ding_lite.torch_utils.network.EnsembleMLP`
of critics, whose activations are ReLU or tanh (:func:`unsupported`); the policy falls back to autograd otherwise.
``tests/policy/test_sac_manual.py`` checks every gradient against autograd's on the same random numbers. The same
functions run as one ``torch.compile`` program in :mod:`.compiled_update`.

Shapes: B transitions, N critics, O observation features, D action dims, H hidden units; the actor's layers are
``nn.Linear`` (weight (out, in)), the critics' ``EnsembleLinear`` (weight (N, in, out), bias (N, 1, out)).
"""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from ding_lite.rl_utils import sac as S
from ding_lite.torch_utils.network import EnsembleLinear, EnsembleMLP

from .acting import act_ as _act_
from .acting import activation_name, mlp_actor_activation
from .action_space import SACActionSpace, SACLosses, Tensors
from .update import AfterGradients


def unsupported(model: nn.Module) -> Optional[str]:
    """Why :class:`ManualUpdate` cannot run ``model``'s update (for the config error); None if it can."""
    from ding_lite.model.qac import QAC
    if type(model) is not QAC:
        return f"the model is a {type(model).__name__}, not the built-in QAC"
    if model.action_space != "continuous":
        return f"the action space is '{model.action_space}', not 'continuous'"
    if not isinstance(model.actor, nn.Sequential) or not isinstance(model.critic, EnsembleMLP):
        return "the actor or the critics are not the built-in MLPs"
    if any(p.requires_grad for p in model.flatten_obs.parameters()):
        return "the observation flattener has parameters"
    act = mlp_actor_activation(model)
    if act is None or activation_name(list(model.critic.net)) != act:
        return "the activations are not ReLU or tanh (the same in the actor and the critics, with a hidden layer)"
    return None



def _act_backward(grad: torch.Tensor, out: torch.Tensor, name: str, in_place: bool) -> torch.Tensor:
    """The gradient at an activation's input from the gradient ``grad`` at its output and the output ``out`` (ReLU:
    grad where out > 0; tanh: grad (1 - out^2)); one pass, written over ``grad`` when ``in_place``."""
    if name == "relu":
        op = torch.ops.aten.threshold_backward
        return op.grad_input(grad, out, 0.0, grad_input=grad) if in_place else op(grad, out, 0.0)
    op = torch.ops.aten.tanh_backward
    return op.grad_input(grad, out, grad_input=grad) if in_place else op(grad, out)



class Workspace:
    """Tensors kept from one update to the next for the large intermediate results (``out=``), so that an update
    allocates almost nothing: fresh megabyte-sized tensors each update cost page faults once glibc trims its heap
    (measured 200-1,000 per update at [256, 256] without this)."""

    def __init__(self) -> None:
        self._tensors: Dict[Tuple[str, Tuple[int, ...]], torch.Tensor] = {}

    def __call__(self, name: str, shape: Sequence[int], like: torch.Tensor) -> torch.Tensor:
        key = (name, tuple(shape))
        t = self._tensors.get(key)
        if t is None or t.device != like.device or t.dtype != like.dtype:
            t = self._tensors[key] = torch.empty(key[1], device=like.device, dtype=like.dtype)
        return t



class ManualUpdate:
    """Continuous SAC's update with hand-written gradients (an :class:`~.update.UpdateEngine`; see the module doc):
    the critic, actor and temperature losses exactly as ``ContinuousSAC.losses`` (same random numbers, drawn in the
    same order), their gradients written into the parameters' ``.grad``, then the step and the targets' update
    (:class:`~.update.AfterGradients`) as the reference update takes them."""

    def __init__(self, actions: SACActionSpace, target_critic: nn.Module, target_entropy: List[float],
                 after: AfterGradients) -> None:
        model = actions.model
        self.actions, self.target_entropy, self.after, self.log_alpha = actions, target_entropy, after, after.log_alpha
        self.act = activation_name(list(model.actor))
        self.actor_layers: List[nn.Linear] = [m for m in model.actor if isinstance(m, nn.Linear)]
        self.critic_layers: List[EnsembleLinear] = [m for m in model.critic.net if isinstance(m, EnsembleLinear)]
        # Flat [weight, bias, weight, bias, ...] of the online and the target critics, as _critic_forward takes them.
        self.online_layers = [p for m in self.critic_layers for p in (m.weight, m.bias)]
        self.target_layers = [p for m in target_critic.net if isinstance(m, EnsembleLinear) for p in (m.weight, m.bias)]
        self.log_std_min, self.log_std_max = model.log_std_min, model.log_std_max
        # The parameters in the order of the gradients that _losses_and_grads returns.
        self.params = self.online_layers + [p for m in self.actor_layers for p in (m.weight, m.bias)]
        self.ws: Optional[Workspace] = Workspace()

    @torch.no_grad()
    def __call__(self, batch: Tensors, alphas: torch.Tensor, step: int, update_targets: bool) -> SACLosses:
        """Losses and hand-written gradients -> Adam's step -> target critics, on B transitions."""
        losses = self._set_gradients(self._losses_and_grads(*self._inputs(batch, alphas)))
        losses.info["grad_norm"] = self.after.step()
        if update_targets:
            self.after.update_targets()
        return losses

    def _inputs(self, batch: Tensors, alphas: torch.Tensor) -> tuple:
        """:meth:`_losses_and_grads`' arguments from a batch: flattened observations ``obs``, ``next_obs`` (B, O),
        ``action`` (B, D) in [-1, 1], ``reward`` and ``terminated`` (B,) float, ``gamma`` a number or (B,), the
        0-dim temperature, the target entropy, ``weight`` (B,) importance weights of the critics' loss or None, and
        the noise (2B, D), drawn as the autograd update draws it: the s' rows first, then the s rows."""
        action, flat = batch["action"], self.actions.model.flatten_obs
        B, D = action.shape
        eps = torch.empty(2 * B, D, dtype=action.dtype, device=action.device)
        eps[:B].normal_(), eps[B:].normal_()
        return (flat(batch["obs"]), action, flat(batch["next_obs"]), batch["reward"],
                self.actions._terminated(batch), self.actions._discount(batch), alphas[0], self.target_entropy[0],
                batch.get("weight"), eps)

    def _set_gradients(self, out: tuple) -> SACLosses:
        """The losses of :meth:`_losses_and_grads`' output ``out``, its gradients set as the parameters' ``.grad``
        (and log alpha's when it is tuned), every tensor detached."""
        critic_loss, actor_loss, alpha_loss, q, target, logp_mean, grads = out
        for p, grad in zip(self.params, grads):
            p.grad = grad
        if self.after.auto_alpha:
            self.log_alpha.grad = (-(logp_mean + self.target_entropy[0])).reshape(1)
        return SACLosses(critic_loss, actor_loss, alpha_loss, q, target, {"entropy": -logp_mean})

    def _out(self, name: str, shape: Sequence[int], like: torch.Tensor) -> Optional[torch.Tensor]:
        """A kept tensor for an ``out=`` argument (None, a fresh result, when compiled)."""
        return None if self.ws is None else self.ws(name, shape, like)

    # ---- forward passes that keep what their backward needs ----------------------------------------------------
    def _actor_forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        """(M, O) -> the actor's output (M, 2D) and each hidden layer's output (M, H)."""
        hidden = []
        for i, layer in enumerate(self.actor_layers[:-1]):
            out = self._out(f"actor{i}", (x.shape[0], layer.out_features), x)
            x = _act_(torch.addmm(layer.bias, x, layer.weight.t(), out=out), self.act)
            hidden.append(x)
        last = self.actor_layers[-1]
        return torch.addmm(last.bias, x, last.weight.t()), hidden

    def _critic_forward(self, x: torch.Tensor, layers: List[torch.Tensor], name: str
                        ) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        """(M, O + D) -> Q (N, M) of every replica and each hidden layer's output (N, M, H). ``layers``: the
        flat [weight, bias, weight, bias, ...] of the online or the target critics (``name``)."""
        n = layers[0].shape[0]
        h, hidden = x.unsqueeze(0).expand(n, *x.shape), []
        for i in range(0, len(layers) - 2, 2):
            out = self._out(f"{name}{i}", (n, x.shape[0], layers[i].shape[-1]), x)
            h = _act_(torch.baddbmm(layers[i + 1], h, layers[i], out=out), self.act)
            hidden.append(h)
        # One output unit: a dot product per row (one pass over h), 4-5x faster than a (M, H) x (H, 1) matmul here.
        return torch.linalg.vecdot(h, layers[-2].transpose(1, 2)) + layers[-1].squeeze(-1), hidden

    # ---- the losses and their gradients ---------------------------------------------------------------------------
    def _losses_and_grads(self, obs: torch.Tensor, action: torch.Tensor, next_obs: torch.Tensor,
                          reward: torch.Tensor, terminated: torch.Tensor, gamma: Union[float, torch.Tensor],
                          alpha: torch.Tensor, target_entropy: float, weight: Optional[torch.Tensor],
                          eps: torch.Tensor) -> tuple:
        """The update's math on its inputs (:meth:`_inputs`; the noise ``eps`` (2B, D) last): the three losses, q,
        the target, mean log pi(a|s) and the gradients of :attr:`params`."""
        B, D = action.shape
        inv_b = 1.0 / B
        # The actor on [s'; s]: its s' half acts for the critics' target, its s half for the actor's loss.
        out, actor_hidden = self._actor_forward(torch.cat([next_obs, obs]))
        mu, raw_log_std = out[:, :D], out[:, D:]
        log_std = raw_log_std.clamp(self.log_std_min, self.log_std_max)
        a_all, logp_all = S.squashed_gaussian_sample(mu, log_std=log_std, noise=eps)
        a2, logp2, a_pi, logp = a_all[:B], logp_all[:B], a_all[B:], logp_all[B:]

        # Critic target y = r + gamma (1 - terminated) (min_i Q_i'(s', a') - alpha log pi(a'|s')).
        q2, _ = self._critic_forward(torch.cat([next_obs, a2], dim=-1), self.target_layers, "target")
        target = S.sac_critic_target(reward, q2, logp2, alpha, gamma, terminated)

        # The online critics on [(s, a); (s, a_pi)].
        critic_in = torch.cat([torch.cat([obs, obs]), torch.cat([action, a_pi])], dim=-1)
        q_all, critic_hidden = self._critic_forward(critic_in, self.online_layers, "critic")
        q, q_pi = q_all[:, :B], q_all[:, B:]
        # The losses' values from the paper's functions (rl_utils.sac), as the autograd update computes them.
        critic_loss = S.sac_critic_loss(q, target, weight)
        actor_loss = S.sac_actor_loss(q_pi, logp, alpha)
        alpha_loss = S.sac_alpha_loss(self.log_alpha[0], logp, target_entropy)

        # d loss / d Q: the critics' loss on the first B rows, the actor's (-1/B at the minimum replica) on the rest.
        td = q - target
        grad_pi = torch.zeros_like(q_pi).scatter_(0, q_pi.argmin(0, keepdim=True), -inv_b)
        grad_q = torch.cat([(2.0 * inv_b) * (td if weight is None else td * weight), grad_pi], dim=1)
        critic_grads, grad_a = self._critic_backward(critic_in, critic_hidden, grad_q, B, D)  # grad_a (B, D)

        # Back through a = tanh(u), u = mu + std eps and log pi: d log pi / d u = 2 tanh(u), d log pi / d log_std =
        # -1 (directly), the actor loss weighing each log pi(a_b|s_b) by alpha / B.
        grad_u = grad_a * (1.0 - a_pi.square()) + (2.0 * inv_b) * alpha * a_pi
        grad_log_std = grad_u * log_std[B:].exp() * eps[B:] - alpha * inv_b
        in_range = (raw_log_std[B:] >= self.log_std_min) & (raw_log_std[B:] <= self.log_std_max)
        grad_out = torch.cat([grad_u, grad_log_std * in_range], dim=-1)
        actor_grads = self._actor_backward(obs, [h[B:] for h in actor_hidden], grad_out)
        return critic_loss, actor_loss, alpha_loss, q, target, logp.mean(), critic_grads + actor_grads

    def _critic_backward(self, x: torch.Tensor, hidden: List[torch.Tensor], grad_q: torch.Tensor, n_weighted: int,
                         n_action: int) -> Tuple[List[torch.Tensor], torch.Tensor]:
        """Back through the online critics from d loss / d Q (N, M): weight gradients from the first ``n_weighted``
        rows only (the critics' loss; the other rows' loss trains the actor alone). Returns the gradients of every
        layer's weight and bias, in order, and d loss / d action for the other rows, (M - n_weighted, D) summed
        over the replicas (the action: the input's last ``n_action`` columns)."""
        rows, layers, in_place = slice(0, n_weighted), self.critic_layers, self.ws is not None
        grads: List[torch.Tensor] = []
        g = grad_q.unsqueeze(-1)  # (N, M, 1)
        for i in range(len(layers) - 1, -1, -1):
            weight = layers[i].weight
            below = hidden[i - 1] if i > 0 else x.unsqueeze(0).expand(g.shape[0], *x.shape)
            if weight.shape[-1] == 1:  # one output unit: sum_m h_m g_m, not a matmul (as in the forward pass)
                product = torch.mul(below[:, rows], g[:, rows], out=self._out("critic_hg", below[:, rows].shape, g))
                weight_grad = product.sum(1).unsqueeze(-1)
            else:
                weight_grad = torch.bmm(below[:, rows].transpose(1, 2), g[:, rows],
                                        out=self._out(f"critic_w{i}", weight.shape, g))
            grads[:0] = [weight_grad, g[:, rows].sum(1, keepdim=True)]
            if i > 0:  # (N, M, out) -> (N, M, in); an output of one unit is a broadcast product, not a matmul
                out = self._out(f"critic_g{i}", below.shape, g)
                g = torch.mul(g, weight.transpose(1, 2), out=out) if g.shape[-1] == 1 else \
                    torch.bmm(g, weight.transpose(1, 2), out=out)
                g = _act_backward(g, below, self.act, in_place)
        grad_action = torch.bmm(g[:, n_weighted:], layers[0].weight[:, -n_action:].transpose(1, 2)).sum(0)
        return grads, grad_action

    def _actor_backward(self, x: torch.Tensor, hidden: List[torch.Tensor], grad_out: torch.Tensor
                        ) -> List[torch.Tensor]:
        """Back through the actor MLP from d loss / d output (B, 2D) at input ``x`` (B, O) with hidden outputs
        ``hidden``; returns the gradients of every layer's weight and bias, in order."""
        g, layers, in_place = grad_out, self.actor_layers, self.ws is not None
        grads: List[torch.Tensor] = []
        for i in range(len(layers) - 1, -1, -1):
            weight = layers[i].weight
            below = hidden[i - 1] if i > 0 else x
            grads[:0] = [torch.mm(g.t(), below, out=self._out(f"actor_w{i}", weight.shape, g)), g.sum(0)]
            if i > 0:
                g = _act_backward(torch.mm(g, weight, out=self._out(f"actor_g{i}", below.shape, g)), below, self.act,
                                  in_place)
        return grads
