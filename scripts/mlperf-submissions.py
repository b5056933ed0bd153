#!/usr/bin/env python3
"""Writes src/validate/mlperf-submissions.toml: what each MLPerf Inference submission of the
measurements file ran that the file has no column for, read from the submission itself, for
`racksweep validate` (docs/validation.md, "How a case is predicted"):

- `queries`: how many queries a server or interactive run issued, loadgen's `result_query_count`
  in the run's `mlperf_log_detail.txt` (next to the `mlperf_log_summary.txt` the file cites).
  Loadgen's early stopping lets a longer run have a larger share of queries over the latency
  limits (src/validate/early_stopping.rs);
- `samples`: how many samples an offline run's one query carried, loadgen's
  `generated_samples_per_query` in the same log (its summary's `samples_per_query` is the
  setting, which `sample_concatenate_permutation` may change). The run ends with its last
  answer, so the longer the run against a sequence's life, the less its drain weighs
  (src/validate/finite.rs);
- `gemm_allreduce_fusion`: whether the TensorRT-LLM engine was built with
  `gemm_allreduce_plugin`, which fuses each row-parallel GEMM with its tensor-parallel
  all-reduce (`trtllm_build_flags` of the submission's config,
  `closed/<submitter>/configs/<system>/<scenario>/<benchmark>.py`, the entry for the case's
  accuracy target at MaxP).
- `adp_balance_batching_wait_iters`, `adp_balance_timeout_iters`: TensorRT-LLM's attention-DP
  balance, where the engine runs attention data parallel (`enable_attention_dp` in
  `trtllm_build_flags`) and `trtllm_runtime_flags` enable it (`adp_balancing_enable`): prompts
  are held until every rank has one, then the first count of iterations more, or at most the
  second (src/perf/adp_balance.rs).
- `scheduler_steps`: vLLM's multi-step scheduling, where a vLLM harness's config sets
  `num_scheduler_steps` above 1 and runs vLLM's V0 engine (`VLLM_USE_V1` 0, the harness's
  default; V1 has no multi-step scheduling): the scheduler runs once per round of that many
  decode steps, so a new prompt waits for the round in progress (`vllm_engine_config` in
  AMD's `closed/AMD/code/<benchmark>/harness_llm/models/<model>/<scenario>_<gpu>.yaml` over
  the harness's `common/config.yaml`).

- `tpot_mean_ms`, `ttft_mean_ms`: a server or interactive run's mean time per output token and
  mean time to first token, loadgen's "Mean Time to Output Token" and "Mean First Token
  latency" in the `mlperf_log_summary.txt` the file cites (which states their 99th
  percentiles). `validate` notes them beside the model's means at its operating point; they are
  not scored (the file has no rows for means).

- `tp`, `pp`, `weight_dtype`, `kv_dtype`, `batch`: the configuration of a case whose row leaves
  these columns blank, where the submission's config states it (`scripts/mlperf-configs.toml`).

Everything is read at the commit the file cites, from local clones of the results repositories
(`<mirrors>/mlcommons+inference_results_<round>/repo`). A submission whose repository is not
cloned, or whose config is not in that layout, is left out: `validate` then takes the least a
valid run issues and no fusion, and sweeps its blank columns. The exception is
`scripts/mlperf-configs.toml`: submissions read by hand from a public mirror of a repository too
large to clone, each with the config entry, the quoted target that ties it to the run and the
files it was read from; their entries are taken from there as written.

Usage:
    python3 scripts/mlperf-submissions.py [--mirrors DIR]   # write the TOML
    python3 scripts/mlperf-submissions.py --check           # exit 1 if the committed TOML differs
Standard library and git only.
"""

import argparse
import ast
import csv
import json
import pathlib
import re
import subprocess
import tomllib

from write_or_check import write_or_check

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = ROOT / "reference" / "measurements-calibration.csv"
OUT = ROOT / "src" / "validate" / "mlperf-submissions.toml"
BY_HAND = ROOT / "scripts" / "mlperf-configs.toml"
# The keys of a by-hand entry, in the order they are written.
BY_HAND_KEYS = ["queries", "log", "tp", "pp", "weight_dtype", "kv_dtype", "batch",
                "gemm_allreduce_fusion", "config", "config_entry", "matched_by"]
URL = re.compile(
    r"https://github.com/mlcommons/(inference_results_v[0-9.]+)/blob/([0-9a-f]{40})/"
    r"((?:closed|open)/[^/]+)/results/([^/]+)/([^/]+)/([^/]+)/performance/run_1/mlperf_log_summary.txt$"
)


