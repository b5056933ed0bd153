#!/usr/bin/env python3
"""Fit racksweep's global model factors (src/catalog/data/calibration.toml, and the training
model's in src/catalog/data/training.toml) against a measurements file, once and for all rows
alike; or, with --leave-one-out, measure how well that fit predicts rows it has not seen.

Objective: the statistics the accuracy targets are stated in. For each metric of
`racksweep validate`, the median and the 90th percentile of the absolute percentage
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

--leave-one-out: the rows are grouped into source families (FAMILIES below: one publication or
benchmark round each). The factors are fitted on all rows (in sample), then once per family on
all rows but that family's, starting from the all-rows fit; the family's rows are scored with the
factors fitted without them (out of sample). Prints a Markdown report: the families, and per
metric the median and p90 absolute error in and out of sample, overall and per family. Never
writes calibration.toml or training.toml.

Every validate run gives every case's error, so runs are memoized by factor vector and every
family's objective is computed from the same per-case errors. Inference rows depend on the
inference factors only and training rows on the training factors plus the two shared ones
(checked by perturbing each factor), so the two kinds run as separate files, memoized
separately: a training candidate costs a fraction of a second, an inference one seconds.

Usage: scripts/fit-calibration.py [MEASUREMENTS.csv] [--dry-run] [--only training|inference]
           [--binary PATH] [--jobs N] [--quick] [--leave-one-out] [--markdown FILE]
  --binary PATH   run this racksweep binary (also RACKSWEEP_BIN) instead of building with cargo;
                  it is copied first, so a rebuild during the fit does not mix two models
  --jobs N        validate runs at once (default 1; each run uses every core already)
  --quick         a reduced grid (every other value, ends kept) for a fast smoke run
  --cache FILE    keep the per-case errors of every run in FILE (JSON lines) and reuse them
                  when the binary and measurements are the same; resumes an interrupted run
"""
import argparse
import concurrent.futures
import csv
import hashlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict

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
# [training] table. Keys of either file that are not in a grid (restart_minutes, an assumption
# about the cluster; cpu_ms_per_iteration, ...) are passed through at their committed values.
GRID_TRAINING = {
    "gemm_efficiency": [0.6, 0.65, 0.7, 0.75, 0.8, 0.825, 0.85, 0.875, 0.9, 0.95, 1.0],
    "tp_comm_overlap": [0.0, 0.25, 0.5, 0.75, 1.0],
    # Narrow GEMMs: from no effect to half the rate at a 2,048-wide weight.
    "gemm_half_width": [0.0, 256.0, 512.0, 768.0, 1024.0, 1280.0, 1536.0, 2048.0],
}

# Inference factors the training model reads too: a training row's error depends on these and
# the training.* factors; an inference row's on the inference factors only.
SHARED = ("attention_efficiency", "moe_gemm_efficiency")

# Source families for --leave-one-out: (family, pattern on the `source` column), first match
# wins. A family is one publication or one benchmark round, so that leaving it out leaves out
# everything its authors measured with that harness: the two versions of TensorRT-LLM's
# perf-overview tables are one family (same harness, same page, overlapping configurations), as
# are MLPerf Inference v5.1's closed and open divisions and all InferenceX pages. A row no pattern
# matches is an error: a new source needs a decision here.
FAMILIES = [
    ("MLPerf Inference v4.0", r"^MLPerf Inference v4\.0\b"),
    ("MLPerf Inference v4.1", r"^MLPerf Inference v4\.1\b"),
    ("MLPerf Inference v5.0", r"^MLPerf Inference v5\.0\b"),
    ("MLPerf Inference v5.1", r"^MLPerf Inference v5\.1\b"),
    ("TensorRT-LLM perf-overview tables", r"^TensorRT-LLM docs .*perf-overview"),
    ("TensorRT-LLM DeepSeek-R1 blog", r"^TensorRT-LLM blog\b"),
    ("InferenceX (SemiAnalysis)", r"^InferenceX\b"),
    ("Megatron-Bridge 25.11 performance summary", r"^NVIDIA Megatron-Bridge\b"),
    ("NeMo 24.07 performance summary", r"^NVIDIA NeMo Framework\b"),
    ("Narayanan et al. 2021 (Megatron-LM)", r"^Narayanan et al\. 2021\b"),
    ("Llama 3 Herd of Models", r"^Dubey et al\. 2024\b"),
    ("Megatron-LM README", r"^Megatron-LM README\b"),
    ("DeepSeek-V3 report", r"^DeepSeek-V3 Technical Report\b"),
    ("MLPerf Training v3.0 (EE Times)", r"MLPerf Training v3\.0\b"),
]

