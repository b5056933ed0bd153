#!/usr/bin/env python3
"""Side-by-side accuracy check of racksweep against NVIDIA AIConfigurator (AIC) — issue 21, item 6.

Usage:
    python3 scripts/peers/aic-compare.py                       # predict every case -> aic-predictions.csv
    python3 scripts/peers/aic-compare.py --cases llama-3p1-70b # only case ids containing the text
    python3 scripts/peers/aic-compare.py --table preds.parquet # join with `racksweep validate --out`

Mode 1 reads the inference rows of reference/measurements-calibration.csv and, for every case AIC
supports (an AIC system for its GPU, an AIC model config for its model, perf data for its dtypes),
predicts the case's metric with AIC's aggregated-serving estimator: the same code path as
`aiconfigurator cli estimate --estimate-mode agg` (aiconfigurator/cli/api.py, _run_agg_estimate),
with the case's layout, batch, dtypes and lengths. Columns the case leaves blank are enumerated
and the configuration is picked by the rule racksweep validate uses for the case's scenario
(docs/validation.md, "How a case is predicted"). It writes scripts/peers/aic-predictions.csv:
one row per measured value, with AIC's prediction, the configuration AIC was asked, how each
blank column was filled, and a status with the reason for every case it cannot predict.

Mode 2 (--table) joins that file with racksweep's own predictions (`racksweep validate
reference/measurements-calibration.csv --out preds.parquet`) and prints a Markdown table of
both signed errors per case and their median / p90 absolute errors, dense and MoE apart.

The script creates (or reuses) a venv at ~/.cache/racksweep-peers-venv (override with
RACKSWEEP_PEERS_VENV), installs requirements.txt there and re-executes itself inside it.
README.md beside this file documents every mapping and derivation.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "kernels"))
import pinned_venv  # noqa: E402
REPO = HERE.parent.parent
VENV = Path(os.environ.get("RACKSWEEP_PEERS_VENV", Path.home() / ".cache" / "racksweep-peers-venv"))
AIC_PIN = "0.12.0"
CASES_CSV = REPO / "reference" / "measurements-calibration.csv"
OUT_CSV = HERE / "aic-predictions.csv"


# --------------------------------------------------------------------------------------------
# venv bootstrap (same pattern as scripts/kernels/distill.py)
# --------------------------------------------------------------------------------------------


def ensure_venv() -> None:
    """Re-exec inside the pinned venv unless aiconfigurator and aiconfigurator-core ==AIC_PIN are
    installed here."""
    pinned_venv.ensure(
        VENV,
        HERE / "requirements.txt",
        {"aiconfigurator": AIC_PIN, "aiconfigurator-core": AIC_PIN},
        __file__,
    )


# --------------------------------------------------------------------------------------------
# Mappings: racksweep ids -> AIC names
# --------------------------------------------------------------------------------------------

# racksweep GPU id (src/catalog/data/gpus.toml) -> AIC system (aiconfigurator_core/systems/<name>.yaml)
SYSTEMS = {
    "a100-80gb": "a100_sxm",
    "h100-sxm": "h100_sxm",
    "h200-sxm": "h200_sxm",
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb200-nvl72": "gb200",
    "gb300-nvl72": "gb300",
}
BLACKWELL = {"b200_sxm", "b300_sxm", "gb200", "gb300"}

# racksweep model id -> AIC model path (a bundled aiconfigurator_core/model_configs/<org>--<name>
# config, or "local:" for a config.json this script writes; see local_model_dir).
MODELS = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B",
    "llama-2-70b": "local:llama-2-70b",
    "mixtral-8x7b": "local:mixtral-8x7b",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
}
MOE_MODELS = {"mixtral-8x7b", "deepseek-v3", "gpt-oss-120b", "qwen3-235b-a22b"}
# Published FP8 checkpoints of these models are 128x128 block-scaled (DeepSeek-V3/R1's own,
# Qwen/Qwen3-235B-A22B-FP8); the other models' FP8 (ModelOpt, MLPerf) is per-tensor.
FP8_BLOCK_MODELS = {"deepseek-v3", "qwen3-235b-a22b"}

# Llama-2-70B has no bundled AIC config. Its architecture is Llama-3.1-70B's (LlamaForCausalLM,
# 80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672) with a 32,000-token vocabulary, 4,096
# positions and rope_theta 10,000 (meta-llama/Llama-2-70b-hf config.json; the same values are in
# shared/reference/models.csv). The script writes that config.json from the bundled Llama-3.1-70B
# one with exactly those fields changed.
LLAMA2_70B_OVERRIDES = {
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "torch_dtype": "float16",
}

# Models loaded from a local directory: (bundled config it starts from, fields changed, label).
# Mixtral-8x7B's config.json ships in aiconfigurator_core/model_configs and its architecture
# (MixtralForCausalLM) is one AIC models, but 0.12.0 leaves it out of DefaultHFModels, so AIC
# would try to download it by name; as a local directory AIC reads the bundled file unchanged.
LOCAL_MODELS = {
    "llama-2-70b": ("meta-llama--Meta-Llama-3.1-70B", LLAMA2_70B_OVERRIDES, "Llama-2-70b-hf"),
    "mixtral-8x7b": ("mistralai--Mixtral-8x7B-v0.1", {}, "Mixtral-8x7B-v0.1"),
}
LOCAL_MODEL_LABEL = {
    "llama-2-70b": "local config.json: AIC's Llama-3.1-70B with Llama-2-70B vocab/positions/rope",
    "mixtral-8x7b": "local config.json: AIC's bundled mistralai--Mixtral-8x7B-v0.1 unchanged",
}

INFERENCE_METRICS = {
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "total_tokens_per_s_per_gpu",
    "tokens_per_s_per_user",
    "ttft_p99_ms",
    "tpot_p99_ms",
}

DERIVATION = {
    "output_tokens_per_s": "seq/s x OSL x instances (seq/s of one AIC worker; instances = gpus / worker GPUs)",
    "output_tokens_per_s_per_gpu": "seq/s x OSL / worker GPUs",
    "total_tokens_per_s_per_gpu": "seq/s x (ISL + OSL) / worker GPUs",
    "tokens_per_s_per_user": "1000 / TPOT",
    "ttft_p99_ms": "AIC TTFT (a mean with AIC's heuristic queueing factor, not a p99)",
    "tpot_p99_ms": "AIC TPOT (a mean, not a p99)",
}

AIC_DTYPE = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8"}


def weight_quant(model: str, weight: str, system: str, backend: str) -> tuple[str | None, str | None]:
    """(gemm_quant_mode, moe_quant_mode) for a racksweep weight dtype; None = AIC infers it from
    the checkpoint config (only where the case's dtype is the checkpoint's own)."""
    moe = model in MOE_MODELS
    if weight in ("bf16", "fp16"):
        return "bfloat16", ("bfloat16" if moe else None)
    if weight == "fp8":
        q = "fp8_block" if model in FP8_BLOCK_MODELS else "fp8"
        return q, (q if moe else None)
    if weight in ("fp4", "nvfp4"):
        if system not in BLACKWELL:
            raise Unsupported(f"nvfp4 weights on {system} (no FP4 tensor cores)")
        return "nvfp4", ("nvfp4" if moe else None)
    if weight == "mxfp4":
        if model == "gpt-oss-120b":
            # The checkpoint's own MXFP4 experts and bf16 attention: AIC infers the modes from its
            # config, except that AIC's task builder (aiconfigurator/sdk/task_v2.py, used by
            # `cli default`) promotes GPT-OSS experts on Blackwell under TensorRT-LLM to MXFP4
            # weights with MXFP8 activations; `cli estimate` lacks that step, so it is applied here.
            if system in BLACKWELL and backend == "trtllm":
                return None, "w4a8_mxfp4_mxfp8"
            return None, None
        raise Unsupported(f"no AIC quant mode for mxfp4 weights of {model}")
    raise Unsupported(f"no AIC quant mode for weight dtype {weight!r}")


class Unsupported(Exception):
    pass


def short_error(e: Exception) -> str:
    """First line of an exception, with the venv's site-packages prefix removed."""
    text = str(e).splitlines()[0][:300] if str(e) else ""
    if "/site-packages/" in text:
        head, _, tail = text.partition(" at /")
        text = head + (" at " + tail.split("/site-packages/", 1)[1] if "/site-packages/" in tail else "")
    return f"{type(e).__name__}: {text}"


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


