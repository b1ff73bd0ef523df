"""scripts/gpu_bundle.sh offline, on tiny input: a hand-made wheel from a local folder (no network), a
Stockfish stand-in and a data dir of tiny stand-ins for the files it packs; then the bundle's install.sh, as the GPU host runs it."""
import base64
import hashlib
import lzma
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_bundle.sh"
DATA_FILES = {"openings/8moves_v3.pgn": '[Event "?"]\n\n1. e4 e5 2. Nf3 Nc6 *\n' * 50,
              "puzzles/lichess_puzzles_themed.csv": "PuzzleId,FEN,Moves,Rating,Themes\n00sHx,8/8/8 w - - 0 1,e2e4,1500,mate\n",
              **{f"openings/lichess_chess_openings/{v}.tsv": f"eco\tname\tpgn\n{v.upper()}00\tx\t1. e4\n" for v in "abcde"}}


def make_wheel(folder: Path) -> Path:
    """A pure-Python wheel (package tinybundlepkg) with a proper dist-info, built by hand."""
    name, version = "tinybundlepkg", "0.1"
    dist_info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": "VALUE = 'from the bundle'\n",
             f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}

    def record_line(path, text):
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        return f"{path},sha256={digest},{len(text.encode())}\n"

    record = "".join(record_line(p, t) for p, t in files.items()) + f"{dist_info}/RECORD,,\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in {**files, f"{dist_info}/RECORD": record}.items():
            z.writestr(path, text)
    return wheel


def run_bundler(tmp_path: Path, **settings) -> subprocess.CompletedProcess:
    links, data = tmp_path / "links", tmp_path / "data"
    if not links.exists():
        links.mkdir()
        make_wheel(links)
        for rel, text in DATA_FILES.items():
            (data / rel).parent.mkdir(parents=True, exist_ok=True)
            (data / rel).write_text(text)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BUNDLE_") and k not in ("NO_STOCKFISH", "STOCKFISH_BIN", "PIP_INDEX_URL")}
    env.update(PYTHON=sys.executable, ZEROCHESS_DATA=str(data), BUNDLE_FIND_LINKS=str(links),
               BUNDLE_PACKAGES="tinybundlepkg==0.1", BUNDLE_SDIST_PACKAGES="", BUNDLE_SKIP_RAY="1",
               BUNDLE_OUT=str(tmp_path / "wheels"), BUNDLE_DATA_OUT=str(tmp_path / "gpu_data"))
    env.update(settings)
    return subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_bundle_installs_offline_and_packs_the_data(tmp_path):
    fake_sf = tmp_path / "stockfish"
    fake_sf.write_text("#!/bin/sh\necho \"fake stockfish $1\"\n" + "# padding\n" * 200)
    fake_sf.chmod(0o755)
    result = run_bundler(tmp_path, STOCKFISH_BIN=str(fake_sf))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bundle:" in result.stdout and "of 64 MiB" in result.stdout, result.stdout

    out = tmp_path / "wheels"
    assert [p.name for p in (out / "whl").iterdir()] == ["tinybundlepkg-0.1-py3-none-any.whl"]
    assert not (out / "ray_slim.tar.xz").exists()
    # Stockfish travels xz-compressed (smaller than the original), not as itself
    assert (out / "stockfish.xz").stat().st_size < fake_sf.stat().st_size
    assert lzma.decompress((out / "stockfish.xz").read_bytes()) == fake_sf.read_bytes()
    for rel, text in DATA_FILES.items():
        packed = tmp_path / "gpu_data" / f"{rel}.xz"
        assert lzma.decompress(packed.read_bytes()).decode() == text
        assert not (tmp_path / "gpu_data" / rel).exists()

    # the host's side: install.sh with no network, then the package and Stockfish from site/
    env = {**os.environ, "PYTHON": sys.executable, "PIP_NO_INDEX": "1"}
    install = subprocess.run(["bash", str(out / "install.sh")], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=60)
    assert install.returncode == 0, install.stdout + install.stderr
    site = out / "site"
    imported = subprocess.run([sys.executable, "-c", "import tinybundlepkg as t; print(t.__file__, t.VALUE)"],
                              cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True,
                              text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    location, value = imported.stdout.split(" ", 1)
    assert Path(location).is_relative_to(site) and value.strip() == "from the bundle"
    sf = site / "bin" / "stockfish"
    assert sf.stat().st_mode & stat.S_IXUSR
    ran = subprocess.run([str(sf), "uci"], capture_output=True, text=True, timeout=10)
    assert ran.stdout.strip() == "fake stockfish uci"


def test_bundle_over_the_size_limit_fails_with_one_line(tmp_path):
    result = run_bundler(tmp_path, NO_STOCKFISH="1", BUNDLE_LIMIT_MIB="0.001")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gpu_bundle: bundle + checkout = ") and "over BUNDLE_LIMIT_MIB=0.001" in lines[0]
    assert "bundle:" in result.stdout  # the size is printed either way


def test_bundle_names_a_missing_data_file_before_downloading(tmp_path):
    result = run_bundler(tmp_path, NO_STOCKFISH="1", ZEROCHESS_DATA=str(tmp_path / "empty"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"gpu_bundle: no {tmp_path / 'empty'}/openings/8moves_v3.pgn: set ZEROCHESS_DATA, run "
        "scripts/download_data.sh, or BUNDLE_SKIP_DATA=1"]
    assert not (tmp_path / "wheels").exists()
