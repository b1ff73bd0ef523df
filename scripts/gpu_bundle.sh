#!/usr/bin/env bash
# Packs, on a machine with network, everything an offline GPU host needs to run zerochess from this
# checkout (scripts/gpu_session.sh), for a host whose Python (3.12 by default) already has jax with CUDA,
# numpy, scipy, matplotlib, rich, msgpack, pyyaml and flax's and orbax's own dependencies:
#   .gpu_wheels/  whl/*.whl (pgx, mctx, flax, optax, orbax-checkpoint, tensorboardX, nvidia-ml-py,
#                 python-chess built from its sdist, svgwrite, jsonschema and its deps), ray_slim.tar.xz
#                 (Ray's wheel unpacked, without its Java jars, dashboard build and the libraries zerochess
#                 does not use: 79 MB -> ~28 MB), stockfish.xz, install.sh (unpacks all of it into site/)
#   .gpu_data/    openings/8moves_v3.pgn.xz, puzzles/lichess_puzzles_themed.csv.xz (the evaluator's book
#                 and puzzles), openings/lichess_chess_openings/*.tsv.xz (chess_warm_gpu's opening lines),
#                 from the data dir: $ZEROCHESS_DATA, else ../shared/data beside the checkout
# Both folders are ignored by git and ruff. Versions: the ones the checkout's .venv runs (the ones its
# tests pass with), else pyproject.toml's ranges. It ends by printing the bundle's size and fails with one
# line if the bundle plus the checkout exceed what one device call carries (64 MiB).
#
#   bash scripts/gpu_bundle.sh                       # on the networked machine, from anywhere
#   (carry the checkout with .gpu_wheels/ and .gpu_data/ to the host)
#   OUT=/tmp/results bash scripts/gpu_session.sh preset    # on the host: installs the bundle on first use
# or by hand on the host: bash .gpu_wheels/install.sh; export PYTHONPATH=$PWD/.gpu_wheels/site
#   STOCKFISH_BIN=$PWD/.gpu_wheels/site/bin/stockfish ZEROCHESS_DATA=$PWD/.gpu_data (after unpacking every .gpu_data/**/*.xz with xz -dk)
#
# Settings (environment; relative paths are relative to where you run it):
#   BUNDLE_OUT=.gpu_wheels        the wheel bundle (default: in the checkout)
#   BUNDLE_DATA_OUT=.gpu_data     the data bundle (default: in the checkout)
#   BUNDLE_SKIP_DATA=1            pack no data
#   BUNDLE_DATA_FILES="a b"       data files to pack, relative to the data dir (default: those above)
#   BUNDLE_PYTHON_VERSION=3.12    the host's Python, for the wheels' tags
#   BUNDLE_PACKAGES="x==1 y"      the requirements downloaded as binary wheels (default: the set above)
#   BUNDLE_SDIST_PACKAGES="z==1"  the requirements built into wheels here (default: python-chess's pin)
#   BUNDLE_RAY="ray==2.60.0"      Ray's requirement; BUNDLE_SKIP_RAY=1 packs no Ray
#   BUNDLE_FIND_LINKS=<dir>       take everything from <dir> (pip --no-index --find-links), no network
#   NO_STOCKFISH=1                pack no Stockfish; else STOCKFISH_BIN (default: stockfish on PATH,
#                                 else /usr/games/stockfish) is packed xz-compressed
#   BUNDLE_LIMIT_MIB=64           the most bundle + checkout may weigh
#   PYTHON=python3                the interpreter whose pip downloads (install.sh honours it too)
set -euo pipefail
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
py=${PYTHON:-python3}
checkout=$(cd "$(dirname "$0")/.." && pwd)
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
out=$(absolute "${BUNDLE_OUT:-$checkout/.gpu_wheels}")
data_out=$(absolute "${BUNDLE_DATA_OUT:-$checkout/.gpu_data}")
data_src=$(absolute "${ZEROCHESS_DATA:-$checkout/../shared/data}")
limit_mib=${BUNDLE_LIMIT_MIB:-64}
fail() { echo "gpu_bundle: $*" >&2; exit 1; }