def show(git, commit, path):
    r = subprocess.run(["git", "-C", str(git), "show", f"{commit}:{path}"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def logged(detail, key):
    """The integer value loadgen's detail log records under `key`, or None."""
    for line in detail.splitlines():
        if f'"key": "{key}"' in line:
            return int(json.loads(line.split(":::MLLOG", 1)[1])["value"])
    return None


def summary_mean_ms(summary, name):
    """A mean latency of loadgen's summary, `<name> (ns) : <value>`, in ms, or None."""
    m = re.search(re.escape(name) + r" \(ns\)\s*:\s*(\d+)", summary)
    return round(int(m.group(1)) / 1e6, 3) if m else None


def flags(tree, accuracy, field):
    """The `field` dict (`trtllm_build_flags`, `trtllm_runtime_flags`) of the EXPORTS entry for
    `accuracy` at MaxP in a config's parsed module `tree`, or None."""
    # Entries may name a dict assigned at module level, or unpack one into theirs.
    named = {
        t.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }

    def flags_in(value):
        value = named.get(value.id, value) if isinstance(value, ast.Name) else value
        if not isinstance(value, ast.Dict):
            return None
        found = None
        for k, v in zip(value.keys, value.values):
            if k is None:
                found = flags_in(v) if found is None else found
            elif ast.unparse(k).endswith(field) and isinstance(v, ast.Dict):
                found = {}
                for fk, fv in zip(v.keys, v.values):
                    try:
                        found[ast.literal_eval(fk)] = ast.literal_eval(fv)
                    except ValueError:
                        pass  # an expression (`1024 * 8`): not a flag read here
        return found

    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "EXPORTS" for t in node.targets)):
            continue
        for key, value in zip(node.value.keys, node.value.values):
            text = ast.unparse(key)
            target = re.search(r"AccuracyTarget\(([0-9.]+)\)", text)
            if not (target and float(target.group(1)) == accuracy and "PowerSetting.MaxP" in text):
                continue
            return flags_in(value)
    return None


def yaml_section(text, section):
    """The scalar `key: value` lines of a top-level YAML mapping `section`, as strings (the
    harness configs are flat two-level YAML; standard library only)."""
    found, inside = {}, False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            inside = line.split("#", 1)[0].strip() == f"{section}:"
            continue
        m = re.match(r"\s+([A-Za-z0-9_]+):\s*([^#]*)", line)
        if inside and m:
            found[m.group(1)] = m.group(2).strip().strip('"')
    return found


def vllm_steps(git, commit, submitter, system, benchmark, scenario):
    """Decode steps per scheduler call of a vLLM harness's run (`num_scheduler_steps` under
    the V0 engine), with the config it is read from, or None where the harness has no such
    config for the system's GPU."""
    gpu = re.search(r"MI[0-9]+X", system, re.IGNORECASE)
    if gpu is None:
        return None
    model = re.sub(r"-99(\.9)?$", "", benchmark)
    base = f"{submitter}/code/{benchmark}/harness_llm"
    path = f"{base}/models/{model}/{scenario.lower()}_{gpu.group(0).lower()}.yaml"
    source = show(git, commit, path)
    if source is None:
        return None
    common = show(git, commit, f"{base}/common/config.yaml") or ""
    env = yaml_section(common, "env_config") | yaml_section(common, "vllm_env_config")
    env |= yaml_section(source, "env_config") | yaml_section(source, "vllm_env_config")
    engine = yaml_section(common, "vllm_engine_config") | yaml_section(source, "vllm_engine_config")
    v1 = env.get("VLLM_USE_V1", "0") not in ("0", "False", "false")
    return path, 1 if v1 else int(engine.get("num_scheduler_steps", "1"))


