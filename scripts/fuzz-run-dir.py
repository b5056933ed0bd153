#!/usr/bin/env python3
"""Damages a finished run directory at random and checks that every command that reads or
resumes it answers as docs/schema.md promises: exit 0 or 1 (a clear error), never 2 (racksweep's
own failure), never a panic, never a hang.

Each trial copies a finished three-part run of tests/specs/ties.toml and applies one to three
mutations to its files: bytes flipped, truncated, deleted, emptied, replaced by a directory, a
FIFO or a symlink to /dev/zero, grown to a 20 MiB sparse file, swapped with another file, a JSON
field changed or deleted, or a Parquet file changed together with the checksum its record or
manifest keeps (a forged record). Then `top`, `pareto`, `report`, `merge` and `run --resume` run
on it, each with a 30 s limit.

Usage: scripts/fuzz-run-dir.py BINARY [--seed N] [--trials N]
Prints each violation and a tally of exit codes; exits 1 if any command broke the contract.
Standard library only. Takes about 10 s per 150 trials.
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP = os.path.join(ROOT, "tests", "specs", "ties.toml")
KINDS = ["flip", "trunc", "delete", "dir", "empty", "json", "symlink", "forge", "swap", "fifo", "huge"]


def regular(path):
    return os.path.isfile(path) and not os.path.islink(path)


def flip(data, rng, most):
    data = bytearray(data)
    for _ in range(rng.randint(1, most)):
        i = rng.randrange(len(data))
        data[i] ^= rng.randrange(1, 256)
    return bytes(data)


def edit_json(value, rng):
    """Replaces or deletes one field somewhere in `value`, in place."""
    if isinstance(value, dict) and value:
        key = rng.choice(list(value))
        r = rng.random()
        if r < 0.3:
            value[key] = rng.choice([None, -1, 1e300, "x", [], {}, 2**64, 0.5])
        elif r < 0.4:
            del value[key]
        else:
            edit_json(value[key], rng)
    elif isinstance(value, list) and value:
        value[rng.randrange(len(value))] = rng.choice([None, -1, 2**70, "x", 1e308])


def forge_checksum(run, path, data):
    """Writes the SHA-256 of `data` wherever the run records `path`'s."""
    name = os.path.basename(path)
    digest = hashlib.sha256(data).hexdigest()
    parts = os.path.join(run, "parts")
    records = [os.path.join(parts, f) for f in os.listdir(parts) if f.endswith(".json")]
    for record in records + [os.path.join(run, "manifest.json")]:
        if not regular(record):
            continue
        try:
            with open(record) as f:
                j = json.load(f)
        except ValueError:
            continue
        if not isinstance(j, dict):
            continue
        stem = os.path.basename(record)[: -len(".json")]
        if record.endswith("manifest.json") and name == "pareto.parquet":
            j["pareto_sha256"] = digest
        elif name.startswith(stem + "."):
            j["pareto_sha256" if name.endswith(".pareto.parquet") else "configs_sha256"] = digest
        else:
            continue
        with open(record, "w") as f:
            json.dump(j, f)


def mutate(run, files, rng):
    path = os.path.join(run, rng.choice(files))
    if not regular(path):
        return "none"
    kind = rng.choice(KINDS)
    with open(path, "rb") as f:
        data = f.read()
    if kind == "flip" and data:
        data = flip(data, rng, 20)
    elif kind == "trunc":
        data = data[: rng.randrange(len(data) + 1)]
    elif kind == "empty":
        data = b""
    elif kind == "json" and path.endswith(".json"):
        try:
            j = json.loads(data)
        except ValueError:
            return "none"
        edit_json(j, rng)
        data = json.dumps(j).encode()
    elif kind == "forge" and path.endswith(".parquet") and data:
        data = flip(data, rng, 50)
        forge_checksum(run, path, data)
    elif kind == "swap":
        other = os.path.join(run, rng.choice(files))
        if not regular(other):
            return "none"
        with open(other, "rb") as f:
            theirs = f.read()
        with open(other, "wb") as f:
            f.write(data)
        data = theirs
    elif kind in ("delete", "dir", "symlink", "fifo"):
        os.remove(path)
        if kind == "dir":
            os.mkdir(path)
        elif kind == "symlink":
            os.symlink("/dev/zero", path)
        elif kind == "fifo":
            os.mkfifo(path)
        return f"{kind}:{os.path.relpath(path, run)}"
    elif kind == "huge":
        with open(path, "ab") as f:
            f.truncate(20 * 1024 * 1024)
        return f"{kind}:{os.path.relpath(path, run)}"
    else:
        return "none"
    with open(path, "wb") as f:
        f.write(data)
    return f"{kind}:{os.path.relpath(path, run)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=150)
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="racksweep-fuzz-")
    try:
        base = os.path.join(work, "base")
        subprocess.run(
            [binary, "run", SWEEP, "--out", base, "--quiet", "--part-rows", "8"], check=True
        )
        base = os.path.join(base, "ties")
        files = sorted(
            os.path.relpath(os.path.join(d, f), base) for d, _, fs in os.walk(base) for f in fs
        )
        codes, bad = {}, 0
        for trial in range(args.trials):
            out = os.path.join(work, "trial")
            shutil.rmtree(out, ignore_errors=True)
            run = os.path.join(out, "ties")
            shutil.copytree(base, run, symlinks=True)
            mutations = [mutate(run, files, rng) for _ in range(rng.randint(1, 3))]
            commands = [
                ["top", run, "--by", "tokens_per_s_per_gpu"],
                ["pareto", run, "--objective", "max tokens_per_s_per_gpu"],
                ["report", run],
                ["merge", run],
                ["run", SWEEP, "--out", out, "--resume", "--quiet"],
            ]
            for command in commands:
                try:
                    done = subprocess.run(
                        [binary] + command, capture_output=True, timeout=30, cwd=ROOT
                    )
                except subprocess.TimeoutExpired:
                    bad += 1
                    print(f"trial {trial}: {mutations}: {command[0]} hung")
                    continue
                codes[done.returncode] = codes.get(done.returncode, 0) + 1
                if done.returncode not in (0, 1):
                    bad += 1
                    said = done.stderr.decode(errors="replace")[:300].replace("\n", " | ")
                    print(f"trial {trial}: {mutations}: {command[0]} exited {done.returncode}: {said}")
        print(f"{args.trials} trials, exit codes {dict(sorted(codes.items()))}, {bad} violations")
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
