"""One entry point for search, self-play and training: `make_network(cfg, game_spec)`.

    net = make_network(NetworkConfig(family="resnet"), games.make("chess").spec)
    variables = net.init(key, obs, train=False)            # obs [B, *game_spec.observation_shape]
    out = net.apply(variables, obs, train=False)            # NetworkOutput
    out, updates = net.apply(variables, obs, train=True, mutable=["batch_stats"])

`out.policy_logits` is [B, game_spec.num_actions] in pgx's action order; `out.value` [B] in [-1, 1]
from the side to move; `out.wdl_logits` [B, 3] or None. A self-play config switches family with
one key (`network.family=chessformer`); a Chessformer config made for students (112 square
features, compact/vocabulary policy) is adapted to pgx's 119 planes and 4672 actions. Students read
other inputs: `make_student(cfg)` builds one on its native input (searchless: FEN tokens;
Chessformer: square features).
`network.input_features` names planes the game defines (games/features.py, e.g. connect four's
`[parity, threats]`): `make_network` appends them to the observation for any self-play family, and
the parameters keep the names they have without them.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal, Mapping, Optional

import flax.linen as nn

from configs import ConfigError
from games import features
from models.chessformer import Chessformer, ChessformerConfig
from models.output import NetworkOutput, wdl_to_value  # noqa: F401  (re-exported)
from models.resnet import ResNet, ResNetConfig
from models.searchless import SearchlessConfig, SearchlessTransformer

Family = Literal["resnet", "chessformer", "searchless"]
SELF_PLAY_FAMILIES = ("resnet", "chessformer")


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Which network family and its hyper-parameters; only the block named by `family` is used."""

    family: Family = "resnet"  # "resnet" (any game), "chessformer" (chess), "searchless" (students)
    resnet: ResNetConfig = ResNetConfig()  # used when family == "resnet"
    chessformer: ChessformerConfig = ChessformerConfig()  # used when family == "chessformer"
    searchless: SearchlessConfig = SearchlessConfig()  # used when family == "searchless"
    # planes the game defines, appended to its observation in this order (games/features.py; connect
    # four: parity, threats); any self-play family reads them
    input_features: tuple[str, ...] = ()
    # false: the network sees the current position only, the earlier positions' planes of the
    # observation zeroed (games/features.py drop_history): a network distilled from FEN boards (no
    # moves before them: distill.py warm-start) then reads a game's positions as it was trained to
    history: bool = True

    def architecture(self) -> tuple:
        """What decides the parameters' shapes and meaning: two configs with equal architectures hold
        each other's variables (e.g. a warm start's network and the run that starts from it)."""
        return self.family, getattr(self, self.family), self.input_features, self.history

    @property
    def value_reads_input(self) -> bool:
        """The value also reads the input through a linear term (a ResNet's `value_input_skip`): its head's
        hidden units can die without the value turning constant (learner/health.py)."""
        return self.family == "resnet" and self.resnet.value_input_skip

    def describe(self) -> str:
        """One line of what the architecture is, as `--set network.*` would write it."""
        sub = dataclasses.asdict(getattr(self, self.family))
        features = f" input_features={list(self.input_features)}" if self.input_features else ""
        history = "" if self.history else " history=false"
        return f"{self.family} " + " ".join(f"{k}={v}" for k, v in sub.items()) + features + history


def check_game(cfg: NetworkConfig, game: str) -> None:
    """Raises one ValueError line when `cfg` cannot read `game`'s observation (the config loader and
    `make_network` both ask, so a run fails before it starts and a library caller still hears)."""
    if cfg.family == "chessformer" and game != "chess":
        raise ValueError(f"the chessformer family plays chess only, not '{game}': use network.family=resnet")
    _check_features(cfg.input_features, game)
    if not cfg.history:
        features.check_history(game)


def _check_features(names: tuple[str, ...], game: str) -> None:
    """One ValueError line naming the first of `names` that `game` does not define (games/features.py's
    registry), or a repeat."""
    for i, name in enumerate(names):
        if name not in features.FEATURES:
            raise ValueError(f"network.input_features: unknown feature {name!r} (known: {', '.join(features.FEATURES)})")
        if game not in features.FEATURES[name]:
            theirs = ", ".join(features.FEATURES[name])
            raise ValueError(f"network.input_features: {name!r} is a feature of {theirs}, not {game} "
                             f"({game}'s: {', '.join(features.of(game)) or 'none'})")
        if name in names[:i]:
            raise ValueError(f"network.input_features: {name!r} is listed twice")


