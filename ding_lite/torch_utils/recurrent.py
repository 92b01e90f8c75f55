"""The recurrent core of VAC and ACER (``policy.model.core='lstm'``) and the per-env state it carries.

An LSTM sits between the observation encoder and the heads, as in the IMPALA paper's agent. Its state is one
tensor per env, ``(N, 2, core_size)`` (h and c stacked), so that it travels through the collector, the replay
buffer, checkpoints of nothing (episodes restart on resume) and exports as a single leaf.

Where the state lives and how it moves (the contract the policies and workers keep):

* **Acting** (collector, evaluator, ``predict``): the policy's collect and eval modes each carry the state of every
  env between calls; ``reset(env_ids)`` zeroes the rows of the envs whose episode ended (the collector and the
  evaluator call it after every vector step where some env finished), ``reset(None)`` every row.
* **Storing**: the collect output ``core_state`` is the state the step was taken with; an unroll keeps only the first
  one, ``(1, 2, H)`` per sample: the unroll's initial state.
* **Learning**: :func:`lstm_unroll` replays the T steps of a batch of unrolls from their initial states, zeroing a
  column's state after a step where its episode ended, exactly as acting did; it also returns every step's state
  before that reset, which is what a bootstrap value of the episode's final observation continues from.

The cell is written out (one Linear over ``[x, h]``, gates i, f, g, o as ``torch.nn.LSTMCell``) rather than taken
from ``nn.LSTMCell``: the same arithmetic runs in acting, in the learner's replay and in an ONNX/TorchScript export,
and the replay projects the inputs of all T steps in one matmul (only ``h``'s part is sequential).
"""
from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

CORES = (None, "lstm")


