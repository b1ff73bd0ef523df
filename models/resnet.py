"""AlphaZero residual network (Silver et al. 2018, "Architecture"), for any pgx game.

    obs [B, H, W, C] -> input conv -> N x residual block -> policy head, value head (+ WDL head)

Residual block: conv3x3-BN-ReLU-conv3x3-BN (+ optional squeeze-excitation) + skip, ReLU.
Policy head, chess: conv3x3-BN-ReLU then a 1x1 conv to 73 planes, flattened in pgx's action
order (from_square * 73 + plane, squares file-major a1=0, a2=1, ...). Other games (or
`policy_head="dense"`): AlphaGo Zero's 1x1 conv to 2 planes, BN, ReLU, dense to num_actions.
Value head: 1x1 conv to `value_channels` planes (AlphaZero: 1), BN, ReLU, dense `value_hidden`, ReLU,
dense 1, tanh; with `value_input_skip`, a linear term of the input planes' board means (batch-normalised,
zero at initialisation) joins that last dense before the tanh. In training the share of units that pass their ReLU (over the batch), in
whichever of the head's two ReLU layers passes fewer, is sown as `intermediates/value_active` (learner/train.py reports it; 0 is a dead head).
Mixed precision (`compute_dtype: bfloat16`): convolutions, dense layers and activations run in bf16
(GPU/TPU tensor cores); parameters, BatchNorm statistics and the outputs stay float32, so the
learner's losses and the search's values are float32 either way.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

import flax.linen as nn
import jax.numpy as jnp

from configs import Retired, check_at_least
from models.output import NetworkOutput

VALUE_ACTIVE = "value_active"  # the sown fraction of the value head's units past their ReLU (its less active layer)


@dataclasses.dataclass(frozen=True)
class ResNetConfig:
    """AlphaZero ResNet hyper-parameters."""

    num_blocks: int = 6  # residual blocks (AlphaZero: 19)
    filters: int = 64  # channels of every 3x3 conv (AlphaZero: 256)
    squeeze_excitation: bool = False  # Leela-style SE (scale and bias) inside each block
    se_ratio: int = 4  # SE bottleneck = filters // se_ratio
    policy_head: Literal["auto", "conv", "dense"] = "auto"  # auto: 73-plane conv for chess, dense otherwise
    value_hidden: int = 256  # hidden width of the value head (AlphaZero: 256)
    # 1x1 conv planes feeding the value head's dense layer (AlphaZero: 1; Lc0: 32): with one plane every
    # square must squeeze what it says about the result into a single number before the dense layer
    value_channels: int = 1
    wdl_head: bool = False  # also output win/draw/loss logits (Leela) beside the scalar value
    # the value also reads each input plane's mean over the board through one linear term (zero at
    # initialisation): piece counts, so material, which a trunk fitting a few hundred thousand boards
    # learns slowly and generalises badly (docs/experiments/); not the WDL head
    value_input_skip: bool = False
    # dtype of the convolutions, dense layers and activations; parameters, BatchNorm statistics and the
    # outputs stay float32. bfloat16 is for accelerators (tensor cores); on a CPU it changes little
    # (docs/experiments/2026-11-26-selfplay-cpu-precision-and-xla-flags.md)
    compute_dtype: Literal["float32", "bfloat16"] = "float32"
    # removed fields that saved configs still name (configs/loader.py)
    # (the feature planes moved to network.input_features, games/features.py: an older run's config or
    # network.yaml maps to it, models/network.py upgrade_network_dict)
    RETIRED: ClassVar = {"opponent_policy_head": Retired(False),
                         "parity_plane": Retired(False, "set network.input_features: [parity]"),
                         "threat_planes": Retired(0, "set network.input_features: [threats]")}

    def __post_init__(self):
        check_at_least(self, 0, "num_blocks", prefix="network.resnet.")
        check_at_least(self, 1, "filters", "se_ratio", "value_hidden", prefix="network.resnet.")
        if self.value_channels < 1:
            raise ValueError(f"network.resnet.value_channels must be >= 1 (got {self.value_channels}); 1 is AlphaZero's head")


class SqueezeExcitation(nn.Module):
    """x [B, H, W, C] -> sigmoid(gate) * x + bias, gate and bias from the global average of x."""

    ratio: int
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x):
        c = x.shape[-1]
        pooled = jnp.mean(x, axis=(1, 2))  # [B, C]
        hidden = nn.relu(nn.Dense(max(1, c // self.ratio), dtype=self.dtype)(pooled))
        gate, bias = jnp.split(nn.Dense(2 * c, dtype=self.dtype)(hidden), 2, axis=-1)
        return x * nn.sigmoid(gate)[:, None, None, :] + bias[:, None, None, :]


@dataclasses.dataclass(frozen=True)
class Layers:
    """Builds one network's layers with its compute dtype and train / inference BatchNorm mode, so
    every module of the ResNet makes its BatchNorm, Conv and Dense the same way. Called inside a
    flax compact method, each builder makes a submodule of that method's module."""

    train: bool
    dtype: jnp.dtype

    def bn(self):
        return nn.BatchNorm(use_running_average=not self.train, momentum=0.9, dtype=self.dtype)

    def conv(self, planes: int, size: tuple[int, int], **kw):
        return nn.Conv(planes, size, dtype=self.dtype, **kw)

    def dense(self, width: int, **kw):
        return nn.Dense(width, dtype=self.dtype, **kw)


