#!/usr/bin/env python3
"""Fit racksweep's global model factors (src/catalog/data/calibration.toml, and the training
model's in src/catalog/data/training.toml) against a measurements file and write them back.

The fit itself is `racksweep validate MEASUREMENTS --fit` (src/validate/fit.rs: the factors and
their candidate grids, the objective, coordinate descent; docs/validation.md, "Calibration").
This script runs it and writes the fitted values into the two factor files, values only, so
their comments stay. Out-of-sample error is `racksweep validate --leave-one-out`.

Usage: scripts/fit-calibration.py [MEASUREMENTS.csv] [--dry-run] [--quick] [--binary PATH]
  --dry-run       print the fit, write nothing
  --quick         a reduced grid (every other value, ends kept) for a fast smoke run
  --binary PATH   run this racksweep binary (also RACKSWEEP_BIN) instead of building with cargo
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALIBRATION = os.path.join(ROOT, "src", "catalog", "data", "calibration.toml")
TRAINING = os.path.join(ROOT, "src", "catalog", "data", "training.toml")
DEFAULT_CSV = os.path.join(ROOT, "reference", "measurements-calibration.csv")


def write_values(path, values):
    """Replace the value of each `key = number` line of `path` (comments and order kept)."""
    text = open(path).read()
    for k, v in values.items():
        text, n = re.subn(rf"^({k}\s*=\s*)([0-9.eE+-]+)", lambda m: f"{m.group(1)}{v}", text,
                          flags=re.M)
        if n != 1:
            sys.exit(f"fit-calibration.py: {os.path.relpath(path, ROOT)} has no line `{k} = ...`")
    open(path, "w").write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("measurements", nargs="?", default=DEFAULT_CSV)
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--binary", default=os.environ.get("RACKSWEEP_BIN"))
    args = p.parse_args()
    if args.binary:
        binary = os.path.abspath(args.binary)
    else:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        binary = os.path.join(target, "release", "racksweep")
    cmd = [binary, "validate", os.path.abspath(args.measurements), "--fit", "--json"]
    if args.quick:
        cmd.append("--quick")
    fit = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    print(f"fitted: objective = {fit['objective']:.4f} (was {fit['committed_objective']:.4f} "
          f"at the committed factors); {fit['runs']} model runs, {fit['elapsed_s']:.0f} s")
    for k, v in fit["factors"].items():
        was = fit["committed_factors"][k]
        print(f"  {k} = {v:g}" + (f"  (was {was:g})" if v != was else ""))
    if args.dry_run:
        return
    inference = {k: v for k, v in fit["factors"].items() if not k.startswith("training.")}
    training = {k[len("training."):]: v for k, v in fit["factors"].items()
                if k.startswith("training.")}
    for path, values in ((CALIBRATION, inference), (TRAINING, training)):
        write_values(path, values)
        print(f"wrote {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
