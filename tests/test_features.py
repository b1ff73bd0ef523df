"""Game-owned input features (games/features.py, network.input_features): the planes each game
defines, exact against the ResNet's former planes and against pgx; any self-play family reads them
with its parameters named as without; older configs and network directories that said
network.resnet.parity_plane / threat_planes read as input_features."""
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

import games
import models
from configs.loader import ConfigError, from_dict, load, to_dict
from games import features, pgx_internals
from models import network_dir
from models.chessformer import ChessformerConfig
from models.network import NetworkConfig, upgrade_network_dict
from models.resnet import ResNet, ResNetConfig
from selfplay.config import SelfPlayConfig

ROOT = Path(__file__).resolve().parents[1]
TINY = ResNetConfig(num_blocks=1, filters=8, value_hidden=16)


# -- the reference: what the former ResNet fed its first convolution, computed by brute force --------
def _completes_k(board, r, c, k):
    """Brute force: does a stone of the side marked 1 on (r, c) of `board` [H, W] make k in a row?"""
    h, w = board.shape
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        run = 1
        for sign in (1, -1):
            rr, cc = r + sign * dr, c + sign * dc
            while 0 <= rr < h and 0 <= cc < w and board[rr, cc]:
                run, rr, cc = run + 1, rr + sign * dr, cc + sign * dc
        if run >= k:
            return True
    return False


def old_resnet_input(obs, parity_plane: bool, threat_planes: int):
    """The former ResNet's input (its parity_plane, then threat_planes=k), by a brute-force scan:
    pgx's planes, (stones on the board) mod 2, then the empty squares where the mover's / the
    opponent's stone would make k in a row."""
    x = np.asarray(obs, np.float32)
    planes = [x]
    if parity_plane:
        parity = np.mod(x.sum(axis=(1, 2, 3)), 2.0)
        planes.append(np.broadcast_to(parity[:, None, None, None], x.shape[:3] + (1,)))
    if threat_planes:
        empty = ~x[..., :2].any(-1)
        for side in (0, 1):
            planes.append(np.array([[[[float(empty[b, r, c] and _completes_k(x[b, ..., side], r, c, threat_planes))]
                                      for c in range(x.shape[2])] for r in range(x.shape[1])]
                                    for b in range(x.shape[0])], np.float32))
    return jnp.asarray(np.concatenate(planes, axis=-1))


def random_positions(name: str, batch: int, plies: int, seed: int) -> list[np.ndarray]:
    """Observations of `batch` games of random legal play, after each of `plies` plies (finished
    games keep their last position)."""
    game = games.make(name)
    step = jax.jit(game.step)
    states = game.init(jax.random.split(jax.random.PRNGKey(seed), batch))
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(plies):
        seen.append(np.asarray(game.observe(states)))
        legal = np.asarray(game.legal_mask(states))
        states = step(states, jnp.asarray([rng.choice(np.flatnonzero(r)) if r.any() else 0 for r in legal]))
    return seen


def test_connect_four_planes_equal_the_former_resnet_input_on_random_positions():
    """The preset's [parity, threats] appends exactly the planes the former ResNet appended with
    parity_plane: true and threat_planes: 4, on 48 games of random play over every ply (and on random
    stone patterns, legal or not), bit for bit."""
    new = jax.jit(lambda obs: features.append(("parity", "threats"), "connect_four", obs))
    old = lambda obs: old_resnet_input(obs, True, 4)  # noqa: E731
    positions = random_positions("connect_four", 48, 42, seed=5)
    patterns = jax.random.bernoulli(jax.random.PRNGKey(2), 0.35, (64, 6, 7, 2))
    for obs in positions + [np.asarray(patterns & ~patterns[..., ::-1])]:  # never both stones on a square
        np.testing.assert_array_equal(np.asarray(new(obs)), np.asarray(old(obs)))
    assert new(positions[20]).shape == (48, 6, 7, 5) and new(positions[20]).dtype == jnp.float32
    assert float(jnp.sum(new(positions[20])[..., 3:])) > 0  # the positions had threats