class ResidualBlock(nn.Module):
    filters: int
    squeeze_excitation: bool
    se_ratio: int
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x, train: bool):
        make = Layers(train, self.dtype)
        y = nn.relu(make.bn()(make.conv(self.filters, (3, 3), use_bias=False)(x)))
        y = make.bn()(make.conv(self.filters, (3, 3), use_bias=False)(y))
        if self.squeeze_excitation:
            y = SqueezeExcitation(self.se_ratio, self.dtype)(y)
        return nn.relu(x + y)


def chess_planes_to_pgx_actions(planes):
    """[B, 8, 8, 73] planes laid out like pgx's chess observation -> [B, 4672] logits.

    pgx's observation row i is rank 8-i (side-to-move view) and column j is file j; its action is
    from_square * 73 + plane with from_square = file * 8 + rank (a1=0, a2=1, ..., h8=63).
    """
    by_rank = planes[:, ::-1]  # [B, rank, file, 73]
    by_square = jnp.transpose(by_rank, (0, 2, 1, 3))  # [B, file, rank, 73]
    return by_square.reshape(planes.shape[0], 64 * 73)


def policy_head(x, make: Layers, chess_conv: bool, filters: int, num_actions: int):
    """Trunk x [B, H, W, C] -> [B, num_actions] logits: AlphaZero's 73-plane chess conv head, or
    AlphaGo Zero's 1x1 conv to 2 planes + dense; `make` builds the layers in the caller's module."""
    if chess_conv:
        p = nn.relu(make.bn()(make.conv(filters, (3, 3), use_bias=False)(x)))
        return chess_planes_to_pgx_actions(make.conv(73, (1, 1))(p))
    p = nn.relu(make.bn()(make.conv(2, (1, 1), use_bias=False)(x)))
    return make.dense(num_actions)(p.reshape(x.shape[0], -1))


def input_skip(obs, make: Layers):
    """obs [B, H, W, C] -> [B, 1]: a linear function of each plane's board mean (a piece plane's: its count
    / 64), batch-normalised so that every count moves at one scale; the weights start at zero, so a fresh
    network's value is the head's alone. Made after every other layer (explicit names), so adding it
    renames nothing."""
    means = jnp.mean(obs, axis=(1, 2))  # [B, C]
    means = nn.BatchNorm(use_running_average=not make.train, momentum=0.9, name="value_skip_bn")(means)
    return nn.Dense(1, kernel_init=nn.initializers.zeros, name="value_skip")(means)


class ResNet(nn.Module):
    """obs [B, *observation_shape] -> NetworkOutput(policy_logits [B, num_actions], value [B], wdl)."""

    config: ResNetConfig
    num_actions: int
    chess_policy: bool  # True: the 73-plane conv head in pgx's chess action order

    @nn.compact
    def __call__(self, obs, train: bool = False) -> NetworkOutput:
        cfg = self.config
        dt = jnp.dtype(cfg.compute_dtype)
        make = Layers(train, dt)
        x = obs.astype(jnp.float32)
        x = nn.relu(make.bn()(make.conv(cfg.filters, (3, 3), use_bias=False)(x.astype(dt))))
        for _ in range(cfg.num_blocks):
            x = ResidualBlock(cfg.filters, cfg.squeeze_excitation, cfg.se_ratio, dt)(x, train)

        batch = x.shape[0]
        use_conv = cfg.policy_head == "conv" or (cfg.policy_head == "auto" and self.chess_policy)
        if use_conv and not self.chess_policy:
            raise ValueError("policy_head='conv' is the 73-plane chess head; use 'dense' for this game")
        policy = policy_head(x, make, use_conv, cfg.filters, self.num_actions)

        v = make.bn()(make.conv(cfg.value_channels, (1, 1), use_bias=False)(x))  # [B, H, W, value_channels]
        conv_active = jnp.mean((v > 0).astype(jnp.float32))
        v = make.dense(cfg.value_hidden)(nn.relu(v).reshape(batch, -1))  # [B, value_hidden]
        # the share of units past their ReLU in the head's less active layer, for the learner's metrics
        # (learner/train.py asks for the "intermediates" collection; elsewhere sow does nothing): ~0 once
        # either layer has died (one 1x1-conv channel can; so can the dense layer behind 32 live ones)
        self.sow("intermediates", VALUE_ACTIVE, jnp.minimum(conv_active, jnp.mean((v > 0).astype(jnp.float32))))
        v = nn.relu(v)
        pre = make.dense(1)(v).astype(jnp.float32)  # [B, 1]
        if cfg.value_input_skip:
            pre = pre + input_skip(obs.astype(jnp.float32), make)
        value = jnp.tanh(pre)[:, 0]
        wdl = make.dense(3, name="wdl")(v).astype(jnp.float32) if cfg.wdl_head else None
        return NetworkOutput(policy.astype(jnp.float32), value, wdl)
