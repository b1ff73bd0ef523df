"""One entry point for search, self-play and training: `make_network(cfg, game_spec)`.

    net = make_network(NetworkConfig(family="resnet"), games.make("chess").spec)
    variables = net.init(key, obs, train=False)            # obs [B, *game_spec.observation_shape]
    out = net.apply(variables, obs, train=False)            # NetworkOutput
    out, updates = net.apply(variables, obs, train=True, mutable=["batch_stats"])

`out.policy_logits` is [B, game_spec.num_actions] in pgx's action order; `out.value` [B] in [-1, 1]
from the side to move; `out.wdl_logits` [B, 3] or None. A self-play config switches family with
one key (`network.family=chessformer`).
"""
from __future__ import annotations

import dataclasses
from typing import Literal

import flax.linen as nn

from models.output import NetworkOutput, wdl_to_value  # noqa: F401  (re-exported)
from models.resnet import ResNet, ResNetConfig

Family = Literal["resnet", "chessformer"]


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Which network family plays (self-play) and its hyper-parameters; only `family`'s block is used."""

    family: Family = "resnet"  # "resnet" (any game) or "chessformer" (chess only)
    resnet: ResNetConfig = ResNetConfig()  # used when family == "resnet"


def make_network(cfg: NetworkConfig, game_spec) -> nn.Module:
    """A flax module mapping pgx observations [B, *observation_shape] to a NetworkOutput."""
    if cfg.family == "resnet":
        return ResNet(cfg.resnet, num_actions=game_spec.num_actions,
                      chess_policy=game_spec.name == "chess")
    raise ValueError(f"unknown network family '{cfg.family}' (known: resnet, chessformer)")
