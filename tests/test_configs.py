"""The config loader: YAML presets, dotted overrides, and errors that name the key."""
import dataclasses
import re
from pathlib import Path
from typing import ClassVar, Literal, Optional

import pytest

from configs import ConfigError, apply_overrides, load, parse_overrides, to_dict
from configs.loader import Retired, upgrade


@dataclasses.dataclass(frozen=True)
class Inner:
    lr: float = 0.1  # learning rate
    steps: tuple[int, ...] = (10, 20)  # boundaries
    kind: Literal["sgd", "adam"] = "sgd"  # optimiser


@dataclasses.dataclass(frozen=True)
class Outer:
    name: str = "run"  # run name
    batch: int = 8  # batch size
    seed: Optional[int] = None  # optional seed
    inner: Inner = Inner()  # nested section


def test_defaults_and_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("batch: 16\ninner:\n  lr: 1\n  steps: [1, 2, 3]\n")
    cfg = load(Outer, path)
    assert cfg.batch == 16 and cfg.inner.lr == 1.0 and isinstance(cfg.inner.lr, float)
    assert cfg.inner.steps == (1, 2, 3) and cfg.name == "run"


def test_dotted_overrides_win_over_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("batch: 16\n")
    cfg = load(Outer, path, ["batch=32", "inner.kind=adam", "seed=3", "name=x"])
    assert (cfg.batch, cfg.inner.kind, cfg.seed, cfg.name) == (32, "adam", 3, "x")
    assert apply_overrides(cfg, ["inner.lr=0.5"]).inner.lr == 0.5
    # YAML 1.1 leaves 1e-3 (no dot) a string: a float field still reads it as the number it is
    assert apply_overrides(cfg, ["inner.lr=1e-3"]).inner.lr == 0.001
    assert apply_overrides(cfg, ["inner.lr=-2E+2"]).inner.lr == -200.0


def test_round_trip_through_dict():
    cfg = Outer(batch=3, inner=Inner(lr=0.3))
    assert load(Outer, None, []) == Outer()
    from configs import from_dict
    assert from_dict(Outer, to_dict(cfg)) == cfg