def test_the_connect_four_preset_builds_the_former_network():
    """configs/connect_four.yaml's network: the same parameter names and shapes as the former ResNet
    reading 2 + 3 planes, and with the same variables the same outputs as that ResNet on the old input."""
    cfg = load(SelfPlayConfig, ROOT / "configs/connect_four.yaml")
    assert cfg.network.input_features == ("parity", "threats")
    game = games.make("connect_four")
    obs = jnp.asarray(random_positions("connect_four", 8, 12, seed=1)[-1])
    net = models.make_network(cfg.network, game.spec)
    variables = net.init(jax.random.PRNGKey(0), obs, train=False)
    former = ResNet(cfg.network.resnet, num_actions=7, chess_policy=False)
    former_variables = former.init(jax.random.PRNGKey(0), old_resnet_input(obs, True, 4), train=False)
    assert jax.tree.map(jnp.shape, variables) == jax.tree.map(jnp.shape, former_variables)
    assert variables["params"]["Conv_0"]["kernel"].shape == (3, 3, 5, 32)
    out = net.apply(variables, obs, train=False)
    ref = former.apply(variables, old_resnet_input(obs, True, 4), train=False)
    np.testing.assert_array_equal(out.policy_logits, ref.policy_logits)
    np.testing.assert_array_equal(out.value, ref.value)
    (out, updates), (ref, ref_updates) = (m.apply(variables, x, train=True, mutable=["batch_stats"]) for m, x in
                                          ((net, obs), (former, old_resnet_input(obs, True, 4))))
    np.testing.assert_array_equal(out.policy_logits, ref.policy_logits)
    assert jax.tree.map(jnp.shape, updates) == jax.tree.map(jnp.shape, ref_updates)


@pytest.mark.parametrize("name", ["connect_four", "tic_tac_toe"])
def test_parity_is_the_movers_colour_from_pgx(name):
    """After random legal plies the parity plane equals pgx's own record of whose colour moves."""
    game = games.make(name)
    states = game.init(jax.random.split(jax.random.PRNGKey(0), 16))
    step = jax.jit(game.step)  # one compile, not one per op and ply
    rng = np.random.default_rng(0)
    for ply in range(7):
        obs = features.append(("parity",), name, game.observe(states))
        assert obs.shape[-1] == game.observation_shape[-1] + 1
        colour = np.asarray(pgx_internals.rule_state(states).color)  # 0: the side that moved first is to move
        np.testing.assert_array_equal(np.asarray(obs[..., -1]), np.broadcast_to(colour[:, None, None], obs.shape[:3]))
        legal = np.asarray(game.legal_mask(states))
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in legal])
        states = step(states, jnp.asarray(actions))
    if name == "connect_four":  # no game ends before the seventh ply, which leaves the second player to move
        assert np.asarray(pgx_internals.rule_state(states).color).tolist() == [1] * 16


@pytest.mark.parametrize("name,k", [("connect_four", 4), ("tic_tac_toe", 3)])
def test_threats_agree_with_brute_force_and_with_pgx_wins(name, k):
    """On positions from random play: each side's plane marks exactly the empty squares where its stone
    would make the game's k in a row (a brute-force scan); in connect four, a playable square (a
    column's lowest empty one) is on the mover's plane exactly when pgx says dropping there wins."""
    game = games.make(name)
    step = jax.jit(game.step)
    threats = jax.jit(lambda obs: features.append(("threats",), name, obs))
    states = game.init(jax.random.split(jax.random.PRNGKey(3), 32))
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(14):
        live = ~np.asarray(states.terminated)
        obs = np.asarray(game.observe(states), np.float32)
        planes = np.asarray(threats(jnp.asarray(obs)))
        assert planes.shape[-1] == obs.shape[-1] + 2
        for b in np.flatnonzero(live):
            for side in (0, 1):
                expected = [[not obs[b, r, c].any() and _completes_k(obs[b, ..., side], r, c, k)
                             for c in range(obs.shape[2])] for r in range(obs.shape[1])]
                np.testing.assert_array_equal(planes[b, ..., 2 + side], np.array(expected, np.float32))
                checked += int(np.sum(expected))
        if name == "connect_four":
            for column in range(7):
                after = step(states, jnp.full(32, column))
                wins = np.asarray(after.rewards)[np.arange(32), np.asarray(states.current_player)] == 1
                filled = obs[..., column, :].any(-1).sum(-1)  # stones in the column
                for b in np.flatnonzero(live & (filled < 6)):
                    row = np.flatnonzero(~obs[b, :, column].any(-1))  # pgx's empty squares in the column
                    lowest = row.max()  # pgx row 0 is the top: a stone falls to the largest empty row
                    assert planes[b, lowest, column, 2] == wins[b], (b, column)
        legal = np.asarray(game.legal_mask(states))
        actions = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal])
        states = step(states, jnp.asarray(actions))
    assert checked > 20  # threats occurred: the test saw some