def fnum(s: str) -> float | None:
    s = (s or "").strip()
    return float(s) if s else None


def inum(s: str) -> int | None:
    v = fnum(s)
    return None if v is None else int(round(v))


# Configurations MLPerf submissions state where their rows leave the columns blank; racksweep
# validate takes them for those columns (scripts/mlperf-configs.toml, docs/validation.md), so AIC
# is asked the same.
STATED_CONFIGS = HERE.parent / "mlperf-configs.toml"
STATED_COLUMNS = ("tp", "pp", "weight_dtype", "kv_dtype", "batch")


def load_cases(path: Path) -> list[dict]:
    """Inference cases in file order; each with its rows (one per metric), blank configuration
    columns filled where the submission's config states them."""
    stated = {c["case_id"]: c for c in tomllib.loads(STATED_CONFIGS.read_text())["config"]}
    cases: dict[str, dict] = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] != "inference":
                continue
            for col in STATED_COLUMNS:
                if not r[col] and col in stated.get(r["case_id"], {}):
                    r[col] = str(stated[r["case_id"]][col])
            c = cases.setdefault(r["case_id"], {"row": r, "metrics": []})
            c["metrics"].append((r["metric"], float(r["value"]), r["unit"]))
    return list(cases.values())


# --------------------------------------------------------------------------------------------
# AIC evaluation
# --------------------------------------------------------------------------------------------