UNREACHABLE = "no configuration"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def read_values(path, keys):
    text = open(path).read()
    return {k: float(re.search(rf"^{k}\s*=\s*([0-9.eE+-]+)", text, re.M).group(1)) for k in keys}


def read_all_values(path):
    """Every top-level `key = number` of a factor file, in file order."""
    text = open(path).read()
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^([a-z0-9_]+)\s*=\s*([0-9.eE+-]+)", text, re.M)}


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


def percentile(sorted_values, p):
    """Linear-interpolated percentile (numpy's default), as `racksweep validate` computes it."""
    if not sorted_values:
        return float("nan")
    rank = p * (len(sorted_values) - 1)
    lo, hi = math.floor(rank), math.ceil(rank)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (rank - lo)


def metric_stats(errors):
    """{metric: (n, median, p90)} of absolute % errors, from {(case, metric): signed % error}."""
    by_metric = defaultdict(list)
    for (_, metric), e in errors.items():
        by_metric[metric].append(abs(e))
    out = {}
    for metric, abs_errs in sorted(by_metric.items()):
        abs_errs.sort()
        out[metric] = (len(abs_errs), percentile(abs_errs, 0.5), percentile(abs_errs, 0.9))
    return out


def score(errors, lost):
    """The fit's objective (module docstring) of per-case errors and unreachable cases."""
    stats = metric_stats(errors)
    n = sum(s[0] for s in stats.values()) + len(lost)
    if n == 0:
        return 0.0
    robust = sum(k * (math.log1p(med / 100) + math.log1p(p90 / 100)) / 2
                 for k, med, p90 in stats.values())
    return (robust + len(lost) * math.log(10)) / n


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def snapshot_binary(path, into):
    """Copy the binary so a rebuild under us cannot mix two models in one fit; retry while the
    file is being replaced."""
    dest = os.path.join(into, "racksweep")
    for attempt in range(10):
        try:
            shutil.copy2(path, dest)
            subprocess.run([dest, "--version"], check=True, capture_output=True)
            return dest
        except (OSError, subprocess.CalledProcessError) as e:
            log(f"copying {path} failed ({e}); retrying")
            time.sleep(5 * (attempt + 1))
    sys.exit(f"fit-calibration.py: could not copy a working binary from {path}")