def test_a_feature_the_game_does_not_define_is_one_config_line():
    with pytest.raises(ConfigError, match=r"'parity' is a feature of connect_four, tic_tac_toe, not chess "
                                          r"\(chess's: none\)"):
        load(SelfPlayConfig, ROOT / "configs/chess_cpu.yaml", ["network.input_features=[parity]"])
    with pytest.raises(ConfigError, match="unknown feature 'ladders'"):
        load(SelfPlayConfig, ROOT / "configs/connect_four.yaml", ["network.input_features=[ladders]"])
    with pytest.raises(ConfigError, match="'threats' is listed twice"):
        load(SelfPlayConfig, ROOT / "configs/connect_four.yaml", ["network.input_features=[threats, threats]"])
    with pytest.raises(ValueError, match="not chess"):  # a library caller hears it too
        models.make_network(NetworkConfig(resnet=TINY, input_features=("threats",)), games.make("chess").spec)
    with pytest.raises(ValueError, match=r"chess defines no input feature 'parity' \(its features: none\)"):
        features.append(("parity",), "chess", jnp.zeros((1, 8, 8, 119)))  # the registry's own guard
    with pytest.raises(ValueError, match="student on its native input"):
        models.make_student(NetworkConfig(family="searchless", input_features=("parity",)))


def test_a_chessformer_reads_a_games_features_as_more_square_features(monkeypatch):
    """No chess feature exists yet; one registered here widens the Chessformer's square embedding by
    its planes, the other parameters as without it."""
    monkeypatch.setitem(features.FEATURES, "ones", {"chess": features.Feature(1, lambda obs: jnp.ones_like(obs[..., :1]))})
    spec = games.make("chess").spec
    small = ChessformerConfig(num_layers=1, embedding_dim=32, head_dim=16, mlp_dim=32, gab_d1=4, gab_d2=16, gab_d3=8)
    obs = jnp.zeros((2, *spec.observation_shape))
    plain, with_ones = (models.make_network(NetworkConfig(family="chessformer", chessformer=small, input_features=f), spec)
                        for f in ((), ("ones",)))
    variables = with_ones.init(jax.random.PRNGKey(0), obs)
    shapes, plain_shapes = (jax.tree.map(jnp.shape, v) for v in (variables, plain.init(jax.random.PRNGKey(0), obs)))
    assert shapes["params"]["embedding"]["kernel"] == (120, 32) and plain_shapes["params"]["embedding"]["kernel"] == (119, 32)
    shapes["params"].pop("embedding"), plain_shapes["params"].pop("embedding")
    assert shapes == plain_shapes
    assert with_ones.apply(variables, obs).policy_logits.shape == (2, spec.num_actions)


def _old_network_dict(parity_plane, threat_planes, family="resnet") -> dict:
    """The `network` mapping an older run's config.yaml or network.yaml held (every field named)."""
    network = to_dict(NetworkConfig(family=family, resnet=TINY))
    network.pop("input_features")
    network["resnet"].update(parity_plane=parity_plane, threat_planes=threat_planes, opponent_policy_head=False)
    return network