class AIC:
    """AIC's agg estimator with the objects cli_estimate builds cached between points.

    For one point, `estimate()` makes the same calls, in the same order and with the same
    arguments, as aiconfigurator.cli.api.cli_estimate(mode="agg") -> _run_agg_estimate, but keeps
    the database (per system and backend), the model and the InferenceSession (per layout and
    quant modes) between calls instead of rebuilding them; `verify()` checks a point against
    cli_estimate itself."""

    def __init__(self, backend: str = "trtllm", database_mode: str = "SILICON"):
        import logging

        logging.disable(logging.WARNING)
        from aiconfigurator.cli import api
        from aiconfigurator.sdk.backends.factory import get_backend
        from aiconfigurator.sdk.config import RuntimeConfig
        from aiconfigurator.sdk.inference_session import InferenceSession
        from aiconfigurator.sdk.models import get_model
        from aiconfigurator.sdk.perf_database import get_database_view, get_latest_database_version

        self.api = api
        self.get_backend, self.RuntimeConfig, self.InferenceSession = get_backend, RuntimeConfig, InferenceSession
        self.get_model, self.get_database_view, self.get_latest = get_model, get_database_view, get_latest_database_version
        self.backend, self.database_mode = backend, database_mode
        self._db: dict = {}
        self._sess: dict = {}
        self._points: dict = {}
        self.points_evaluated = 0

    def version(self, system: str) -> str:
        return self.get_latest(system=system, backend=self.backend)

    def database(self, system: str):
        if system not in self._db:
            v = self.version(system)
            if v is None:
                raise Unsupported(f"no AIC {self.backend} database for {system}")
            self._db[system] = self.get_database_view(
                system, self.backend, v, allow_missing_data=self.database_mode != "SILICON",
                database_mode=self.database_mode, transfer_policy=None,
            )
        return self._db[system]

    def session(self, model_path: str, system: str, lay: dict, q: dict):
        key = (model_path, system, lay["tp"], lay["pp"], lay["adp"], lay["moe_tp"], lay["moe_ep"],
               q["gemm"], q["moe"], q["kv"])
        if key in self._sess:
            s = self._sess[key]
            if isinstance(s, Exception):
                raise s
            return s
        api = self.api
        try:
            moe_tp, moe_ep = api._resolve_moe_parallelism(
                lay["tp"], lay["adp"], lay["moe_tp"], lay["moe_ep"], model_path=model_path)
            mc = api._build_model_config(
                lay["tp"], lay["pp"], lay["adp"], moe_tp, moe_ep, q["gemm"], q["kv"], None, q["moe"], None,
                forward_model=None, enable_encoder_dp=True, attention_backend=None)
            api._apply_nextn(mc, 0)
            db = self.database(system)
            api.resolve_context_fmha_by_data(mc, model_path, db, self.backend, is_context_role=True)
            api.resolve_dsv4_moe_arch(mc, model_path, system_name=system, backend_name=self.backend)
            api.resolve_nvfp4_for_system(mc, system, model_path, backend_name=self.backend)
            model = self.get_model(model_path, mc, self.backend)
            sess = self.InferenceSession(model, db, self.get_backend(self.backend))
        except Exception as e:  # a layout or dtype AIC cannot build
            err = Unsupported(short_error(e))
            self._sess[key] = err
            raise err from None
        self._sess[key] = sess
        return sess

    def estimate(self, model_path: str, system: str, lay: dict, q: dict, isl: int, osl: int, b: int, ctx: int):
        """One agg point -> dict (ttft, tpot, seq/s, ...) or None when it does not fit (OOM or KV)."""
        key = (model_path, system, tuple(sorted(lay.items())), tuple(sorted(q.items())), isl, osl, b, ctx)
        if key in self._points:
            return self._points[key]
        sess = self.session(model_path, system, lay, q)
        rc = self.RuntimeConfig(isl=isl, osl=osl, batch_size=b, image_height=0, image_width=0,
                                num_images_per_request=1, prefix=0, engine_step_backend=None)
        self.points_evaluated += 1
        try:
            s = sess.run_agg(rc, ctx_tokens=ctx, max_seq_len=None, free_gpu_memory_fraction=None,
                             decode_tokens_per_iteration=1.0)
        except Exception as e:
            self._points[key] = {"error": short_error(e)}
            return self._points[key]
        if s.check_oom() or s.check_kv_cache_oom():
            out = None
        else:
            d = s.get_result_dict()
            out = None if d is None else {
                k: d[k] for k in ("ttft", "tpot", "seq/s", "tokens/s", "concurrency", "num_total_gpus",
                                  "gemm", "kvcache", "fmha", "moe", "comm", "parallel", "memory")
            }
        self._points[key] = out
        return out

    def verify(self, model_path, system, lay, q, isl, osl, b, ctx) -> tuple[float, float]:
        """cli_estimate itself at one point: (ttft, tpot)."""
        r = self.api.cli_estimate(
            model_path, system, mode="agg", backend_name=self.backend, database_mode=self.database_mode,
            isl=isl, osl=osl, batch_size=b, ctx_tokens=ctx, tp_size=lay["tp"], pp_size=lay["pp"],
            attention_dp_size=lay["adp"], moe_tp_size=lay["moe_tp"], moe_ep_size=lay["moe_ep"],
            gemm_quant_mode=q["gemm"], kvcache_quant_mode=q["kv"], moe_quant_mode=q["moe"])
        return r.ttft, r.tpot


def cli_command(model_path, system, backend, version, lay, q, isl, osl, b, ctx) -> str:
    """The `aiconfigurator cli estimate` command of one point (what the SDK calls mirror)."""
    parts = ["aiconfigurator cli estimate", f"--model {model_path}", f"--system {system}",
             f"--backend {backend}", f"--backend-version {version}", f"--isl {isl}", f"--osl {osl}",
             f"--batch-size {b}", f"--ctx-tokens {ctx}", f"--tp {lay['tp']}", f"--pp {lay['pp']}"]
    if lay["adp"] > 1:
        parts.append(f"--attention-dp-size {lay['adp']}")
    if lay["moe_tp"] is not None:
        parts.append(f"--moe-tp-size {lay['moe_tp']}")
    if lay["moe_ep"] is not None:
        parts.append(f"--moe-ep-size {lay['moe_ep']}")
    if q["gemm"]:
        parts.append(f"--gemm-quant-mode {q['gemm']}")
    if q["moe"]:
        parts.append(f"--moe-quant-mode {q['moe']}")
    if q["kv"]:
        parts.append(f"--kvcache-quant-mode {q['kv']}")
    return " ".join(parts)


# --------------------------------------------------------------------------------------------
# Enumerating what a case leaves open
# --------------------------------------------------------------------------------------------

