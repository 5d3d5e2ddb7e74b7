"""Links the live segments of a loaded data set into one directory (for `token-index`) and
writes `live.json` beside them: their count, rows and bytes. Used by bench/run-all."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from dataset import live_segments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="data set directory (holds trawl/)")
    parser.add_argument("--link", required=True, help="directory to create with links to the live segments")
    args = parser.parse_args()
    link = Path(args.link)
    link.mkdir(parents=True)
    segments = live_segments(Path(args.data) / "trawl")
    total_bytes = 0
    for number, (path, _) in enumerate(segments):
        os.symlink(path, link / f"{number:05}.parquet")
        total_bytes += os.path.getsize(path)
    summary = {"segments": len(segments), "rows": sum(rows for _, rows in segments), "bytes": total_bytes}
    (link.parent / "live.json").write_text(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
