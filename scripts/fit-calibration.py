#!/usr/bin/env python3
"""Fit racksweep's global model factors (src/catalog/data/calibration.toml, and the training
model's in src/catalog/data/training.toml) against a measurements file, once and for all rows
alike.

Objective: the statistics the accuracy targets are stated in. For each metric of
`racksweep validate --json`, the median and the 90th percentile of the absolute percentage
error, each taken as ln(1 + error); the objective is their mean, weighted by each metric's
number of predictions (no row is singled out). Medians and percentiles are robust: a few cases
the model cannot explain (engine maturity, workloads whose spread the file does not give) do not
drag the shared factors away from the bulk of the data, as a mean error would. A case the factors
make unreachable ("no configuration meets the case's scenario") adds an error of ln(10) rather
than dropping out, so a fit cannot improve by losing cases. Method: coordinate descent over a grid of values per factor, repeated until no factor
moves. The result is written back into calibration.toml (values only; comments stay) and the
objective before and after is printed.

Training rows are scored too, so the factors the two models share (attention_efficiency,
moe_gemm_efficiency) are fitted against both. `--only training` or `--only inference` fits one
model's own factors and keeps the other's as they are.

Usage: scripts/fit-calibration.py [MEASUREMENTS.csv] [--dry-run] [--only training|inference]
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALIBRATION = os.path.join(ROOT, "src", "catalog", "data", "calibration.toml")
TRAINING = os.path.join(ROOT, "src", "catalog", "data", "training.toml")
DEFAULT_CSV = os.path.join(ROOT, "reference", "measurements-calibration.csv")

# Candidate values per factor (physical ranges; see docs/validation.md, "Calibration").
GRID = {
    "serving_gemm_efficiency": [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0],
    "serving_gemm_efficiency_fp4": [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0],
    "moe_gemm_efficiency": [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "attention_efficiency": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "gemm_half_rows": [0.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0],
    # Engines' per-iteration CPU cost is on the order of milliseconds (TensorRT-LLM's C++
    # executor less, Python schedulers more); values beyond 4 ms would stand in for something else.
    "step_overhead_ms": [0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0],
    # Spread of prompt lengths the measurements do not state: 0 (fixed) to 1 (exponential).
    "prompt_length_cv": [0.0, 0.25, 0.5, 0.75, 1.0],
}


# The training model's own factors (training.toml), written to the override file as a
# [training] table. restart_minutes is an assumption about the cluster, not fitted.
GRID_TRAINING = {
    "gemm_efficiency": [0.6, 0.65, 0.7, 0.75, 0.8, 0.825, 0.85, 0.875, 0.9, 0.95, 1.0],
    "tp_comm_overlap": [0.0, 0.25, 0.5, 0.75, 1.0],
    # Narrow GEMMs: from no effect to half the rate at a 2,048-wide weight.
    "gemm_half_width": [0.0, 256.0, 512.0, 768.0, 1024.0, 1280.0, 1536.0, 2048.0],
}
FIXED_TRAINING = ["restart_minutes"]


def read_values(path, keys):
    text = open(path).read()
    return {k: float(re.search(rf"^{k}\s*=\s*([0-9.eE+-]+)", text, re.M).group(1)) for k in keys}


def write_values(path, values):
    text = open(path).read()
    for k, v in values.items():
        text = re.sub(rf"^({k}\s*=\s*)([0-9.eE+-]+)", lambda m: f"{m.group(1)}{v}", text, flags=re.M)
    open(path, "w").write(text)


def split(values):
    """Inference and training values of one combined dict (training keys prefixed)."""
    inference = {k: v for k, v in values.items() if not k.startswith("training.")}
    training = {k[len("training."):]: v for k, v in values.items() if k.startswith("training.")}
    return inference, training


def objective(binary, csv, values, cache={}):
    key = tuple(sorted(values.items()))
    if key in cache:
        return cache[key]
    inference, training = split(values)
    training.update(read_values(TRAINING, FIXED_TRAINING))
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write("".join(f"{k} = {v}\n" for k, v in inference.items()))
        f.write("[training]\n" + "".join(f"{k} = {v}\n" for k, v in training.items()))
        path = f.name
    try:
        out = subprocess.run([binary, "validate", csv, "--json", "--calibration", path],
                             check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    summary = json.loads(out)
    metrics = summary["metrics"]
    lost = sum(1 for s in summary["skipped"] if s["reason"].startswith("no configuration"))
    n = sum(m["n"] for m in metrics.values()) + lost
    robust = sum(
        m["n"] * (math.log1p(m["median_abs_pct_err"] / 100) + math.log1p(m["p90_abs_pct_err"] / 100)) / 2
        for m in metrics.values()
    )
    score = (robust + lost * math.log(10)) / n
    cache[key] = score
    return score


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--") and a not in ("training", "inference")]
    csv = os.path.abspath(args[0]) if args else DEFAULT_CSV
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    binary = os.path.join(target, "release", "racksweep")
    grid = {**GRID, **{f"training.{k}": c for k, c in GRID_TRAINING.items()}}
    values = {**read_values(CALIBRATION, GRID),
              **{f"training.{k}": v for k, v in read_values(TRAINING, GRID_TRAINING).items()}}
    # Start from grid values, so a value outside the allowed range never sticks.
    values = {k: min(grid[k], key=lambda c: abs(c - v)) for k, v in values.items()}
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    if only not in (None, "training", "inference"):
        sys.exit("fit-calibration.py: --only takes training or inference")
    fitted = {k: c for k, c in grid.items()
              if only is None or (only == "training") == k.startswith("training.")}
    start = objective(binary, csv, values)
    print(f"start: objective = {start:.4f}  {values}")
    for round_ in range(6):
        moved = False
        for k, candidates in fitted.items():
            scores = [(objective(binary, csv, {**values, k: c}), c) for c in candidates]
            best_score, best = min(scores)
            if best != values[k] and best_score < objective(binary, csv, values) - 1e-6:
                values[k] = best
                moved = True
            print(f"round {round_ + 1}: {k} = {values[k]}  ({objective(binary, csv, values):.4f})")
        if not moved:
            break
    end = objective(binary, csv, values)
    print(f"fitted: objective = {end:.4f} (was {start:.4f})  {values}")
    if "--dry-run" not in sys.argv:
        inference, training = split(values)
        for path, part, name in ((CALIBRATION, inference, "inference"), (TRAINING, training, "training")):
            if only in (None, name):
                write_values(path, part)
                print(f"wrote {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