@pytest.mark.parametrize("override, message", [
    (["inner.lrr=1"], "inner.lrr"),
    (["batch=abc"], "batch"),
    (["batch=1.5"], "batch"),
    (["inner.lr=1e"], "inner.lr"),
    (["inner.kind=rmsprop"], "inner.kind"),
    (["inner=3"], "inner"),
    (["nonsense"], "key=value"),
])
def test_errors_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load(Outer, None, override)


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load(Outer, tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("batch: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(Outer, bad)


def test_a_bad_key_in_the_file_names_the_file_and_one_in_an_override_does_not(tmp_path):
    """A run saved by another version (a field since removed) fails naming its config file, so the
    user knows to edit the file rather than their command line."""
    saved = tmp_path / "config.yaml"
    saved.write_text("batch: 16\ninner:\n  momentum: 0.9\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(saved))}: unknown config key 'inner\.momentum'"):
        load(Outer, saved, ["batch=32"])
    saved.write_text("batch: 16\n")
    with pytest.raises(ConfigError, match=r"^unknown config key 'inner\.lrr'"):
        load(Outer, saved, ["inner.lrr=1"])
    saved.write_text("batch: abc\n")  # a bad value the override mends is no error
    assert load(Outer, saved, ["batch=2"]).batch == 2


@dataclasses.dataclass(frozen=True)
class Pruned:
    lr: float = 0.1
    RETIRED: ClassVar = {"temperature": Retired(1.0), "head": Retired(False, "set lr instead")}

    @classmethod
    def upgrade_dict(cls, data):  # an older name of lr
        if "rate" in data:
            data["lr"] = data.pop("rate")
        return data


@dataclasses.dataclass(frozen=True)
class Holder:
    pruned: Pruned = Pruned()


def test_a_retired_key_reads_at_its_old_default_and_is_one_line_otherwise(tmp_path):
    """Every saved config names every field, so a retired one at its old default (1 for 1.0 too) is
    read and dropped; any other value is one line naming the key, that it was retired, and where why."""
    saved = tmp_path / "config.yaml"
    saved.write_text("pruned:\n  temperature: 1\n  head: false\n  rate: 0.5\n")
    assert load(Holder, saved) == Holder(Pruned(lr=0.5))
    assert upgrade(Holder, {"pruned": {"temperature": 1.0, "rate": 0.2}}) == {"pruned": {"lr": 0.2}}
    with pytest.raises(ConfigError, match=r"^pruned\.temperature was retired \(docs/experiments/README\.md"
                                          r"#retired-options\): remove it \(only its old default, 1\.0, is still read\)$"):
        load(Holder, None, ["pruned.temperature=1.5"])
    with pytest.raises(ConfigError, match=r"^pruned\.head was retired .*: set lr instead"):
        load(Holder, None, ["pruned.head=1"])  # 1 is not false
    saved.write_text("pruned:\n  head: true\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(saved))}: pruned\.head was retired"):
        load(Holder, saved)
    with pytest.raises(ConfigError, match="pruned.temperature was retired"):
        upgrade(Holder, {"pruned": {"temperature": 2.0}})


def test_parse_overrides_yaml_scalars():
    assert parse_overrides(["a.b=1", "a.c=[1, 2]", "d=true", "e=hello"]) == {
        "a": {"b": 1, "c": [1, 2]}, "d": True, "e": "hello"}


def test_an_override_path_under_home_is_expanded(monkeypatch, tmp_path):
    """bash expands ~ only after a variable name's =, never after `annotate.out_dir=`."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_overrides(["a.out=~/runs/x", "a.list=[~/p.pgn, q.pgn]", "a.plain=x~/y"]) == {
        "a": {"out": f"{tmp_path}/runs/x", "list": [f"{tmp_path}/p.pgn", "q.pgn"], "plain": "x~/y"}}


def _numeric_keys(tree: dict, prefix: str = ""):
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _numeric_keys(value, f"{prefix}{key}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield f"{prefix}{key}"


# Where -1 means something: a root value that never resigns, Ray's "restart for ever".
MINUS_ONE_MEANS_SOMETHING = {"actors.resign_threshold", "actors.max_restarts"}


@pytest.mark.parametrize("cli", ["selfplay", "distill", "match"])
def test_every_numeric_setting_refuses_minus_one_by_name(cli):
    """Each CLI's config: a negative count, size, rate or weight is one error naming its key, never a
    run that trains away from its target or stops before it starts."""
    from arena.play.match import MatchConfig
    from distill.config import DistillConfig
    from selfplay.config import SelfPlayConfig
    cls, preset, base = {"selfplay": (SelfPlayConfig, "configs/connect_four.yaml", []),
                         "distill": (DistillConfig, "configs/distill_cpu.yaml", []),
                         "match": (MatchConfig, None, ["players=[random,random]"])}[cli]
    keys = [k for k in _numeric_keys(to_dict(load(cls, preset, base))) if k not in MINUS_ONE_MEANS_SOMETHING]
    assert len(keys) >= 8  # the walk found the settings
    for key in keys:
        with pytest.raises(ConfigError, match=key.rsplit(".", 1)[-1]):
            load(cls, preset, base + [f"{key}=-1"])


def test_every_preset_loads_with_its_command(monkeypatch):
    """configs/*.yaml: each loads into its command's config (a renamed key would fail here, not in a
    user's run), and a warm-start preset's init.network fits its network (as the run checks it)."""
    from arena.play.match import MatchConfig
    from distill.config import DistillConfig
    from models import network_dir
    from selfplay.config import SelfPlayConfig
    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)  # init.network is relative to the checkout, as the README runs it
    presets = sorted((root / "configs").glob("*.yaml"))
    assert len(presets) >= 10
    for path in presets:
        cls = DistillConfig if path.name.startswith("distill") else MatchConfig if path.name == "match.yaml" \
            else SelfPlayConfig
        cfg = load(cls, path)
        if cls is SelfPlayConfig and cfg.init.network:
            assert network_dir.variables_for(cfg.init.network, cfg.game, cfg.network)["params"], path.name
