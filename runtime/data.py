"""Where evaluation data lives: $ZEROCHESS_DATA, else ../shared/data beside the checkout."""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The evaluation-data root (puzzles/, epd/, perft/, openings/, games/, evals/)."""
    return Path(os.environ.get("ZEROCHESS_DATA", REPO_ROOT.parent / "shared" / "data"))


def data_file(*parts: str) -> Path:
    """A file under the data root; a clear error names it and the download command if missing."""
    path = data_dir().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"data file {path} not found: set ZEROCHESS_DATA or run 'bash scripts/download_data.sh'")
    return path