# --- what to pack: pyproject's dependencies the host lacks, pinned to .venv's versions --------------
pins=""
if [ -z "${BUNDLE_PACKAGES+x}" ] || [ -z "${BUNDLE_SDIST_PACKAGES+x}" ] \
   || { [ -z "${BUNDLE_RAY+x}" ] && [ -z "${BUNDLE_SKIP_RAY:-}" ]; }; then
  venv_py=$checkout/.venv/bin/python
  [ -x "$venv_py" ] || venv_py=""
  pins=$("$py" - "$checkout/pyproject.toml" "$venv_py" <<'PY'
import json, re, subprocess, sys, tomllib
pyproject, venv_py = sys.argv[1], sys.argv[2]
wanted = ["pgx", "mctx", "flax", "optax", "orbax-checkpoint", "tensorboardx", "nvidia-ml-py", "chess", "ray"]
extra = ["svgwrite", "jsonschema", "referencing", "rpds-py", "jsonschema-specifications"]  # pgx's and Ray's
ranges = {}
for dep in tomllib.load(open(pyproject, "rb"))["project"]["dependencies"]:
    name = re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0]
    ranges[name.lower()] = dep.replace(" ", "")
names = [n for n in wanted if n in ranges] + extra
versions = {}
if venv_py:  # the versions the checkout's tests pass with
    probe = ("import importlib.metadata as m, json, sys\n"
             "v = {}\n"
             "for n in sys.argv[1:]:\n"
             "    try: v[n] = m.version(n)\n"
             "    except m.PackageNotFoundError: pass\n"
             "print(json.dumps(v))\n")
    try:
        versions = json.loads(subprocess.run([venv_py, "-c", probe, *names], capture_output=True,
                                             text=True, check=True).stdout)
    except (OSError, subprocess.CalledProcessError, ValueError):
        versions = {}
for n in names:
    print(f"{n}=={versions[n]}" if n in versions else ranges.get(n, n))
PY
  ) || fail "could not read the package set from pyproject.toml"
fi
packages=${BUNDLE_PACKAGES-$(grep -viE '^(chess|ray)([<>=!~]|$)' <<< "$pins" | tr '\n' ' ' || true)}
sdist_packages=${BUNDLE_SDIST_PACKAGES-$(grep -iE '^chess([<>=!~]|$)' <<< "$pins" | tr '\n' ' ' || true)}
ray_req=${BUNDLE_RAY-$(grep -iE '^ray([<>=!~]|$)' <<< "$pins" || true)}
read -r -a packages <<< "$packages"
read -r -a sdist_packages <<< "$sdist_packages"

source_args=()
[ -n "${BUNDLE_FIND_LINKS:-}" ] && source_args=(--no-index --find-links "$(absolute "$BUNDLE_FIND_LINKS")")
host_tags=(--only-binary=:all: --implementation cp --python-version "${BUNDLE_PYTHON_VERSION:-3.12}"
           --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)

# --- the inputs that are not downloaded, checked before anything is --------------------------------
sf=""
if [ -z "${NO_STOCKFISH:-}" ]; then
  sf=${STOCKFISH_BIN:-$(command -v stockfish || echo /usr/games/stockfish)}
  [ -x "$sf" ] || fail "no Stockfish at $sf: set STOCKFISH_BIN, apt-get install -y stockfish, or NO_STOCKFISH=1"
fi
data_files=()
if [ -z "${BUNDLE_SKIP_DATA:-}" ]; then
  default_data="openings/8moves_v3.pgn puzzles/lichess_puzzles_themed.csv"
  for l in a b c d e; do default_data+=" openings/lichess_chess_openings/$l.tsv"; done
  read -r -a data_files <<< "${BUNDLE_DATA_FILES:-$default_data}"
  for f in "${data_files[@]}"; do
    [ -f "$data_src/$f" ] || fail "no $data_src/$f: set ZEROCHESS_DATA, run scripts/download_data.sh, or BUNDLE_SKIP_DATA=1"
  done
fi

