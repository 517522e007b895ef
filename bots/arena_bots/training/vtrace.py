"""V-trace targets and the actor-critic loss (IMPALA, Espeholt et al. 2018; seed 003).

Trajectories are time-major: T steps of L lanes (a lane is one seat of one environment, its games
played one after another). With V the critic's values (T + 1, L) (the last row bootstraps the
segment), r the rewards (T, L), d whether a game ended at the step (then nothing is bootstrapped
across it) and the importance ratio pi(a|x) / mu(a|x) of the learner's policy pi to the policy mu
that played:
    rho_t = min(rho_bar, ratio_t),  c_t = min(c_bar, ratio_t)
    delta_t = rho_t * (r_t + gamma (1 - d_t) V_{t+1} - V_t)
    v^(n)_s = V_s + sum_{k < n} gamma^k (prod_{s <= i < s + k} c_i (1 - d_i)) delta_{s + k}
(the sum stops at the segment's end). One step (n = 1) is the seed's V(s) + min(rho_bar, pi/mu) *
(r + V(s') - V(s)); n steps clip the first n - 1 traces with c_bar instead. The policy gradient's
advantage is rho_s * (r_s + gamma (1 - d_s) v^(n-1)_{s+1} - V_s), with v^(0) = V: the TD error
for n = 1.

Loss = -mean(advantage * log pi(a)) + value_weight * mean((V - v^(n))^2) - entropy_weight * mean(H(pi)),
targets and advantages held constant; pi is the softmax over the legal actions only.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

ILLEGAL_LOGIT = -1e9  # what masks an illegal action's logit before the softmax


@dataclass(frozen=True)
class VtraceSettings:
    steps: int = 1  # n: 1 is one-step V-trace
    gamma: float = 1.0  # the seed's: a game's only reward is its result
    rho_bar: float = 1.0  # clips the importance weight of each TD error
    c_bar: float = 1.0  # clips the traces of the n-step sum


def n_step_corrections(delta: torch.Tensor, traces: torch.Tensor, steps: int) -> torch.Tensor:
    """(T, L): sum_{k < steps} (prod_{s <= i < s + k} traces_i) delta_{s + k}, stopping at the end."""
    total = torch.zeros_like(delta)
    weight = torch.ones_like(delta)
    length = delta.shape[0]
    for k in range(min(steps, length)):
        total[: length - k] += weight[: length - k] * delta[k:]
        weight[: length - k - 1] *= traces[k : length - 1]
    return total


def vtrace(
    values: torch.Tensor,
    rewards: torch.Tensor,
    dones: torch.Tensor,
    log_ratio: torch.Tensor,
    settings: VtraceSettings,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(targets v^(n) (T, L), advantages (T, L)) as in the module's doc; no gradient flows.

    values (T + 1, L); rewards, log_ratio (log pi - log mu) (T, L); dones bool (T, L)."""
    with torch.no_grad():
        ratio = torch.exp(log_ratio)
        rho = torch.clamp(ratio, max=settings.rho_bar)
        carry = settings.gamma * (~dones).to(values.dtype)
        delta = rho * (rewards + carry * values[1:] - values[:-1])
        traces = torch.clamp(ratio, max=settings.c_bar) * carry
        targets = values[:-1] + n_step_corrections(delta, traces, settings.steps)
        shorter = values[1:].clone()  # v^(n-1) of each next state; the bootstrap row stays V
        shorter[:-1] += n_step_corrections(delta, traces, settings.steps - 1)[1:]
        advantages = rho * (rewards + carry * shorter - values[:-1])
    return targets, advantages


def masked_log_policy(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """(N, A) log-probabilities of the softmax over the legal actions (about -1e9 elsewhere)."""
    return torch.log_softmax(logits.masked_fill(~legal, ILLEGAL_LOGIT), dim=-1)


def entropy(log_policy: torch.Tensor) -> torch.Tensor:
    """(N,) entropy in nats of each row's policy (illegal actions have probability 0)."""
    return -(log_policy.exp() * log_policy).sum(dim=-1)


@dataclass(frozen=True)
class LossParts:
    total: torch.Tensor
    policy: float
    value: float
    entropy: float


def actor_critic_loss(
    log_policy: torch.Tensor,
    actions: torch.Tensor,
    values: torch.Tensor,
    targets: torch.Tensor,
    advantages: torch.Tensor,
    *,
    value_weight: float,
    entropy_weight: float,
) -> LossParts:
    """The loss of the module's doc over N positions: log_policy (N, A) of the learner, actions
    int64 (N,), values (N,) with gradient, targets and advantages (N,) constant."""
    chosen = log_policy.gather(1, actions[:, None]).squeeze(1)
    policy_loss = -(advantages * chosen).mean()
    value_loss = torch.mean((values - targets) ** 2)
    bonus = entropy(log_policy).mean()
    total = policy_loss + value_weight * value_loss - entropy_weight * bonus
    return LossParts(total, policy_loss.item(), value_loss.item(), bonus.item())
