"""Check a local data mirror against mixlab's data registry (used by ``make data``).

README: ``python data_scripts/verify_mirror.py [MIRROR_DIR] [--strict]`` checks every file the
registry knows (``<mirror>/<folder>/<file>``, e.g. ``usps/usps.h5``) against its recorded md5
(or, for re-compressed copies, the md5 of the gunzipped content; for files without a recorded
md5, the content check) and prints one line per file: OK, BAD (checksum or content mismatch)
or MISSING. MIRROR_DIR defaults to $MIXLAB_DATA_MIRROR. Exit status 1 if any file is BAD (or,
with --strict, MISSING), else 0, and 2 when the mirror directory does not exist.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def verify_mirror(mirror: Path) -> list[tuple[str, str, str]]:
    """Rows (relpath, status, detail) for every registry file; status OK / BAD / MISSING."""
    from mixlab.data.cache import verify
    from mixlab.data.catalogue import DATASETS
    from mixlab.errors import DataError

    rows, seen = [], set()
    for spec in DATASETS.values():
        for f in spec.files:
            if f.relpath in seen:
                continue
            seen.add(f.relpath)
            path = mirror / f.folder / f.name
            if not path.is_file():
                users = [s.name for s in DATASETS.values() if f in s.files]
                alt = any(len(s.alternatives) > 1 for s in DATASETS.values() if f in s.files)
                rows.append((f.relpath, "MISSING", ("one alternative source of " if alt
                                                    else "needed by ") + ", ".join(users)))
                continue
            try:
                verify(f, path)
            except DataError as exc:
                rows.append((f.relpath, "BAD", str(exc)))
            else:
                rows.append((f.relpath, "OK", f.md5 or "content checked (no md5 recorded)"))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mirror", nargs="?", default=os.environ.get("MIXLAB_DATA_MIRROR"),
                    help="mirror directory (default: $MIXLAB_DATA_MIRROR)")
    ap.add_argument("--strict", action="store_true", help="a missing file is an error too")
    args = ap.parse_args(argv)
    if not args.mirror:
        print("no mirror given and MIXLAB_DATA_MIRROR is not set", file=sys.stderr)
        return 2
    mirror = Path(args.mirror).expanduser().resolve()
    if not mirror.is_dir():
        print(f"mirror directory {mirror} does not exist", file=sys.stderr)
        return 2
    rows = verify_mirror(mirror)
    width = max(len(r[0]) for r in rows)
    for relpath, status, detail in rows:
        print(f"{status:8s} {relpath.ljust(width)}  {detail}")
    bad = sum(r[1] == "BAD" for r in rows)
    missing = sum(r[1] == "MISSING" for r in rows)
    print(f"{mirror}: {sum(r[1] == 'OK' for r in rows)} ok, {bad} bad, {missing} missing")
    return 1 if bad or (args.strict and missing) else 0


if __name__ == "__main__":
    sys.exit(main())