# --- the wheel bundle (rebuilt from scratch: a stale wheel beside a new one breaks the install) -----
rm -rf "$out/whl" "$out/site" "$out/ray_slim.tar.xz" "$out/stockfish.xz" "$out/install.sh"
mkdir -p "$out/whl"
if [ ${#packages[@]} -gt 0 ]; then
  echo "wheels: ${packages[*]}"
  "$py" -m pip download -q --no-deps "${source_args[@]}" "${host_tags[@]}" -d "$out/whl" "${packages[@]}"
fi
if [ ${#sdist_packages[@]} -gt 0 ]; then  # python-chess ships an sdist only: pure Python, built here
  echo "built from sdists: ${sdist_packages[*]}"
  "$py" -m pip wheel -q --no-deps "${source_args[@]}" -w "$out/whl" "${sdist_packages[@]}"
fi

if [ -z "${BUNDLE_SKIP_RAY:-}" ] && [ -n "$ray_req" ]; then
  echo "Ray, slimmed: $ray_req"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  "$py" -m pip download -q --no-deps "${source_args[@]}" "${host_tags[@]}" -d "$work" "$ray_req"
  # unpack keeping each file's mode (python -m zipfile would drop the executable bits of Ray's servers)
  "$py" - "$work"/ray-*.whl "$work/site" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for info in wheel.infolist():
        path = wheel.extract(info, sys.argv[2])
        mode = info.external_attr >> 16
        if mode and not info.is_dir():
            os.chmod(path, mode & 0o777)
PY
  rm -rf "$work/site/ray/"{jars,rllib,data,serve,train,tune,llm,dashboard/client/build}
  tar -C "$work/site" -cf - . | xz -T0 -6 > "$out/ray_slim.tar.xz"
  rm -rf "$work"
fi

if [ -n "$sf" ]; then
  echo "Stockfish: $sf"
  xz -T0 -6 -c "$sf" > "$out/stockfish.xz"
fi

cat > "$out/install.sh" <<'SH'
#!/usr/bin/env bash
# Unpacks this bundle into site/ beside it (made by scripts/gpu_bundle.sh; needs no network). Then:
#   export PYTHONPATH=<this folder>/site STOCKFISH_BIN=<this folder>/site/bin/stockfish
set -euo pipefail
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
here=$(cd "$(dirname "$0")" && pwd)
site=$here/site
mkdir -p "$site"
[ ! -f "$here/ray_slim.tar.xz" ] || tar -C "$site" -xJf "$here/ray_slim.tar.xz"
shopt -s nullglob
wheels=("$here"/whl/*.whl)
if [ ${#wheels[@]} -gt 0 ]; then
  "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" "${wheels[@]}"
fi
if [ -f "$here/stockfish.xz" ]; then
  mkdir -p "$site/bin"
  xz -dc "$here/stockfish.xz" > "$site/bin/stockfish.part"
  chmod 755 "$site/bin/stockfish.part" && mv "$site/bin/stockfish.part" "$site/bin/stockfish"
fi
echo "installed into $site"
SH
chmod +x "$out/install.sh"

# --- the data bundle: the evaluator's opening book and puzzles, xz-compressed -------------------------
if [ -z "${BUNDLE_SKIP_DATA:-}" ]; then
  for f in "${data_files[@]}"; do
    mkdir -p "$(dirname "$data_out/$f")"
    rm -f "$data_out/$f"  # a stale unpacked copy would win over the new .xz in gpu_session.sh
    xz -T0 -6 -c "$data_src/$f" > "$data_out/$f.xz"
  done
  echo "data: ${data_files[*]} from $data_src"
fi

# --- the size: bundle, and bundle + checkout against what a device call carries -----------------------
bundles=("$out")
[ -n "${BUNDLE_SKIP_DATA:-}" ] || bundles+=("$data_out")
"$py" - "$checkout" "$limit_mib" "${bundles[@]}" <<'PY' || exit 1
import os, subprocess, sys
checkout, limit_mib, bundles = sys.argv[1], float(sys.argv[2]), sys.argv[3:]

def files_under(root):
    for parent, _, names in os.walk(root):
        yield from (os.path.realpath(os.path.join(parent, n)) for n in names)

bundle = {p for b in bundles for p in files_under(b)}
try:  # what a device call copies: tracked files and untracked ones git does not ignore
    listed = subprocess.run(["git", "-C", checkout, "ls-files", "-z", "-co", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    tree = {os.path.realpath(os.path.join(checkout, p)) for p in listed if p}
except (OSError, subprocess.CalledProcessError):  # not a git checkout: everything but .git and .venv
    tree = {p for p in files_under(checkout) if not {".git", ".venv"} & set(os.path.relpath(p, checkout).split(os.sep))}

def mib(paths):
    return sum(os.path.getsize(p) for p in paths if os.path.isfile(p)) / 2**20

parts = ", ".join(f"{os.path.basename(b)} {mib(set(files_under(b))):.1f} MiB" for b in bundles)
total = mib(bundle | tree)
print(f"bundle: {mib(bundle):.1f} MiB ({parts}); with the checkout {total:.1f} MiB of {limit_mib:g} MiB")
if total > limit_mib:
    print(f"gpu_bundle: bundle + checkout = {total:.1f} MiB, over BUNDLE_LIMIT_MIB={limit_mib:g} (what one device "
          f"call carries): try NO_STOCKFISH=1 or fewer BUNDLE_PACKAGES", file=sys.stderr)
    sys.exit(1)
PY