def config_of(git, commit, submitter, system, benchmark, scenario):
    accuracy = 0.999 if benchmark.endswith("-99.9") else 0.99
    name = re.sub(r"-99(\.9)?$", "", benchmark).replace("llama3.1", "llama3_1")
    for sys_dir in (system, re.sub(r"_TRT$", "", system)):
        path = f"{submitter}/configs/{sys_dir}/{scenario}/{name}.py"
        source = show(git, commit, path)
        if source is not None:
            tree = ast.parse(source)
            build = flags(tree, accuracy, "trtllm_build_flags")
            if build is not None:
                return path, build, flags(tree, accuracy, "trtllm_runtime_flags") or {}
    return None


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(mirrors):
    out = [
        "# What each MLPerf Inference submission ran that the measurements file has no column for,",
        "# for `racksweep validate`. Generated by scripts/mlperf-submissions.py from the submissions'",
        "# own logs and configs: `queries` is loadgen's result_query_count (server and interactive",
        "# runs), `samples` its generated_samples_per_query (offline runs), `tpot_mean_ms` and",
        "# `ttft_mean_ms` its logged mean latencies (not scored),",
        "# `gemm_allreduce_fusion` whether the engine was built with TensorRT-LLM's",
        "# gemm_allreduce_plugin, `adp_balance_*` TensorRT-LLM's attention-DP balance where the runtime",
        "# flags enable it, `scheduler_steps` vLLM's multi-step scheduling (num_scheduler_steps of a",
        "# V0 engine), `tp` .. `batch` the configuration of a case whose row leaves it blank",
        "# (read by hand: scripts/mlperf-configs.toml). A case absent here ran the rules' least and no",
        "# fusion.",
    ]
    by_hand = {c["case_id"]: c for c in tomllib.loads(BY_HAND.read_text())["config"]}
    seen, missing = set(), []
    for row in csv.DictReader(CASES.open()):
        case = row["case_id"]
        if not row["source"].startswith("MLPerf") or case in seen:
            continue
        seen.add(case)
        if case in by_hand:
            c = by_hand.pop(case)
            unknown = set(c) - set(BY_HAND_KEYS) - {"case_id"}
            if unknown:
                raise SystemExit(f"{BY_HAND}: {case}: unknown keys {sorted(unknown)}")
            out += ["", "[[submission]]", f'case_id = "{case}"']
            out += [f"{k} = {toml_value(c[k])}" for k in BY_HAND_KEYS if k in c]
            continue
        m = URL.match(row["source_url"])
        git = pathlib.Path(mirrors) / f"mlcommons+{m.group(1)}" / "repo" if m else None
        if git is None or not git.exists():
            missing.append(case)
            continue
        _, commit, submitter, system, benchmark, scenario = m.groups()

        def at_commit(path):
            return f"https://github.com/mlcommons/{m.group(1)}/blob/{commit}/{path}"

        entry = []
        detail = row["source_url"].replace("mlperf_log_summary.txt", "mlperf_log_detail.txt")
        if row["scenario"] == "offline":
            text = show(git, commit, detail.split(f"/blob/{commit}/", 1)[1])
            samples = logged(text, "generated_samples_per_query") if text else None
            if samples is not None:
                entry += [f"samples = {samples}", f'log = "{detail}"']
        if row["scenario"] in ("server", "interactive"):
            text = show(git, commit, detail.split(f"/blob/{commit}/", 1)[1])
            queries = logged(text, "result_query_count") if text else None
            if queries is not None:
                entry += [f"queries = {queries}", f'log = "{detail}"']
            summary = show(git, commit, row["source_url"].split(f"/blob/{commit}/", 1)[1]) or ""
            for key, name in (("tpot_mean_ms", "Mean Time to Output Token"),
                              ("ttft_mean_ms", "Mean First Token latency")):
                value = summary_mean_ms(summary, name)
                if value is not None:
                    entry.append(f"{key} = {value}")
        config = config_of(git, commit, submitter, system, benchmark, scenario)
        if config is not None:
            path, build, runtime = config
            fused = build.get("gemm_allreduce_plugin") not in (None, "disable")
            entry.append(f"gemm_allreduce_fusion = {'true' if fused else 'false'}")
            if runtime.get("adp_balancing_enable") is True and build.get("enable_attention_dp") is True:
                entry += [
                    f"adp_balance_batching_wait_iters = {runtime['adp_balancing_batching_wait_iters']}",
                    f"adp_balance_timeout_iters = {runtime['adp_balancing_timeout_iters']}",
                ]
            entry.append(f'config = "{at_commit(path)}"')
        vllm = vllm_steps(git, commit, submitter, system, benchmark, scenario)
        if vllm is not None:
            path, steps = vllm
            if steps > 1:
                entry.append(f"scheduler_steps = {steps}")
                entry.append(f'config = "{at_commit(path)}"')
        if entry:
            out += ["", "[[submission]]", f'case_id = "{case}"', *entry]
        else:
            missing.append(case)
    if by_hand:
        raise SystemExit(f"{BY_HAND}: no such case in {CASES.name}: {sorted(by_hand)}")
    out += ["", "# Not read (repository not cloned when generated, or no config in that layout):"]
    out += [f"#   {case}" for case in missing]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", default="/work/.mirror", help="directory of results clones")
    ap.add_argument("--check", action="store_true", help="compare with the committed file")
    a = ap.parse_args()
    write_or_check(OUT, render(a.mirrors), a.check, "the submissions")


if __name__ == "__main__":
    main()