class Evaluator:
    """Per-case errors for a factor vector, memoized. Inference and training rows run as two
    files; each run is keyed by the factors its rows depend on."""

    def __init__(self, binary, csv_path, workdir, jobs, cache_path=None):
        self.binary = binary
        self.jobs = jobs
        self.fixed_inference = read_all_values(CALIBRATION)
        self.fixed_training = read_all_values(TRAINING)
        rows = list(csv.DictReader(open(csv_path, newline="")))
        self.rows = rows
        self.measured = {(r["case_id"], r["metric"]): float(r["value"]) for r in rows}
        self.parts = {}
        for kind in ("inference", "training"):
            kind_rows = [r for r in rows if r["kind"] == kind]
            if not kind_rows:
                continue
            path = os.path.join(workdir, f"{kind}.csv")
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
                w.writeheader()
                w.writerows(kind_rows)
            self.parts[kind] = path
        self.memo = {}
        self.lock = threading.Lock()
        self.runs = 0
        self.run_seconds = 0.0
        self.cache_file = None
        if cache_path:
            self._open_cache(cache_path, sha256(binary), sha256(csv_path))

    def _open_cache(self, path, binary_sha, csv_sha):
        stamp = {"binary_sha256": binary_sha, "measurements_sha256": csv_sha}
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
            if lines and json.loads(lines[0]) == stamp:
                for line in lines[1:]:
                    entry = json.loads(line)
                    errors = {(c, m): e for c, m, e in entry["errors"]}
                    self.memo[(entry["kind"], tuple(map(tuple, entry["key"])))] = (errors, set(entry["lost"]))
                log(f"cache: {len(self.memo)} runs reused from {path}")
                self.cache_file = open(path, "a")
                return
            log(f"cache: {path} is for another binary or measurements file; starting it afresh")
        self.cache_file = open(path, "w")
        self.cache_file.write(json.dumps(stamp) + "\n")
        self.cache_file.flush()

    @staticmethod
    def key(kind, values):
        keys = [k for k in values if (kind == "training") == k.startswith("training.")]
        if kind == "training":
            keys += SHARED
        return tuple(sorted((k, values[k]) for k in keys))

    def _run(self, kind, values):
        inference, training = split(values)
        inference = {**self.fixed_inference, **inference}
        training = {**self.fixed_training, **training}
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write("".join(f"{k} = {v}\n" for k, v in inference.items()))
            f.write("[training]\n" + "".join(f"{k} = {v}\n" for k, v in training.items()))
            path = f.name
        start = time.monotonic()
        try:
            out = subprocess.run(
                [self.binary, "validate", self.parts[kind], "--markdown", "--calibration", path],
                check=True, capture_output=True, text=True).stdout
        except subprocess.CalledProcessError as e:
            sys.exit(f"fit-calibration.py: racksweep validate failed:\n{e.stderr}")
        finally:
            os.unlink(path)
        with self.lock:
            self.runs += 1
            self.run_seconds += time.monotonic() - start
        return self.parse(out)

    def parse(self, markdown):
        """Per-case signed % errors and unreachable cases from `validate --markdown`. The error
        is recomputed from the CSV's measured value and the printed prediction (more digits than
        the printed error for all but tiny predictions)."""
        errors, lost = {}, set()
        section = None
        for line in markdown.splitlines():
            if line.startswith("### "):
                section = line[4:].strip()
                continue
            if not line.startswith("| ") or line.startswith("| case ") or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if section == "Skipped cases":
                if cells[1].startswith(UNREACHABLE):
                    lost.add(cells[0])
            elif section == "Every prediction":
                case, metric, err = cells[0], cells[2].strip("`"), cells[5]
                if err == "input":
                    continue
                predicted = float(cells[4])
                errors[(case, metric)] = (predicted / self.measured[(case, metric)] - 1) * 100
        return errors, lost

    def _get(self, kind, values):
        k = (kind, self.key(kind, values))
        if k not in self.memo:
            result = self._run(kind, values)
            with self.lock:
                self.memo[k] = result
                if self.cache_file:
                    errors, lost = result
                    self.cache_file.write(json.dumps({
                        "kind": kind, "key": [list(p) for p in k[1]],
                        "errors": [[c, m, e] for (c, m), e in sorted(errors.items())],
                        "lost": sorted(lost)}) + "\n")
                    self.cache_file.flush()
        return self.memo[k]

    def evaluate(self, values):
        """(errors, lost) of every case at these factor values."""
        errors, lost = {}, set()
        for kind in self.parts:
            e, l = self._get(kind, values)
            errors.update(e)
            lost |= l
        return errors, lost

    def prefetch(self, candidates):
        """Run the candidates not memoized yet, `jobs` at a time."""
        todo = {}
        for values in candidates:
            for kind in self.parts:
                k = (kind, self.key(kind, values))
                if k not in self.memo:
                    todo.setdefault(k, (kind, values))
        if self.jobs > 1 and len(todo) > 1:
            with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
                list(pool.map(lambda kv: self._get(*kv), todo.values()))
        else:
            for kind, values in todo.values():
                self._get(kind, values)


def restrict(result, cases):
    """The part of (errors, lost) that belongs to `cases`."""
    errors, lost = result
    return {k: e for k, e in errors.items() if k[0] in cases}, lost & cases


def descend(evaluator, cases, start, fitted, label):
    """Coordinate descent over `fitted` (factor -> candidates) of the objective on `cases`."""
    def objective(values):
        return score(*restrict(evaluator.evaluate(values), cases))

    values = dict(start)
    start_score = objective(values)
    log(f"[{label}] start: objective = {start_score:.4f}")
    for round_ in range(6):
        moved = False
        for k, candidates in fitted.items():
            evaluator.prefetch([{**values, k: c} for c in candidates])
            scores = [(objective({**values, k: c}), c) for c in candidates]
            best_score, best = min(scores)
            if best != values[k] and best_score < objective(values) - 1e-6:
                values[k] = best
                moved = True
            log(f"[{label}] round {round_ + 1}: {k} = {values[k]}  ({objective(values):.4f})"
                f"  [{evaluator.runs} validate runs, {evaluator.run_seconds:.0f} s]")
        if not moved:
            break
    end_score = objective(values)
    log(f"[{label}] fitted: objective = {end_score:.4f} (was {start_score:.4f})")
    return values, start_score, end_score