def test_older_run_configs_and_network_directories_read_as_input_features(tmp_path):
    """An older run's config.yaml (--resume) and network.yaml (the arena, warm starts) said
    network.resnet.parity_plane / threat_planes: they read as input_features in the planes' former
    order, and the directory's parameters fit."""
    saved = to_dict(load(SelfPlayConfig, ROOT / "configs/connect_four.yaml"))
    saved["network"] = _old_network_dict(True, 4)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(saved, sort_keys=False))
    cfg = load(SelfPlayConfig, path)
    assert cfg.network.input_features == ("parity", "threats") and cfg.network.resnet == TINY
    from selfplay.prepare import check_resumable
    check_resumable(tmp_path, cfg)  # the run resumes with the current preset keys
    assert load(SelfPlayConfig, path, ["network.input_features=[parity, threats]"]) == cfg
    for parity, k, want in ((False, 4, ["threats"]), (True, 0, ["parity"])):
        assert upgrade_network_dict(_old_network_dict(parity, k), "connect_four")["input_features"] == want
    assert "input_features" not in upgrade_network_dict(_old_network_dict(False, 0), "connect_four")
    assert load(SelfPlayConfig, None, ["game=tic_tac_toe", "network.resnet.threat_planes=3"]
                ).network.input_features == ("threats",)  # tic-tac-toe's line: 3

    spec = games.make("connect_four").spec
    net_cfg = NetworkConfig(resnet=TINY, input_features=("parity", "threats"))
    variables = models.make_network(net_cfg, spec).init(jax.random.PRNGKey(0), jnp.zeros((1, *spec.observation_shape)))
    directory = network_dir.save(tmp_path / "net", net_cfg, variables, game="connect_four")
    header = yaml.safe_load((directory / "network.yaml").read_text())
    header["network"] = _old_network_dict(True, 4)
    (directory / "network.yaml").write_text(yaml.safe_dump(header, sort_keys=False))
    assert network_dir.load(directory).config == net_cfg


def test_older_feature_keys_without_a_mapping_are_one_line():
    with pytest.raises(ConfigError, match=r"threat_planes: 3 is not connect_four's line \(connect_four: 4\)"):
        load(SelfPlayConfig, ROOT / "configs/connect_four.yaml", ["network.resnet.threat_planes=3"])
    with pytest.raises(ConfigError, match=r"input_features: \['parity'\]\) and network.input_features: "
                                          r"\['parity', 'threats'\] are both set"):
        load(SelfPlayConfig, ROOT / "configs/connect_four.yaml", ["network.resnet.parity_plane=true"])
    # a NetworkConfig read without its game cannot map them: one line says what to write instead
    with pytest.raises(ConfigError, match=r"^network\.resnet\.parity_plane was retired .*: set network\.input_features: "
                                          r"\[parity\]"):
        from_dict(NetworkConfig, {"resnet": {"parity_plane": True}}, prefix="network")
    assert from_dict(NetworkConfig, _old_network_dict(False, 0), prefix="network") == NetworkConfig(resnet=TINY)
    # a family other than the ResNet never read them: dropped
    assert upgrade_network_dict(_old_network_dict(True, 4, family="chessformer"), "chess").get("input_features") is None


def test_a_network_without_history_reads_a_game_as_its_fen():
    """network.history=false: the same outputs for a position reached by moves (history planes, plies
    played) and for its FEN alone, where a network that reads history sees two inputs."""
    import chess

    from games import chess_bridge
    from models import make_network
    board = chess.Board()
    for uci in "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6".split():
        board.push_uci(uci)
    obs = np.stack([np.asarray(chess_bridge.board_to_state(board).observation),
                    np.asarray(chess_bridge.fen_to_state(board.fen()).observation)])
    spec = games.make("chess").spec
    outs = {}
    for history in (True, False):
        net = make_network(NetworkConfig(resnet=ResNetConfig(num_blocks=1, filters=8, value_hidden=8),
                                         history=history), spec)
        variables = net.init(jax.random.PRNGKey(0), obs[:1], train=False)
        outs[history] = net.apply(variables, obs, train=False)
    # equal to float32 rounding: XLA may compute two rows of a batch by different vector paths (a last-bit
    # difference on some CPUs), while a network that reads history differs by orders of magnitude more
    logits, values = np.asarray(outs[False].policy_logits), np.asarray(outs[False].value)
    np.testing.assert_allclose(logits[0], logits[1], rtol=0, atol=1e-6)
    np.testing.assert_allclose(values[0], values[1], rtol=0, atol=1e-6)
    with_history = np.asarray(outs[True].policy_logits)
    assert np.max(np.abs(with_history[0] - with_history[1])) > 1e-3
    with pytest.raises(ValueError, match="network.history"):
        make_network(NetworkConfig(history=False), games.make("tic_tac_toe").spec)
