"""One entry point for search, self-play and training: `make_network(cfg, game_spec)`.

    net = make_network(NetworkConfig(family="resnet"), games.make("chess").spec)
    variables = net.init(key, obs, train=False)            # obs [B, *game_spec.observation_shape]
    out = net.apply(variables, obs, train=False)            # NetworkOutput
    out, updates = net.apply(variables, obs, train=True, mutable=["batch_stats"])

`out.policy_logits` is [B, game_spec.num_actions] in pgx's action order; `out.value` [B] in [-1, 1]
from the side to move; `out.wdl_logits` [B, 3] or None. A self-play config switches family with
one key (`network.family=chessformer`); a Chessformer config made for students (112 square
features, compact/vocabulary policy) is adapted to pgx's 119 planes and 4672 actions. Students read other inputs: `make_model(cfg)` builds any
family for its native input (searchless: FEN tokens; Chessformer: square features).
"""
from __future__ import annotations

import dataclasses
from typing import Literal

import flax.linen as nn

from models.chessformer import Chessformer, ChessformerConfig
from models.output import NetworkOutput, wdl_to_value  # noqa: F401  (re-exported)
from models.resnet import ResNet, ResNetConfig
from models.searchless import SearchlessConfig, SearchlessTransformer

Family = Literal["resnet", "chessformer", "searchless"]
SELF_PLAY_FAMILIES = ("resnet", "chessformer")
# games where every move adds exactly one stone, so (stones on the board mod 2) is the mover's colour
PLACEMENT_GAMES = ("connect_four", "tic_tac_toe")


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Which network family and its hyper-parameters; only the block named by `family` is used."""

    family: Family = "resnet"  # "resnet" (any game), "chessformer" (chess), "searchless" (students)
    resnet: ResNetConfig = ResNetConfig()  # used when family == "resnet"
    chessformer: ChessformerConfig = ChessformerConfig()  # used when family == "chessformer"
    searchless: SearchlessConfig = SearchlessConfig()  # used when family == "searchless"


def check_game(cfg: NetworkConfig, game: str) -> None:
    """Raises one ValueError line when `cfg` cannot read `game`'s observation (the config loader and
    `make_network` both ask, so a run fails before it starts and a library caller still hears)."""
    if cfg.family == "resnet" and cfg.resnet.parity_plane and game not in PLACEMENT_GAMES:
        raise ValueError(f"network.resnet.parity_plane: stone parity says whose move it is only where every move "
                         f"adds one stone ({', '.join(PLACEMENT_GAMES)}: the parity_plane counts stones), not "
                         f"{game}; set it to false")
    if cfg.family == "resnet" and cfg.resnet.threat_planes and game not in PLACEMENT_GAMES:
        raise ValueError(f"network.resnet.threat_planes: k-in-a-row threats are read from the two stone planes of "
                         f"{', '.join(PLACEMENT_GAMES)}, not {game}'s observation; set it to 0")


def make_network(cfg: NetworkConfig, game_spec) -> nn.Module:
    """A flax module mapping pgx observations [B, *observation_shape] to a NetworkOutput."""
    if cfg.family == "resnet":
        check_game(cfg, game_spec.name)
        return ResNet(cfg.resnet, num_actions=game_spec.num_actions, chess_policy=game_spec.name == "chess")
    if cfg.family == "chessformer":
        if game_spec.name != "chess":
            raise ValueError(f"the chessformer family plays chess only, not '{game_spec.name}'")
        # Same architecture, but read pgx's observation planes and score pgx's action ids.
        c = dataclasses.replace(cfg.chessformer, input_features=game_spec.observation_shape[-1],
                                policy_space="pgx")
        return Chessformer(c)
    if cfg.family == "searchless":
        raise ValueError("the searchless transformer reads FEN tokens, not pgx observations: it cannot be a "
                         "self-play network (use models.make_model for students)")
    raise ValueError(f"unknown network family '{cfg.family}' (known: resnet, chessformer, searchless)")


def make_model(cfg: NetworkConfig, game_spec=None) -> nn.Module:
    """Any family on its native input: searchless -> SearchlessTransformer (tokens -> log-probs);
    chessformer -> Chessformer (squares [B, 64, F] -> NetworkOutput over cfg.chessformer.policy_space);
    resnet -> as `make_network` (needs game_spec)."""
    if cfg.family == "searchless":
        return SearchlessTransformer(cfg.searchless)
    if cfg.family == "chessformer":
        return Chessformer(cfg.chessformer)
    if game_spec is None:
        raise ValueError("a resnet needs the game_spec of the game it plays")
    return make_network(cfg, game_spec)