class LSTMCore(nn.Module):
    """An LSTM cell ``(B, input_size)``, state ``(B, 2, hidden_size)`` -> output ``(B, hidden_size)``, next state.

    Initialisation: orthogonal weights, zero biases except the forget gate's, 1 (Jozefowicz et al. 2015).
    """

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.gates = nn.Linear(self.input_size + self.hidden_size, 4 * self.hidden_size)
        nn.init.orthogonal_(self.gates.weight)
        nn.init.zeros_(self.gates.bias)
        with torch.no_grad():
            self.gates.bias[self.hidden_size:2 * self.hidden_size].fill_(1.0)

    @property
    def state_shape(self) -> Tuple[int, int]:
        return (2, self.hidden_size)

    def initial_state(self, batch: int, device=None, dtype=torch.float32) -> torch.Tensor:
        """The state of an episode's start: zeros ``(batch, 2, hidden_size)``."""
        return torch.zeros((batch, 2, self.hidden_size), device=device, dtype=dtype)

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        h, c = self.cell(self.project(x), state[:, 0], state[:, 1])
        return h, torch.stack([h, c], dim=1)

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """The input's part of the gates (and the bias), ``(..., 4 * hidden_size)``: one matmul for all T steps of
        a replay."""
        return F.linear(x, self.gates.weight[:, :self.input_size], self.gates.bias)

    def cell(self, x_proj: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """One step from the projected input ``(B, 4H)`` and ``h``, ``c`` ``(B, H)``: the next ``h``, ``c``."""
        H = self.hidden_size
        gates = torch.addmm(x_proj, h, self.gates.weight[:, self.input_size:].t())
        act = torch.sigmoid(gates)  # i, f, (g unused), o
        c = torch.addcmul(act[:, H:2 * H] * c, act[:, :H], torch.tanh(gates[:, 2 * H:3 * H]))
        return act[:, 3 * H:] * torch.tanh(c), c


def lstm_unroll(core: LSTMCore, x: torch.Tensor, state: torch.Tensor, done: torch.Tensor
                ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Replay ``core`` over T steps: ``x`` (T, B, F) features, ``state`` (B, 2, H) the state before step 0, ``done``
    (T, B) bool, step t ended an episode (the state is zeroed after it).

    Returns ``out`` (T, B, H), ``after`` (T, B, 2, H): the state after each step *before* the reset (what a value of
    that step's true final observation continues from), and the state after the unroll (after the reset, what the
    next step of acting would start from)."""
    keep = (~done).to(x.dtype).unsqueeze(-1)  # (T, B, 1)
    x_proj = core.project(x)  # (T, B, 4H): the input's part of every step in one matmul
    h, c = state[:, 0], state[:, 1]
    hs, cs = [], []
    for t in range(x.shape[0]):
        h, c = core.cell(x_proj[t], h, c)
        hs.append(h)
        cs.append(c)
        h, c = h * keep[t], c * keep[t]
    out = torch.stack(hs)
    return out, torch.stack([out, torch.stack(cs)], dim=2), torch.stack([h, c], dim=1)


def replay_rows(core: LSTMCore, feature: torch.Tensor, state: torch.Tensor, done: torch.Tensor,
                extra_state_index: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """The core's outputs for the rows of a learner's model input: ``feature`` (T*B + E, F), rows t*B + b of the
    unroll steps replayed by :func:`lstm_unroll` from ``state`` (B, 2, H) with the resets of ``done`` (T, B), then E
    rows (the observations after the unrolls and the true final observations the targets bootstrap from) each one
    step on from the state after step ``extra_state_index[e]`` (flat t*B + b) before its reset. Returns the outputs
    (T*B + E, H) and the state after the unrolls (B, 2, H)."""
    T, B = done.shape
    TB = T * B
    out, after, final = lstm_unroll(core, feature[:TB].reshape(T, B, feature.shape[-1]), state, done)
    out = out.reshape(TB, out.shape[-1])
    if feature.shape[0] > TB:
        if extra_state_index is None or extra_state_index.shape[0] != feature.shape[0] - TB:
            raise ValueError(f"replay_rows: {feature.shape[0] - TB} rows after the T*B={TB} unroll steps need as "
                             f"many entries of extra_state_index")
        extra_state = after.reshape(TB, *after.shape[2:]).index_select(0, extra_state_index)
        out = torch.cat([out, core(feature[TB:], extra_state)[0]], dim=0)
    return out, final


def replay_rows_paired(cores: Sequence[LSTMCore], features: Sequence[torch.Tensor], state: torch.Tensor,
                       done: torch.Tensor, extra_state_index: Optional[torch.Tensor] = None
                       ) -> Tuple[List[torch.Tensor], torch.Tensor]:
    """:func:`replay_rows` of k cores of the same sizes at once (the actor's and the critic's LSTMs when they do not
    share an encoder): their weights stacked, one batched matmul per step for all of them, which halves the
    sequential steps' ops (forward and backward) against two replays. ``features`` k tensors (T*B + E, F);
    ``state`` (B, 2k, H), core i's h and c at rows 2i, 2i+1. Returns the k outputs (T*B + E, H) and the state after
    the unrolls (B, 2k, H)."""
    k, (T, B) = len(cores), done.shape
    TB, H, F_in = T * B, cores[0].hidden_size, cores[0].input_size
    weight = torch.stack([core.gates.weight for core in cores])  # (k, 4H, F + H)
    bias = torch.stack([core.gates.bias for core in cores])
    x_proj = torch.baddbmm(bias.unsqueeze(1), torch.stack(list(features)), weight[:, :, :F_in].transpose(1, 2))
    w_h = weight[:, :, F_in:].transpose(1, 2)  # (k, H, 4H)

    def cell(xp: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        gates = torch.baddbmm(xp, h, w_h)
        act = torch.sigmoid(gates)
        c = torch.addcmul(act[..., H:2 * H] * c, act[..., :H], torch.tanh(gates[..., 2 * H:3 * H]))
        return act[..., 3 * H:] * torch.tanh(c), c

    s = state.reshape(B, k, 2, H).transpose(0, 1)  # (k, B, 2, H)
    h, c = s[:, :, 0], s[:, :, 1]
    keep = (~done).to(x_proj.dtype).unsqueeze(-1)  # (T, B, 1), broadcast over k
    steps = x_proj[:, :TB].reshape(k, T, B, 4 * H)
    hs, cs = [], []
    for t in range(T):
        h, c = cell(steps[:, t], h, c)
        hs.append(h)
        cs.append(c)
        h, c = h * keep[t], c * keep[t]
    out = torch.stack(hs, dim=1).reshape(k, TB, H)
    if x_proj.shape[1] > TB:
        if extra_state_index is None or extra_state_index.shape[0] != x_proj.shape[1] - TB:
            raise ValueError(f"replay_rows_paired: {x_proj.shape[1] - TB} rows after the T*B={TB} unroll steps need "
                             f"as many entries of extra_state_index")
        h_e = out.index_select(1, extra_state_index)
        c_e = torch.stack(cs, dim=1).reshape(k, TB, H).index_select(1, extra_state_index)
        out = torch.cat([out, cell(x_proj[:, TB:], h_e, c_e)[0]], dim=1)
    final = torch.stack([h, c], dim=2).transpose(0, 1).reshape(B, 2 * k, H)
    return list(out.unbind(0)), final


def check_core_config(cfg, path: str) -> None:
    """``core`` is None or 'lstm'; ``core_size`` a positive int (``cfg`` is a model section at ``path``)."""
    from ding_lite.utils import ConfigError

    if cfg.core not in CORES:
        raise ConfigError(f"{path}.core={cfg.core!r}: must be None (feed-forward) or 'lstm' (an LSTM between the "
                          f"encoder and the heads, its state carried per env)")
    size = cfg.core_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"{path}.core_size={size!r}: must be a positive int (the LSTM's hidden size)")