def family_of(source):
    for family, pattern in FAMILIES:
        if re.search(pattern, source):
            return family
    sys.exit(f"fit-calibration.py: source {source!r} matches no family of FAMILIES\n"
             "hint: add a (family, pattern) line for its publication")


def families(rows):
    """{family: {"cases": set, "rows": int}}, in FAMILIES order."""
    out = {}
    for r in rows:
        fam = out.setdefault(family_of(r["source"]), {"cases": set(), "rows": 0})
        fam["cases"].add(r["case_id"])
        fam["rows"] += 1
    order = [f for f, _ in FAMILIES]
    return dict(sorted(out.items(), key=lambda kv: order.index(kv[0])))


def pct(x):
    return "-" if x is None or math.isnan(x) else f"{x:.1f}%"


def leave_one_out(evaluator, start, grid, fitted, quick, binary_sha):
    t0 = time.monotonic()
    fams = families(evaluator.rows)
    log("source families (rows, cases):")
    for name, fam in fams.items():
        log(f"  {name}: {fam['rows']} rows, {len(fam['cases'])} cases")
    all_cases = set().union(*(f["cases"] for f in fams.values()))

    full, _, full_score = descend(evaluator, all_cases, start, fitted, "all rows")
    in_errors, in_lost = evaluator.evaluate(full)

    out_errors, out_lost, per_family = {}, set(), {}
    for name, fam in fams.items():
        mine = fam["cases"]
        fam_in = restrict((in_errors, in_lost), mine)
        if not fam_in[0] and not fam_in[1]:
            log(f"[{name}] no scored predictions: not refitted")
            per_family[name] = (None, fam_in, fam_in)
            continue
        values, _, _ = descend(evaluator, all_cases - mine, full, fitted, f"without {name}")
        fam_out = restrict(evaluator.evaluate(values), mine)
        out_errors.update(fam_out[0])
        out_lost |= fam_out[1]
        per_family[name] = (values, fam_in, fam_out)
    elapsed = time.monotonic() - t0
    log(f"leave-one-out done: {evaluator.runs} validate runs ({evaluator.run_seconds:.0f} s), "
        f"{elapsed / 60:.1f} min")
    return report(fams, full, full_score, (in_errors, in_lost), (out_errors, out_lost),
                  per_family, grid, fitted, quick, binary_sha, elapsed, evaluator)