POW2 = [1, 2, 4, 8, 16, 32, 64]
MAX_UNSTATED_INSTANCE_GPUS = 16  # an instance of a case without `gpus`: up to two HGX nodes


def layouts(c: dict, moe: bool) -> tuple[list[dict], list[str]]:
    """Candidate AIC worker layouts for a case, and notes saying which columns were enumerated.

    CSV convention (shared/reference/README.md): dp = gpus / (tp pp); ep is carved out of dp x tp,
    and attention-data-parallel MoE deployments are written tp=1, ep=N, dp=gpus. An AIC worker is
    tp x attention_dp x pp GPUs with moe_tp x moe_ep = tp x attention_dp; a case's system is
    gpus / worker-GPUs such workers."""
    G, T, P, E, D = (c["gpus"], c["tp"], c["pp"], c["ep"], c["dp"])
    notes = []
    tps = [T] if T else [t for t in POW2 if t <= 8]
    if not T:
        notes.append("tp: enumerated {1,2,4,8}")
    if P:
        pps = [P]
    elif G and T and D and G % (T * D) == 0:
        pps = [G // (T * D)]
        notes.append(f"pp: gpus/(tp dp) = {pps[0]}")
    else:
        pps = [1, 2, 4]
        notes.append("pp: enumerated {1,2,4}")
    out = []
    for tp in tps:
        for pp in pps:
            if not moe:
                cands = [dict(tp=tp, pp=pp, adp=1, moe_tp=None, moe_ep=None)]
            else:
                if E:
                    eps = [E]
                else:
                    bound = tp * (D if D else (G // (tp * pp) if G else MAX_UNSTATED_INSTANCE_GPUS))
                    eps = [e for e in POW2 if e <= max(bound, 1)]
                cands = []
                for ep in eps:
                    if ep <= tp:
                        if tp % ep:
                            continue
                        cands.append(dict(tp=tp, pp=pp, adp=1, moe_tp=tp // ep, moe_ep=ep))
                    else:
                        if ep % tp:
                            continue
                        cands.append(dict(tp=tp, pp=pp, adp=ep // tp, moe_tp=1, moe_ep=ep))
            for lay in cands:
                n = lay["tp"] * lay["adp"] * lay["pp"]
                if G and (n > G or G % n):
                    continue
                if not G and n > MAX_UNSTATED_INSTANCE_GPUS:
                    continue
                out.append(lay)
    if moe and not E:
        notes.append("ep: enumerated powers of two (ep <= tp: moe_tp = tp/ep; ep > tp: attention DP ep/tp)")
    if not G:
        notes.append(f"gpus: blank, one worker of at most {MAX_UNSTATED_INSTANCE_GPUS} GPUs, scored per GPU")
    return out, notes


def quant_options(c: dict, model: str, system: str, backend: str) -> tuple[list[tuple[str, dict]], list[str]]:
    """[(label, {gemm, moe, kv})] for the case's stated or enumerated weight and KV dtypes."""
    notes = []
    if c["weight"]:
        weights = [c["weight"]]
    else:
        weights = ["bf16", "fp8"] + (["nvfp4"] if system in BLACKWELL else [])
        notes.append("weight: enumerated {" + ",".join(weights) + "}")
    if c["kv"]:
        kvs = [c["kv"]]
    else:
        kvs = ["bf16", "fp8"]
        notes.append("kv: enumerated {bf16,fp8}")
    out, errors = [], []
    for w in weights:
        try:
            gemm, moe_q = weight_quant(model, w, system, backend)
        except Unsupported as e:
            errors.append(str(e))
            continue
        for kv in kvs:
            if kv not in AIC_DTYPE:
                errors.append(f"no AIC KV-cache mode for {kv}")
                continue
            out.append((f"{w}/{kv}", dict(gemm=gemm, moe=moe_q, kv=AIC_DTYPE[kv])))
    if not out:
        raise Unsupported("; ".join(errors) or "no dtype")
    return out, notes


def agg_batch_schedule() -> list[int]:
    from aiconfigurator.sdk.sweep import _DEFAULT_AGG_BATCH_SCHEDULE

    return list(_DEFAULT_AGG_BATCH_SCHEDULE)


def ctx_tokens_grid(isl: int, mode: str) -> list[int]:
    """AIC's own agg search grid of the per-step context-token budget (sweep.py, non-chunked
    prefill, its default), or just the CLI's default ctx_tokens = ISL."""
    if mode == "isl":
        return [isl]
    from aiconfigurator.sdk.sweep import _agg_ctx_tokens_list

    return _agg_ctx_tokens_list(isl, 512, False)


def sweep_points(aic: AIC, mp: str, system: str, lay: dict, q: dict, isl: int, osl: int, b_cap: int,
                 ctx_mode: str, fine: bool) -> tuple[list[dict], list[str]]:
    """Every fitting (batch, ctx_tokens) point of one layout and quant with batch <= b_cap.

    Batches: AIC's agg schedule (1..1024) when `fine`, else powers of two, then powers of two above
    1024, plus b_cap itself and the largest batch the KV cache holds (bisection on AIC's own KV
    check: an engine admits what its KV blocks hold, docs/validation.md)."""
    base = agg_batch_schedule() if fine else [x for x in (2 ** i for i in range(11))]
    bs = sorted({x for x in base if x <= b_cap} | {x for x in (2 ** i for i in range(11, 21)) if x <= b_cap} | {b_cap})
    pts, errors = [], []
    for ctx in ctx_tokens_grid(isl, ctx_mode):
        last_ok, first_bad = None, None
        for b in bs:
            # AIC's own guards (sweep.py _sweep_one_parallel_agg): a step's context tokens must
            # leave at least one decode slot.
            if b > 1 and b - math.ceil(ctx / isl) < 1:
                continue
            if b - math.ceil(ctx / isl) < 0:
                continue
            r = aic.estimate(mp, system, lay, q, isl, osl, b, ctx)
            if r is not None and "error" in r:
                errors.append(r["error"])
                break
            if r is None:
                first_bad = b
                break
            last_ok = b
            pts.append(dict(b=b, ctx=ctx, **r))
        if last_ok is not None and first_bad is not None and first_bad - last_ok > 1:
            lo, hi = last_ok, first_bad  # lo fits, hi does not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                r = aic.estimate(mp, system, lay, q, isl, osl, mid, ctx)
                if r is None or "error" in r:
                    hi = mid
                else:
                    lo = mid
            if lo != last_ok:
                r = aic.estimate(mp, system, lay, q, isl, osl, lo, ctx)
                pts.append(dict(b=lo, ctx=ctx, **r))
    return pts, errors


# --------------------------------------------------------------------------------------------
# Predicting one case
# --------------------------------------------------------------------------------------------


def case_fields(r: dict) -> dict:
    return dict(
        gpus=inum(r["gpus"]), tp=inum(r["tp"]), pp=inum(r["pp"]), ep=inum(r["ep"]), dp=inum(r["dp"]),
        weight=r["weight_dtype"].strip(), kv=r["kv_dtype"].strip(), batch=inum(r["batch"]),
        isl=fnum(r["input_tokens"]), osl=fnum(r["output_tokens"]), scenario=r["scenario"],
        ttft_lim=fnum(r["ttft_p99_limit_ms"]), tpot_lim=fnum(r["tpot_p99_limit_ms"]),
    )


def backend_for(r: dict) -> str:
    """TensorRT-LLM for MLPerf (NVIDIA's harness) and the TensorRT-LLM tables; for InferenceMAX the
    engine its notes or source name, else TensorRT-LLM."""
    text = (r["source"] + " " + r["notes"]).lower()
    if r["case_id"].startswith("ix-"):
        if "sglang" in text:
            return "sglang"
        if "vllm" in text:
            return "vllm"
    return "trtllm"


def local_model_dir(name: str) -> str:
    """Write a config.json AIC loads as a local model directory (LOCAL_MODELS)."""
    import aiconfigurator_core

    base, overrides, dirname = LOCAL_MODELS[name]
    src = Path(aiconfigurator_core.__file__).parent / "model_configs" / f"{base}_config.json"
    cfg = json.loads(src.read_text())
    for k, v in overrides.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    d = VENV / "racksweep-models" / dirname
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg, indent=1))
    return str(d)


def metric_value(metric: str, p: dict, c: dict, lay_gpus: int, instances: int, osl_f: float, isl_f: float):
    seq = p["seq/s"]
    if metric == "output_tokens_per_s":
        return seq * osl_f * instances
    if metric == "output_tokens_per_s_per_gpu":
        return seq * osl_f / lay_gpus
    if metric == "total_tokens_per_s_per_gpu":
        return seq * (isl_f + osl_f) / lay_gpus
    if metric == "tokens_per_s_per_user":
        return 1000.0 / p["tpot"] if p["tpot"] > 0 else None
    if metric == "ttft_p99_ms":
        return p["ttft"]
    if metric == "tpot_p99_ms":
        return p["tpot"]
    return None


def predict_case(aic: AIC, case: dict, ctx_mode: str) -> list[dict]:
    r = case["row"]
    c = case_fields(r)
    model, hw = r["model"], r["hardware"]
    base = dict(case_id=r["case_id"], model=model, hardware=hw, scenario=c["scenario"], backend=aic.backend)
    rows = []

    def emit(status: str, pick: dict | None = None, values: dict | None = None):
        for metric, value, unit in case["metrics"]:
            row = dict(base, metric=metric, measured=value, unit=unit, status=status)
            if c["scenario"] == "at-interactivity" and metric == "tokens_per_s_per_user":
                row["status"] = "input" if status == "ok" else status
                row["derivation"] = "the operating point (an input, not scored)"
                if pick:
                    row.update(pick)
                rows.append(row)
                continue
            if pick:
                row.update(pick)
                v = (values or {}).get(metric)
                row["aic_pred"] = v
                row["derivation"] = DERIVATION.get(metric, "")
                if v is None and status == "ok":
                    row["status"] = f"unsupported: no AIC counterpart of {metric}"
            rows.append(row)
        return rows

    system = SYSTEMS.get(hw)
    if system is None:
        return emit(f"unsupported: no AIC system for {hw}")
    if model not in MODELS:
        return emit(f"unsupported: no AIC model config for {model}")
    if any(m not in INFERENCE_METRICS for m, _, _ in case["metrics"]):
        return emit("unsupported: metric not predicted by AIC")
    if c["isl"] is None or c["osl"] is None:
        col = "input_tokens" if c["isl"] is None else "output_tokens"
        return emit(f"skipped: no {col} (racksweep skips it too)")
    mp = MODELS[model]
    if mp.startswith("local:"):
        mp = local_model_dir(mp.split(":", 1)[1])
    base["aic_model"] = LOCAL_MODEL_LABEL.get(model, MODELS[model])
    base["aic_system"] = system
    base["backend"] = backend_for(r)
    if base["backend"] != aic.backend:
        return emit(f"skipped: engine {base['backend']} (run with --backend {base['backend']})")
    moe = model in MOE_MODELS
    isl, osl = int(round(c["isl"])), int(round(c["osl"]))
    try:
        qopts, qnotes = quant_options(c, model, system, aic.backend)
    except Unsupported as e:
        return emit(f"unsupported: {e}")
    lays, lnotes = layouts(c, moe)
    if not lays:
        return emit("unsupported: no AIC worker layout fits the case's GPUs")

    scen = c["scenario"]
    batch = c["batch"]
    notes = list(lnotes) + list(qnotes)
    if batch is None:
        notes.append("batch: enumerated (AIC agg schedule and powers of two, up to the KV-cache limit)")
    elif scen == "at-interactivity":
        notes.append(f"batch: concurrency {batch} of the deployment bounds batch x pp x attention_dp")
    else:
        notes.append(f"batch: {batch} per engine (per attention-DP rank) is a maximum; smaller tried")
    notes.append("ctx_tokens: AIC agg search grid" if ctx_mode == "sweep" else "ctx_tokens: ISL (cli default)")
    fine = scen in ("server", "interactive", "at-interactivity", "min-latency")

    cands, errors = [], []
    for lay in lays:
        n = lay["tp"] * lay["adp"] * lay["pp"]
        if scen == "min-latency":
            b_cap = 1
        elif batch is None:
            b_cap = 8192 // lay["pp"]
        elif scen == "at-interactivity":
            b_cap = batch // (lay["pp"] * lay["adp"])
        else:
            # the engine's max_batch_size applies per attention-DP rank; AIC's batch is per
            # pipeline micro-batch (its concurrency is batch x pp x attention_dp)
            b_cap = max(batch // lay["pp"], 1)
        if b_cap < 1:
            continue
        for qlabel, q in qopts:
            try:
                pts, errs = sweep_points(aic, mp, system, lay, q, isl, osl, b_cap, ctx_mode, fine)
            except Unsupported as e:
                errors.append(f"tp{lay['tp']} pp{lay['pp']} adp{lay['adp']} ep{lay['moe_ep']} {qlabel}: {e}")
                continue
            errors += [f"tp{lay['tp']} pp{lay['pp']} adp{lay['adp']} ep{lay['moe_ep']} {qlabel}: {x}" for x in errs]
            if not pts and not errs:
                errors.append(f"tp{lay['tp']} pp{lay['pp']} adp{lay['adp']} ep{lay['moe_ep']} {qlabel}: "
                              "does not fit (AIC memory model)")
            for p in pts:
                p.update(lay=lay, q=q, qlabel=qlabel, n=n,
                         instances=(c["gpus"] // n if c["gpus"] else 1))
                p["tps_gpu"] = p["seq/s"] * c["osl"] / n
                p["tot_gpu"] = p["seq/s"] * (c["isl"] + c["osl"]) / n
                p["inter"] = 1000.0 / p["tpot"] if p["tpot"] > 0 else 0.0
                cands.append(p)
    if not cands:
        if errors and all("PerfDataNotAvailableError" in x for x in errors):
            return emit("unsupported: no AIC perf data: " + errors[-1])
        return emit("failed: " + (errors[-1] if errors else "no point"))

    extra = {}
    if scen in ("offline", "max-throughput"):
        key = "tot_gpu" if any(m == "total_tokens_per_s_per_gpu" for m, _, _ in case["metrics"]) else "tps_gpu"
        pick = max(cands, key=lambda p: p[key])
        notes.append("picked: highest throughput per GPU")
    elif scen in ("server", "interactive"):
        ok = [p for p in cands if p["ttft"] <= c["ttft_lim"] and p["tpot"] <= c["tpot_lim"]]
        if not ok:
            best_t = min(cands, key=lambda p: p["tpot"])
            return emit(f"failed: no AIC configuration meets TTFT <= {c['ttft_lim']:g} ms and TPOT <= "
                        f"{c['tpot_lim']:g} ms (lowest TPOT {best_t['tpot']:.1f} ms at TTFT {best_t['ttft']:.0f} ms)")
        pick = max(ok, key=lambda p: p["tps_gpu"])
        notes.append("picked: highest throughput per GPU with AIC's mean TTFT and TPOT within the p99 limits")
    elif scen == "min-latency":
        pick = min(cands, key=lambda p: p["tpot"])
        notes.append("picked: lowest TPOT")
    elif scen == "at-interactivity":
        target = next(v for m, v, _ in case["metrics"] if m == "tokens_per_s_per_user")
        above = [p for p in cands if p["inter"] >= target]
        if not above:
            fastest = max(cands, key=lambda p: p["inter"])
            return emit(f"failed: no AIC configuration reaches {target:g} tokens/s/user "
                        f"(fastest {fastest['inter']:.1f})")
        pick = max(above, key=lambda p: p["tot_gpu"])
        below = [p for p in cands if p["inter"] < target and p["tot_gpu"] > pick["tot_gpu"]]
        if below:
            nb = max(below, key=lambda p: p["inter"])
            w = (pick["inter"] - target) / (pick["inter"] - nb["inter"])
            for k in ("tot_gpu", "tps_gpu"):
                extra[k] = pick[k] + (nb[k] - pick[k]) * w
            notes.append(f"picked: best at or above {target:g} tokens/s/user, read linearly towards the "
                         f"frontier point below ({nb['inter']:.1f} tokens/s/user, {nb['tot_gpu']:.0f} tokens/s/GPU, "
                         f"tp{nb['lay']['tp']} adp{nb['lay']['adp']} ep{nb['lay']['moe_ep']} b{nb['b']})")
        else:
            notes.append(f"picked: best at or above {target:g} tokens/s/user (no frontier point below)")
    else:
        return emit(f"unsupported: scenario {scen}")

    lay, q = pick["lay"], pick["q"]
    values = {}
    for metric, _, _ in case["metrics"]:
        values[metric] = metric_value(metric, pick, c, pick["n"], pick["instances"], c["osl"], c["isl"])
    if "tot_gpu" in extra:
        values["total_tokens_per_s_per_gpu"] = extra["tot_gpu"]
        values["output_tokens_per_s_per_gpu"] = extra["tps_gpu"]
    if model == "deepseek-v3" and "MTP" in r["notes"] + r["source"]:
        notes.append("MTP speculative decoding of the measurement not modelled (nextn 0; no accepted-length column)")
    if "disagg" in (r["notes"] + r["source"]).lower():
        notes.append("measured disaggregated; predicted aggregated (the CSV has no disaggregation column)")
    if c["isl"] != isl or c["osl"] != osl:
        notes.append(f"ISL/OSL rounded to {isl}/{osl} for AIC; throughput uses the mean {c['isl']:g}/{c['osl']:g}")
    version = aic.version(system)
    pick_cols = dict(
        backend_version=version, database_mode=aic.database_mode,
        tp=lay["tp"], pp=lay["pp"], attention_dp=lay["adp"], moe_tp=lay["moe_tp"] or "", moe_ep=lay["moe_ep"] or "",
        worker_gpus=pick["n"], instances=pick["instances"], batch=pick["b"], concurrency=pick["concurrency"],
        ctx_tokens=pick["ctx"], dtypes=pick["qlabel"], gemm=pick["gemm"], moe_quant=pick["moe"] if moe else "",
        kvcache=pick["kvcache"], fmha=pick["fmha"], isl=isl, osl=osl,
        aic_ttft_ms=round(pick["ttft"], 3), aic_tpot_ms=round(pick["tpot"], 4),
        aic_seq_per_s=round(pick["seq/s"], 5), candidates=len(cands), filled="; ".join(notes),
        _lay=lay, _q=q, _mp=mp,
        cli=cli_command(MODELS[model] if model not in LOCAL_MODELS
                        else f"$RACKSWEEP_PEERS_VENV/racksweep-models/{LOCAL_MODELS[model][2]}", system, aic.backend,
                        version, lay, q, isl, osl, pick["b"], pick["ctx"]),
    )
    return emit("ok", pick_cols, values)


OUT_COLUMNS = [
    "case_id", "metric", "measured", "unit", "aic_pred", "status", "model", "hardware", "scenario",
    "aic_model", "aic_system", "backend", "backend_version", "database_mode", "tp", "pp", "attention_dp",
    "moe_tp", "moe_ep", "worker_gpus", "instances", "batch", "concurrency", "ctx_tokens", "dtypes", "gemm",
    "moe_quant", "kvcache", "fmha", "isl", "osl", "aic_ttft_ms", "aic_tpot_ms", "aic_seq_per_s", "candidates",
    "derivation", "filled", "cli",
]


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def run_predict(args) -> None:
    cases = load_cases(Path(args.cases_csv))
    if args.cases:
        cases = [c for c in cases if args.cases in c["row"]["case_id"]]
    aic = AIC(backend=args.backend, database_mode=args.database_mode)
    rows = []
    t0 = time.time()
    for i, case in enumerate(cases):
        t = time.time()
        out = predict_case(aic, case, args.ctx_tokens)
        rows += out
        st = out[0]["status"]
        print(f"[{i + 1}/{len(cases)}] {case['row']['case_id']}: {st[:110]} ({time.time() - t:.1f} s, "
              f"{aic.points_evaluated} points so far)", file=sys.stderr, flush=True)
    if args.verify:
        verify(aic, rows, args.verify)
    out_path = Path(args.out)
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(OUT_COLUMNS)
        for r in rows:
            w.writerow([fmt(r.get(k)) for k in OUT_COLUMNS])
    n_ok = len({r["case_id"] for r in rows if r["status"] == "ok"})
    print(f"wrote {out_path} ({len(rows)} rows, {n_ok} cases predicted, {time.time() - t0:.0f} s, "
          f"{aic.points_evaluated} AIC points)", file=sys.stderr)


def verify(aic: AIC, rows: list[dict], n: int) -> None:
    """Re-run the picked point of the first n predicted cases through cli_estimate itself."""
    done = set()
    for r in rows:
        if r["status"] != "ok" or r["case_id"] in done or len(done) >= n:
            continue
        done.add(r["case_id"])
        ttft, tpot = aic.verify(r["_mp"], r["aic_system"], r["_lay"], r["_q"], r["isl"], r["osl"], r["batch"],
                                r["ctx_tokens"])
        same = math.isclose(ttft, r["aic_ttft_ms"], rel_tol=1e-6, abs_tol=1e-3) and \
            math.isclose(tpot, r["aic_tpot_ms"], rel_tol=1e-6, abs_tol=1e-4)
        print(f"verify {r['case_id']}: cli_estimate ttft {ttft:.3f} tpot {tpot:.4f} vs "
              f"{r['aic_ttft_ms']} {r['aic_tpot_ms']}: {'same' if same else 'DIFFERENT'}", file=sys.stderr)
        if not same:
            sys.exit("cached SDK path and cli_estimate disagree")


# --------------------------------------------------------------------------------------------
# --table: both errors side by side
# --------------------------------------------------------------------------------------------


def percentile(sorted_vals: list[float], p: float) -> float:
    """Linear interpolation (numpy's default), as src/validate/report.rs."""
    if not sorted_vals:
        return float("nan")
    rank = p * (len(sorted_vals) - 1)
    lo, hi = math.floor(rank), math.ceil(rank)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (rank - lo)


SOURCES = {"mlperf-": "MLPerf", "trtllm-": "TensorRT-LLM tables and blog", "ix-": "InferenceMAX"}


def num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.4g}"


def run_table(args) -> None:
    import pyarrow.parquet as pq

    t = pq.read_table(args.table).to_pylist()
    rs = {}
    for r in t:
        rs[(r["case_id"], r["metric"])] = r
    with open(args.out if Path(args.out).exists() else OUT_CSV, newline="") as f:
        aic_rows = list(csv.DictReader(f))
    lines = []
    groups: dict[str, list[tuple[float, float]]] = {}
    n_table = 0
    lines.append("| case | metric | measured | AIC | AIC err | AIC config | racksweep | racksweep err | racksweep config |")
    lines.append("|---|---|---:|---:|---:|---|---:|---:|---|")
    for a in aic_rows:
        if a["status"] != "ok" or not a["aic_pred"]:
            continue
        k = (a["case_id"], a["metric"])
        r = rs.get(k)
        meas = float(a["measured"])
        ap = float(a["aic_pred"])
        ae = ap / meas - 1
        if r is None or not r.get("scored"):
            rp, re_ = None, None
        else:
            rp = r["predicted"]
            re_ = rp / meas - 1
        n_table += 1
        acfg = f"tp{a['tp']} pp{a['pp']}" + (f" adp{a['attention_dp']}" if a["attention_dp"] not in ("", "1") else "") \
            + (f" ep{a['moe_ep']}" if a["moe_ep"] not in ("", "1") else "") + f" b{a['batch']} {a['dtypes']}"
        rcfg = "" if r is None else (f"tp{r['tp']} pp{r['pp']}" + (f" ep{r['ep']}" if r["ep"] > 1 else "")
                                     + f" b{r['batch']} {r['weight_dtype']}/{r['kv_dtype']}")
        lines.append(f"| {a['case_id']} | {a['metric']} | {num(meas)} | {num(ap)} | {ae * 100:+.1f}% | {acfg} | "
                     + (f"{num(rp)} | {re_ * 100:+.1f}% | {rcfg} |" if re_ is not None else "— | — | |"))
        if re_ is None:
            continue
        kind = "MoE" if a["model"] in MOE_MODELS else "dense"
        fam = "latency" if a["metric"] in ("ttft_p99_ms", "tpot_p99_ms") else "throughput"
        src = next((v for k, v in SOURCES.items() if a["case_id"].startswith(k)), "other")
        subsets = ["all", kind, src]
        if kind == "MoE" and int(a["attention_dp"] or 1) > 1:
            subsets.append("MoE, attention DP")
        for g in subsets:
            groups.setdefault((fam, g), []).append((abs(ae), abs(re_)))
        groups.setdefault(("all metrics", "all"), []).append((abs(ae), abs(re_)))
    print("\n".join(lines))
    print()
    print("| metrics | cases | n | AIC median | AIC p90 | racksweep median | racksweep p90 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    order = [(f, g) for f in ("throughput", "latency", "all metrics")
             for g in ("all", "dense", "MoE", "MoE, attention DP", *SOURCES.values())]
    for key in order:
        v = groups.get(key)
        if not v:
            continue
        a = sorted(x for x, _ in v)
        b = sorted(y for _, y in v)
        print(f"| {key[0]} | {key[1]} | {len(v)} | {percentile(a, .5) * 100:.1f}% | {percentile(a, .9) * 100:.1f}% | "
              f"{percentile(b, .5) * 100:.1f}% | {percentile(b, .9) * 100:.1f}% |")
    unsupported: dict[str, int] = {}
    seen = set()
    for a in aic_rows:
        if a["case_id"] in seen:
            continue
        seen.add(a["case_id"])
        if a["status"] != "ok":
            unsupported[a["status"]] = unsupported.get(a["status"], 0) + 1
    print()
    print(f"{len(seen) - sum(unsupported.values())} of {len(seen)} cases predicted by AIC; the others:")
    for s, k in sorted(unsupported.items(), key=lambda x: -x[1]):
        print(f"- {k} x {s}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases-csv", default=str(CASES_CSV))
    ap.add_argument("--cases", default="", help="only case ids containing this text")
    ap.add_argument("--out", default=str(OUT_CSV), help="predictions CSV (written, or read by --table)")
    ap.add_argument("--backend", default="trtllm", choices=["trtllm", "vllm", "sglang"],
                    help="AIC backend; cases whose engine is another are skipped")
    ap.add_argument("--database-mode", default="SILICON", choices=["SILICON", "HYBRID"],
                    help="AIC database mode (SILICON, its default: measured tables only)")
    ap.add_argument("--ctx-tokens", default="sweep", choices=["sweep", "isl"],
                    help="per-step context-token budget: AIC's agg search grid (default) or ISL (cli default)")
    ap.add_argument("--verify", type=int, default=3,
                    help="re-run the picked point of the first N predicted cases through cli_estimate")
    ap.add_argument("--table", metavar="RACKSWEEP_VALIDATE_PARQUET",
                    help="print the side-by-side Markdown table instead of predicting")
    args = ap.parse_args()
    ensure_venv()
    if args.table:
        run_table(args)
    else:
        run_predict(args)


if __name__ == "__main__":
    main()
