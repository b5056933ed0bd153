"""The end of every script that writes a file the repository commits: write it, or with
`--check` exit 1 if the committed file differs from what the script gives now. Standard library
only; the scripts beside it import it (their directory is on `sys.path` when run as
`python3 scripts/<name>.py`)."""

import sys


def write_or_check(path, text, check, source):
    """Writes `text` to `path`, or with `check` compares them; `source` names what the text
    was made from, for the message."""
    if check:
        if path.read_text() != text:
            sys.exit(f"{path} differs from what {source} give; rerun without --check")
        print(f"{path}: up to date")
        return
    path.write_text(text)
    print(f"wrote {path}")