def report(fams, full, full_score, in_sample, out_sample, per_family, grid, fitted, quick,
           binary_sha, elapsed, evaluator):
    out = io.StringIO()
    w = lambda s="": out.write(s + "\n")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    w(f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; racksweep binary sha256 "
      f"`{binary_sha[:16]}`, script at commit `{commit}`; "
      f"{'reduced grid (--quick)' if quick else 'full grid'}; {evaluator.runs} validate runs, "
      f"{elapsed / 60:.0f} min.")
    w()
    w("#### Source families")
    w()
    w("| family | rows | cases | predictions (in sample) |")
    w("|---|---:|---:|---:|")
    for name, fam in fams.items():
        n = len(per_family[name][1][0])
        w(f"| {name} | {fam['rows']} | {len(fam['cases'])} | {n} |")
    w()
    w("#### Error per metric, in sample and out of sample")
    w()
    w("In sample: every row predicted with the factors fitted on all rows. Out of sample: every "
      "row predicted with the factors fitted on all rows except its family's.")
    w()
    w("| metric | predictions | in-sample median | in-sample p90 | out-of-sample median | out-of-sample p90 |")
    w("|---|---:|---:|---:|---:|---:|")
    ins, outs = metric_stats(in_sample[0]), metric_stats(out_sample[0])
    for metric in sorted(set(ins) | set(outs)):
        n_in, med_in, p90_in = ins.get(metric, (0, None, None))
        n_out, med_out, p90_out = outs.get(metric, (0, None, None))
        n = str(n_in) if n_in == n_out else f"{n_in} / {n_out}"
        w(f"| `{metric}` | {n} | {pct(med_in)} | {pct(p90_in)} | {pct(med_out)} | {pct(p90_out)} |")
    w()
    w(f"Unreachable cases (no configuration meets the scenario): {len(in_sample[1])} in sample, "
      f"{len(out_sample[1])} out of sample"
      + (f" ({', '.join(sorted(out_sample[1]))})" if out_sample[1] else "") + ".")
    w()
    w("#### Per family")
    w()
    w("| family | metric | predictions | in-sample median | in-sample p90 | out-of-sample median | out-of-sample p90 |")
    w("|---|---|---:|---:|---:|---:|---:|")
    for name in fams:
        values, fam_in, fam_out = per_family[name]
        if values is None:
            w(f"| {name} | (no scored predictions) | 0 | - | - | - | - |")
            continue
        s_in, s_out = metric_stats(fam_in[0]), metric_stats(fam_out[0])
        for metric in sorted(set(s_in) | set(s_out)):
            n_in, med_in, p90_in = s_in.get(metric, (0, None, None))
            _, med_out, p90_out = s_out.get(metric, (0, None, None))
            w(f"| {name} | `{metric}` | {n_in} | {pct(med_in)} | {pct(p90_in)} | {pct(med_out)} | {pct(p90_out)} |")
    w()
    w("#### Fitted factors")
    w()
    w(f"All rows (objective {full_score:.4f}), and the factors that differ when a family is left out:")
    w()
    w("| fit | " + " | ".join(f"`{k}`" for k in fitted) + " |")
    w("|---|" + "---:|" * len(fitted))
    w("| all rows | " + " | ".join(f"{full[k]:g}" for k in fitted) + " |")
    for name in fams:
        values = per_family[name][0]
        if values is None:
            continue
        cells = [f"**{values[k]:g}**" if values[k] != full[k] else "" for k in fitted]
        w(f"| without {name} | " + " | ".join(cells) + " |")
    return out.getvalue()


def quick_grid(grid):
    """Every other candidate, first and last kept."""
    return {k: sorted(set(c[::2]) | {c[-1]}) for k, c in grid.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("measurements", nargs="?", default=DEFAULT_CSV)
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--only", choices=["training", "inference"])
    p.add_argument("--binary", default=os.environ.get("RACKSWEEP_BIN"))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--leave-one-out", action="store_true")
    p.add_argument("--markdown", metavar="FILE")
    p.add_argument("--cache", metavar="FILE")
    args = p.parse_args()
    csv_path = os.path.abspath(args.measurements)
    if args.binary:
        source_binary = os.path.abspath(args.binary)
    else:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        source_binary = os.path.join(target, "release", "racksweep")
    grid = {**GRID, **{f"training.{k}": c for k, c in GRID_TRAINING.items()}}
    if args.quick:
        grid = quick_grid(grid)
    values = {**read_values(CALIBRATION, GRID),
              **{f"training.{k}": v for k, v in read_values(TRAINING, GRID_TRAINING).items()}}
    # Start from grid values, so a value outside the allowed range never sticks.
    values = {k: min(grid[k], key=lambda c: abs(c - v)) for k, v in values.items()}
    fitted = {k: c for k, c in grid.items()
              if args.only is None or (args.only == "training") == k.startswith("training.")}
    with tempfile.TemporaryDirectory(prefix="fit-calibration-") as workdir:
        binary = snapshot_binary(source_binary, workdir)
        binary_sha = sha256(binary)
        log(f"binary: {source_binary} (sha256 {binary_sha[:16]}), copied to {binary}")
        evaluator = Evaluator(binary, csv_path, workdir, args.jobs, args.cache)
        if args.leave_one_out:
            text = leave_one_out(evaluator, values, grid, fitted, args.quick, binary_sha)
            if args.markdown:
                open(args.markdown, "w").write(text)
                log(f"wrote {args.markdown}")
            else:
                sys.stdout.write(text)
            return
        all_cases = {r["case_id"] for r in evaluator.rows}
        values, start, end = descend(evaluator, all_cases, values, fitted, "fit")
    print(f"fitted: objective = {end:.4f} (was {start:.4f})  {values}")
    if not args.dry_run:
        inference, training = split(values)
        for path, part, name in ((CALIBRATION, inference, "inference"), (TRAINING, training, "training")):
            if args.only in (None, name):
                write_values(path, part)
                print(f"wrote {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