def input_planes(cfg: NetworkConfig, game_spec) -> int:
    """Planes the network reads: `game_spec`'s observation and the features `cfg` appends."""
    return game_spec.observation_shape[-1] + sum(features.FEATURES[name][game_spec.name].planes
                                                 for name in cfg.input_features)


def upgrade_network_dict(network: Any, game: Optional[str]) -> Any:
    """An older config's `network` mapping as the current fields name it: the ResNet's own feature planes,
    `resnet.parity_plane: true` and `resnet.threat_planes: k` (k the game's line, connect four 4),
    become `input_features: [parity, threats]` (the order the ResNet appended them in: the same input,
    the same parameters). ConfigError (one line) for what has no such mapping."""
    if not isinstance(network, Mapping) or not isinstance(network.get("resnet"), Mapping):
        return network
    resnet = dict(network["resnet"])
    if "parity_plane" not in resnet and "threat_planes" not in resnet:
        return network
    parity, k = resnet.pop("parity_plane", False), resnet.pop("threat_planes", 0)
    out = {**network, "resnet": resnet}
    if parity not in (True, False) or isinstance(k, bool) or not isinstance(k, int):
        raise ConfigError(f"network.resnet.parity_plane: {parity!r} / threat_planes: {k!r}: expected true/false "
                          f"and an integer (older names of network.input_features)")
    if out.get("family", "resnet") != "resnet" or not (parity or k):
        return out  # the planes were the ResNet's alone
    if k and k != features.IN_A_ROW.get(game):
        raise ConfigError(f"network.resnet.threat_planes: {k} is not {game}'s line "
                          f"({game}: {features.IN_A_ROW.get(game, 'none')}); network.input_features: [threats] "
                          f"gives each game's own, as the older threat_planes did with the right k")
    names = ["parity"] * bool(parity) + ["threats"] * bool(k)
    if out.get("input_features") and list(out["input_features"]) != names:
        raise ConfigError(f"network.resnet.parity_plane / threat_planes (older names of input_features: {names}) and "
                          f"network.input_features: {list(out['input_features'])} are both set: keep input_features")
    out["input_features"] = names
    return out


class WithFeatures(nn.Module):
    """`body` on the observation with `names`' planes appended (games/features.py), its earlier
    positions' planes zeroed unless `history`. The body shares this module's scope, so its parameters
    are named as they are without features."""

    body: nn.Module
    game: str
    names: tuple[str, ...]
    history: bool = True

    def setup(self):
        nn.share_scope(self, self.body)

    def __call__(self, obs, *args, **kwargs):
        if not self.history:
            obs = features.drop_history(self.game, obs)
        return self.body(features.append(self.names, self.game, obs), *args, **kwargs)


def make_network(cfg: NetworkConfig, game_spec) -> nn.Module:
    """A flax module mapping pgx observations [B, *observation_shape] to a NetworkOutput."""
    if cfg.family not in SELF_PLAY_FAMILIES:
        _refuse_family(cfg.family)
    check_game(cfg, game_spec.name)
    if cfg.family == "resnet":
        body = ResNet(cfg.resnet, num_actions=game_spec.num_actions, chess_policy=game_spec.name == "chess")
    else:
        # Same architecture, but read pgx's observation planes (and the game's features) and score
        # pgx's action ids.
        body = Chessformer(dataclasses.replace(cfg.chessformer, input_features=input_planes(cfg, game_spec),
                                               policy_space="pgx"))
    if not cfg.input_features and cfg.history:
        return body
    return WithFeatures(body, game_spec.name, tuple(cfg.input_features), cfg.history)


def _refuse_family(family: str) -> None:
    if family == "searchless":
        raise ValueError("the searchless transformer reads FEN tokens, not pgx observations: it cannot be a "
                         "self-play network (use models.make_student for students)")
    raise ValueError(f"unknown network family '{family}' (known: resnet, chessformer, searchless)")


def make_student(cfg: NetworkConfig) -> nn.Module:
    """A distillation student on its native input: searchless -> SearchlessTransformer (FEN tokens
    -> log-probs); chessformer -> Chessformer (squares [B, 64, F] -> NetworkOutput over
    cfg.chessformer.policy_space). A network that reads pgx observations is `make_network`'s."""
    if cfg.family not in ("searchless", "chessformer"):
        raise ValueError(f"a student is a searchless or chessformer network, not '{cfg.family}' "
                         "(a self-play network on pgx observations: models.make_network)")
    if cfg.input_features or not cfg.history:
        raise ValueError("network.input_features are planes appended to a pgx observation; a student on its "
                         "native input (FEN tokens, square features) reads none: set it to [] (and network.history to true)")
    if cfg.family == "searchless":
        return SearchlessTransformer(cfg.searchless)
    return Chessformer(cfg.chessformer)
