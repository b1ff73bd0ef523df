"""Students: the models/ network a StudentConfig and target describe, and what it predicts.

    net_cfg = network_config(cfg.student, "av")           # models.NetworkConfig
    module = models.network.make_student(net_cfg)
    out = predict(module, net_cfg, variables, batch, "av")  # StudentOutput(logprobs [B, K | 1968] | value [B])

Searchless transformer (family "searchless"): AV tokens [B, 78] -> K bins, SV tokens [B, 77] -> K
bins, BC tokens [B, 77] -> 1968 actions, AV-all tokens [B, 77] -> 1968 win-probability logits.
Chessformer (family "chessformer", squares [B, 64, 112]): BC and AV-all from its attention policy
head over the 1968 vocabulary (softmax, or a sigmoid per move), SV from its WDL value ((v + 1) / 2,
trained by L2); it has no action input, so no per-pair AV.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from models import ChessformerConfig, NetworkConfig, SearchlessConfig, presets

PREDICTOR = {"av": "action_value", "av_all": "all_action_values", "sv": "state_value",
             "bc": "behavioral_cloning"}
STUDENT_DIR = "student"  # the student's network directory inside train.out_dir


class StudentOutput(NamedTuple):
    """What a student predicts for a batch: exactly one field is set."""

    logprobs: Optional[jax.Array] = None  # [B, K] value bins (AV/SV) or [B, 1968] actions (BC)
    value: Optional[jax.Array] = None  # [B] win probability in [0, 1] (Chessformer SV, trained by L2)
    move_logits: Optional[jax.Array] = None  # [B, 1968] AV-all: sigmoid = each move's win probability


def network_config(student, target: str) -> NetworkConfig:
    """The models.NetworkConfig of a distill StudentConfig for target 'av', 'sv' or 'bc'."""
    if target not in PREDICTOR:
        raise ValueError(f"unknown target {target!r} (use av, av_all, sv or bc)")
    if student.family == "searchless":
        fields = dict(predictor=PREDICTOR[target], num_return_buckets=student.num_bins,
                      compute_dtype=student.compute_dtype)
        if student.preset:
            return _preset(student.preset, "searchless", **fields)
        return NetworkConfig(family="searchless", searchless=SearchlessConfig(
            num_layers=student.num_layers, num_heads=student.num_heads,
            embedding_dim=student.embedding_dim, widening_factor=student.widening_factor, **fields))
    if student.family == "chessformer":
        if target == "av":
            raise ValueError("the Chessformer has no action input: train it with target av_all, sv or bc")
        fields = dict(input_features=112, policy_space="uci_vocab", compute_dtype=student.compute_dtype)
        if student.preset:
            return _preset(student.preset, "chessformer", **fields)
        return NetworkConfig(family="chessformer", chessformer=ChessformerConfig(
            num_layers=student.num_layers, embedding_dim=student.embedding_dim,
            head_dim=student.embedding_dim // student.num_heads,
            mlp_dim=student.widening_factor * student.embedding_dim, **fields))
    raise ValueError(f"unknown student family {student.family!r} (use searchless or chessformer)")


def _preset(name: str, family: str, **fields) -> NetworkConfig:
    cfg = presets.get(name)
    if cfg.family != family:
        raise ValueError(f"student.preset {name!r} is a {cfg.family} network, not {family}")
    return dataclasses.replace(cfg, **{family: dataclasses.replace(getattr(cfg, family), **fields)})


def example_batch(net_cfg: NetworkConfig, target: str) -> dict:
    """A one-example input batch of the right shape (for init)."""
    if net_cfg.family == "searchless":
        return {"inputs": jnp.zeros((1, net_cfg.searchless.input_length), jnp.int32)}
    return {"inputs": jnp.zeros((1, 64, net_cfg.chessformer.input_features), jnp.float32),
            "is_black": jnp.zeros((1,), bool)}


def predict(module, net_cfg: NetworkConfig, variables, batch: dict, target: str) -> StudentOutput:
    """The student's output for `batch` ({"inputs", "is_black" (Chessformer)})."""
    if net_cfg.family == "searchless":
        out = module.apply(variables, batch["inputs"])
        return StudentOutput(move_logits=out) if target == "av_all" else StudentOutput(logprobs=out)
    out = module.apply(variables, batch["inputs"], is_black=batch["is_black"])
    if target == "av_all":
        return StudentOutput(move_logits=out.policy_logits)
    if target == "bc":
        return StudentOutput(logprobs=jax.nn.log_softmax(out.policy_logits, axis=-1))
    return StudentOutput(value=(out.value + 1) / 2)
