"""Named network configs for the papers' model sizes: `presets.get("az_paper")`, `presets.names()`.

Parameter counts (tests/test_models_presets.py checks them against the papers):
  az_paper            AlphaZero ResNet, 19 blocks x 256 filters (Silver et al. 2018)
  resnet_6x64, resnet_2x32                  small ResNets for CPU self-play
  searchless_9m / _136m / _270m             Ruoss et al. 2024, action-value predictors, K = 128 bins
  searchless_ablation                       the 9M architecture the paper's ablations start from
  chessformer_4m / _2_5m                    Chessformer ablation models (4.01M / 2.51M in the paper)
  chessformer_191m                          the large model: 15 layers, d 1024, pooled GAB
  chessformer_4m_absolute / _relative_2d    position-encoding ablations replacing GAB
Chessformer presets read the 112-feature square encoding and output the compact 1858 space, as the
paper's supervised models do; `make_network` swaps in pgx's 119 planes and 4672 actions for self-play.
"""
from __future__ import annotations

import dataclasses

from models.chessformer import ChessformerConfig
from models.network import NetworkConfig
from models.resnet import ResNetConfig
from models.searchless import SearchlessConfig


def _resnet(**kw) -> NetworkConfig:
    return NetworkConfig(family="resnet", resnet=ResNetConfig(**kw))


def _searchless(**kw) -> NetworkConfig:
    return NetworkConfig(family="searchless", searchless=SearchlessConfig(**kw))


def _chessformer(**kw) -> NetworkConfig:
    kw = {"input_features": 112, "policy_space": "compact", **kw}
    return NetworkConfig(family="chessformer", chessformer=ChessformerConfig(**kw))


_CF_4M = dict(num_layers=8, embedding_dim=256, head_dim=32, mlp_dim=256, gab_d1=8, gab_d2=32, gab_d3=32)

PRESETS: dict[str, NetworkConfig] = {
    "az_paper": _resnet(num_blocks=19, filters=256),
    "resnet_6x64": _resnet(num_blocks=6, filters=64),
    "resnet_2x32": _resnet(num_blocks=2, filters=32),
    "searchless_9m": _searchless(num_layers=8, num_heads=8, embedding_dim=256),
    "searchless_136m": _searchless(num_layers=8, num_heads=8, embedding_dim=1024),
    "searchless_270m": _searchless(num_layers=16, num_heads=8, embedding_dim=1024),
    "searchless_ablation": _searchless(num_layers=8, num_heads=8, embedding_dim=256),
    "chessformer_4m": _chessformer(**_CF_4M),
    "chessformer_2_5m": _chessformer(**{**_CF_4M, "embedding_dim": 192}),
    "chessformer_191m": _chessformer(num_layers=15, embedding_dim=1024, head_dim=32, mlp_dim=1536,
                                     gab_d2=256, gab_d3=256, gab_pooled=True),
    "chessformer_4m_absolute": _chessformer(**_CF_4M, position_encoding="absolute"),
    "chessformer_4m_relative_2d": _chessformer(**_CF_4M, position_encoding="relative_2d"),
}


def names() -> list[str]:
    return list(PRESETS)


def get(name: str, **family_overrides) -> NetworkConfig:
    """The preset `name`; keyword overrides replace fields of its family block,
    e.g. `get("searchless_9m", predictor="behavioral_cloning")`."""
    if name not in PRESETS:
        raise ValueError(f"unknown network preset '{name}' (known: {', '.join(PRESETS)})")
    cfg = PRESETS[name]
    if family_overrides:
        block = dataclasses.replace(getattr(cfg, cfg.family), **family_overrides)
        cfg = dataclasses.replace(cfg, **{cfg.family: block})
    return cfg
