//! The kernels one engine step runs on one GPU, timed by the measured kernel surfaces of
//! [`crate::catalog::kernels`] where the GPU has them for the serving engine (docs/model.md,
//! "Kernel surfaces"): one GEMM per linear layer at its sharded shape, decode and prefill
//! attention, the routed experts' grouped GEMMs and the engine's own all-reduce. A kernel the
//! tables do not cover (a format or shape not measured) keeps the roofline of `latency`.
//!
//! The linear layers follow the engines' fused projections (AIConfigurator's op lists,
//! `aiconfigurator_core/sdk/models/llama.py` and `deepseek.py`, which mirror TensorRT-LLM's
//! modules): a fused QKV GEMM (column-parallel, key and value heads replicated when fewer than
//! the tensor-parallel degree) and the output projection (row-parallel); for MLA the fused
//! down-projection of query and latent (replicated), the query and key-value up-projections
//! (column-parallel) and the output projection; a fused gate-and-up GEMM (column-parallel) and
//! the down projection (row-parallel) for dense MLPs and shared experts; the router; and the LM
//! head in bf16 (engines leave it unquantized).

use crate::catalog::kernels::{
    self, ContextAttentionParams, ContextMlaParams, ExpertBalance, GemmParams,
    GenerationAttentionParams, GenerationMlaParams, KernelFile, MoeParams, MoeShape, TwoLine,
};
use crate::catalog::{ComputeClass, Model, model::ExpertRouting, model::Mlp};
use crate::vocab::ServingEngine;

/// How a linear layer's weight is split over a tensor-parallel group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Split {
    /// Output features split (`n / tp`).
    Column,
    /// Input features split (`k / tp`).
    Row,
    /// Whole on every GPU.
    Replicated,
    /// A fused QKV projection: `q` query features split, plus key and value features of
    /// `kv_heads` heads of `head_dim` each, split while there are heads to split and replicated
    /// below one head per GPU.
    Qkv {
        q: f64,
        kv_heads: f64,
        head_dim: f64,
    },
}

/// One linear layer: `n` output and `k` input features of the unsplit weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmShape {
    pub n: f64,
    pub k: f64,
    pub split: Split,
}

impl GemmShape {
    const NONE: GemmShape = GemmShape {
        n: 0.0,
        k: 0.0,
        split: Split::Replicated,
    };

    /// `(n, k)` on one GPU of a tensor-parallel group of `tp`.
    pub fn on(&self, tp: f64) -> (f64, f64) {
        match self.split {
            Split::Column => (self.n / tp, self.k),
            Split::Row => (self.n, self.k / tp),
            Split::Replicated => (self.n, self.k),
            Split::Qkv {
                q,
                kv_heads,
                head_dim,
            } => (q / tp + 2.0 * head_dim * (kv_heads / tp).max(1.0), self.k),
        }
    }
}

/// The linear layers of a model, by where they sit (unused slots have `n = 0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerGemms {
    /// Attention projections of every layer.
    pub attention: [GemmShape; 4],
    /// The dense MLP of a dense layer.
    pub dense_mlp: [GemmShape; 2],
    /// Shared experts and router of an MoE layer.
    pub moe_shared: [GemmShape; 3],
    /// The LM head.
    pub head: GemmShape,
}

impl LayerGemms {
    pub fn of(m: &Model) -> LayerGemms {
        let h = f64::from(m.hidden);
        let heads = f64::from(m.heads);
        let d = f64::from(m.head_dim);
        let none = GemmShape::NONE;
        let gemm = |n: f64, k: f64, split: Split| GemmShape { n, k, split };
        let attention = match m.attention {
            crate::catalog::Attention::Mha | crate::catalog::Attention::Gqa => {
                let kv_heads = f64::from(m.kv_heads);
                let q = heads * d;
                [
                    gemm(
                        q + 2.0 * kv_heads * d,
                        h,
                        Split::Qkv {
                            q,
                            kv_heads,
                            head_dim: d,
                        },
                    ),
                    gemm(h, q, Split::Row),
                    none,
                    none,
                ]
            }
            crate::catalog::Attention::Mla => {
                let rope = f64::from(m.mla_rope_head_dim.unwrap_or(0));
                let kv_rank = f64::from(m.mla_kv_lora_rank.unwrap_or(0));
                let q_rank = f64::from(m.mla_q_lora_rank.unwrap_or(0));
                let q_heads = heads * (d + rope);
                let (down, q_up) = if q_rank > 0.0 {
                    (
                        gemm(q_rank + kv_rank + rope, h, Split::Replicated),
                        gemm(q_heads, q_rank, Split::Column),
                    )
                } else {
                    (
                        gemm(kv_rank + rope, h, Split::Replicated),
                        gemm(q_heads, h, Split::Column),
                    )
                };
                [
                    down,
                    q_up,
                    gemm(heads * 2.0 * d, kv_rank, Split::Column),
                    gemm(h, heads * d, Split::Row),
                ]
            }
        };
        let mlp = |width: f64| {
            let up = match m.mlp {
                Mlp::Gated => 2.0 * width,
                Mlp::Plain => width,
            };
            [gemm(up, h, Split::Column), gemm(h, width, Split::Row)]
        };
        let dense_mlp = m.ffn_hidden.map_or([none; 2], |f| mlp(f64::from(f)));
        let moe_shared = if m.is_moe() {
            let shared =
                f64::from(m.shared_experts.unwrap_or(0)) * f64::from(m.moe_ffn_hidden.unwrap_or(0));
            let [up, down] = if shared > 0.0 { mlp(shared) } else { [none; 2] };
            [up, down, gemm(f64::from(m.experts()), h, Split::Replicated)]
        } else {
            [none; 3]
        };
        LayerGemms {
            attention,
            dense_mlp,
            moe_shared,
            head: gemm(f64::from(m.vocab.unwrap_or(0)), h, Split::Column),
        }
    }
}

/// One collective at the group sizes it was measured at (ascending), up to eight: the engine's
/// all-reduce, an NCCL all-gather or reduce-scatter, or a phase of TensorRT-LLM's NVLink
/// all-to-all.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CollectiveTable {
    n: [u32; 8],
    lines: [Option<TwoLine>; 8],
}

impl CollectiveTable {
    /// The table of `measured` (group size, line) pairs; the first line of a size is kept.
    fn of(measured: impl Iterator<Item = (u32, TwoLine)>) -> CollectiveTable {
        let mut measured: Vec<(u32, TwoLine)> = measured.collect();
        measured.sort_by_key(|&(n, _)| n);
        measured.dedup_by_key(|&mut (n, _)| n);
        let mut t = CollectiveTable::default();
        for (i, (n, line)) in measured.into_iter().take(8).enumerate() {
            t.n[i] = n;
            t.lines[i] = Some(line);
        }
        t
    }

    /// The engine's bf16 all-reduce of `kernel_source` in `f`.
    fn all_reduce(f: &KernelFile, kernel_source: &str) -> CollectiveTable {
        CollectiveTable::of(
            f.custom_allreduce
                .iter()
                .filter(|a| a.kernel_source == kernel_source && a.dtype == "bf16")
                .map(|a| (a.num_gpus, a.line)),
        )
    }

    /// The NCCL collective `op_name` in `nccl` (a `<gpu>-nccl.toml`).
    fn nccl(nccl: &KernelFile, op_name: &str) -> CollectiveTable {
        CollectiveTable::of(
            nccl.nccl
                .iter()
                .filter(|c| c.op_name == op_name)
                .map(|c| (c.num_gpus, c.line)),
        )
    }

    /// Seconds of the collective over `n` GPUs at `bytes` (the table's size: the per-GPU
    /// buffer of an all-reduce, the gathered output of an all-gather, the input of a
    /// reduce-scatter): the measured line at `n`, or the lines of the measured sizes around it
    /// interpolated in `log2 n` (SPEC.md 3.7). `None` outside the measured sizes.
    pub fn time_s(&self, n: u32, bytes: f64) -> Option<f64> {
        let mut below: Option<(u32, TwoLine)> = None;
        for (&m, line) in self.n.iter().zip(&self.lines) {
            let Some(line) = *line else { break };
            if m == n {
                return Some(line.time_s(bytes));
            }
            if m < n {
                below = Some((m, line));
            } else if let Some((lo, lo_line)) = below {
                let at = lo_line.interpolate(f64::from(lo), &line, f64::from(m), f64::from(n));
                return Some(at.time_s(bytes));
            } else {
                return None;
            }
        }
        None
    }
}

/// The exchange of an MoE layer under data-parallel attention when the engine runs no
/// all-to-all: every GPU of the stage all-gathers every attention rank's tokens, runs its
/// experts on all of them, and reduce-scatters the bf16 outputs back to their ranks
/// (docs/model.md, "Collectives per stage step"). Timed by the GPU's NCCL tables (nccl-tests,
/// SPEC.md 3.8) where they were measured.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TokenGather {
    all_gather: CollectiveTable,
    reduce_scatter: CollectiveTable,
    /// Bytes per element of a gathered hidden state: the experts' activation format with its
    /// block scales, which the engine quantizes before the gather.
    pub bytes_per_element: f64,
}

impl TokenGather {
    /// The gather of a step whose experts run in `experts` (format id and activation class)
    /// on the NCCL tables `nccl` (AMD's RCCL files measure neither collective). TensorRT-LLM
    /// quantizes before it gathers (NVFP4: 4-bit values and one E4M3 scale per 16; MXFP8 for
    /// MXFP4 experts on FP8 activations: one E8M0 scale per 32; FP8 per tensor: one byte),
    /// except FP8 block-scaled experts, which quantize inside the fused MoE kernel and gather
    /// bf16 (`CutlassFusedMoE.forward_chunk`,
    /// `tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py`).
    fn resolve(nccl: &KernelFile, experts: (&str, ComputeClass), fp8_block: bool) -> Self {
        let bytes_per_element = match experts {
            (_, ComputeClass::Fp4) => 0.5 + 1.0 / 16.0,
            ("mxfp4", ComputeClass::Fp8) => 1.0 + 1.0 / 32.0,
            (_, ComputeClass::Fp8 | ComputeClass::Int8) if !fp8_block => 1.0,
            _ => 2.0,
        };
        TokenGather {
            all_gather: CollectiveTable::nccl(nccl, "all_gather"),
            reduce_scatter: CollectiveTable::nccl(nccl, "reduce_scatter"),
            bytes_per_element,
        }
    }

    /// Seconds of one MoE layer's all-gather of `gathered` bytes (the gathered output) and
    /// reduce-scatter of `scattered` bytes (its input) over `n` GPUs; `None` where either
    /// collective was not measured at `n`.
    pub fn time_s(&self, n: u32, gathered: f64, scattered: f64) -> Option<f64> {
        Some(self.all_gather.time_s(n, gathered)? + self.reduce_scatter.time_s(n, scattered)?)
    }
}

/// TensorRT-LLM's own all-to-all over multi-node NVLink (SPEC.md 3.9a): the two-sided MNNVL
/// kernels (`MnnvlMoe`) its MoE backends run when the expert-parallel group is wider than top-k
/// on an NVL72 (`CutlassFusedMoE.enable_alltoall`), timed per phase at each measured group
/// size; `x` is a rank's routed elements, `tokens x top-k x hidden`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NvlinkAllToAll {
    prepare: CollectiveTable,
    dispatch: CollectiveTable,
    combine: CollectiveTable,
}

impl NvlinkAllToAll {
    /// The kernels in `f`, the dispatch in `dispatch` (a table's `comm_dtype`) where measured,
    /// else in bf16; prepare and combine in bf16. `None` without all three phases.
    fn resolve(f: &KernelFile, dispatch: &str) -> Option<Self> {
        let table = |phase: &str, dtypes: &[&str]| {
            dtypes
                .iter()
                .map(|d| {
                    CollectiveTable::of(
                        f.moe_a2a
                            .iter()
                            .filter(|a| {
                                a.comm_backend == "trtllm_nvlink_two_sided"
                                    && a.phase == phase
                                    && a.comm_dtype == *d
                            })
                            .map(|a| (a.ep_size, a.line)),
                    )
                })
                .find(|t| *t != CollectiveTable::default())
        };
        Some(NvlinkAllToAll {
            prepare: table("prepare", &["bfloat16"])?,
            dispatch: table("dispatch", &[dispatch, "bfloat16"])?,
            combine: table("combine", &["bfloat16"])?,
        })
    }

    /// Seconds of one MoE layer's prepare, dispatch and combine over `ep` GPUs for a rank's
    /// `elements` routed elements; `None` outside the measured group sizes.
    pub fn time_s(&self, ep: u32, elements: f64) -> Option<f64> {
        Some(
            self.prepare.time_s(ep, elements)?
                + self.dispatch.time_s(ep, elements)?
                + self.combine.time_s(ep, elements)?,
        )
    }
}

/// The measured surfaces one configuration's step uses, resolved once per platform, engine and
/// formats. Every field is `None` where the tables do not cover it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepKernels {
    /// GEMM of the weight format (linear layers), and bf16 (LM head, router).
    pub gemm: Option<&'static GemmParams>,
    pub gemm_bf16: Option<&'static GemmParams>,
    /// Grouped GEMMs of the routed experts in their format.
    pub experts: Option<MoeParams>,
    /// The experts' table was measured with skewed (power-law) routing: it times the busiest
    /// expert-parallel rank, so no further imbalance applies.
    pub experts_skewed: bool,
    /// The experts' table under uniform (`balanced`) routing, which a deployment with an
    /// expert-parallel load balancer approaches ([`super::ModelFacts::balances_experts`]);
    /// `None` where none was measured in the experts' format.
    pub experts_balanced: Option<MoeParams>,
    /// What a load balancer does to the skewed experts' table, measured at its routing
    /// (TensorRT-LLM's wide-EP table of the GPU, for every engine); `None` where the experts'
    /// table is not skewed or no such table was measured (then [`Self::experts_balanced`]
    /// bounds it).
    pub expert_balance: Option<&'static ExpertBalance>,
    pub prefill_attention: Option<&'static ContextAttentionParams>,
    pub decode_attention: Option<&'static GenerationAttentionParams>,
    pub prefill_mla: Option<ContextMlaParams>,
    pub decode_mla: Option<GenerationMlaParams>,
    /// The engine's all-reduce as decode runs it (captured in CUDA graphs) and as prefill runs it.
    pub all_reduce_graph: CollectiveTable,
    pub all_reduce_eager: CollectiveTable,
    /// The engine's MoE dispatch and combine between expert-parallel ranks.
    pub exchange: Option<ExpertExchange>,
    /// TensorRT-LLM's NVLink all-to-all where it was measured (GB200 NVL72).
    pub nvlink_all_to_all: Option<NvlinkAllToAll>,
    /// The all-gather and reduce-scatter of MoE layers whose engine runs no all-to-all.
    pub gather: TokenGather,
}

/// Measured MoE dispatch and combine (DeepEP-style kernels, SPEC.md 3.9) of one engine inside
/// one NVLink domain, at the expert-parallel group size the tables were measured at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpertExchange {
    /// GPUs of the measured group (8 on HGX, 4 on GB200/GB300 trays).
    pub ep: u32,
    /// Low-latency kernels, which decode steps run: dispatch, combine.
    pub decode: (TwoLine, TwoLine),
    /// High-throughput ("normal") kernels, which prefill-only steps run.
    pub prefill: (TwoLine, TwoLine),
}

impl ExpertExchange {
    /// Seconds of one MoE layer's dispatch and combine on a rank that sends `copies` routed
    /// token copies (tokens x top-k) of `hidden` elements each. The kernels' time is set by the
    /// rank's own copies; the measured group stands for any group inside the domain (the share of
    /// copies that stay on the rank, `1/ep`, differs by at most `1/self.ep`).
    pub fn time_s(&self, decoding: bool, copies: f64, hidden: f64) -> f64 {
        let (dispatch, combine) = if decoding { self.decode } else { self.prefill };
        let elements = copies * hidden;
        dispatch.time_s(elements) + combine.time_s(elements)
    }

    /// The exchange of `engine` in `file`, its dispatch in `dispatch` (a table's `comm_dtype`)
    /// where measured, else in bf16; combines in bf16. `None` without both phases of both kinds.
    fn resolve(file: &KernelFile, engine: ServingEngine, dispatch: &str) -> Option<Self> {
        let (low_latency, normal) = match engine {
            ServingEngine::Trtllm => ("trtllm_deepep_ll", "trtllm_deepep_ht"),
            ServingEngine::Vllm => ("deepep_ll", "deepep_ht"),
            ServingEngine::Sglang => ("deepep_ll", "deepep_normal"),
        };
        // vLLM's tables carry no format (`default`); SGLang's say `default` and `bf16`.
        let line = |backend: &str, phase: &str, dtypes: &[&str]| {
            dtypes.iter().find_map(|d| {
                file.moe_a2a
                    .iter()
                    .find(|a| a.comm_backend == backend && a.phase == phase && a.comm_dtype == *d)
            })
        };
        let bf16 = ["bfloat16", "bf16", "default"];
        let preferred = [dispatch, "bfloat16", "bf16", "default"];
        let pair = |backend: &str| {
            let d = line(backend, "dispatch", &preferred)?;
            let c = line(backend, "combine", &bf16)?;
            (d.ep_size == c.ep_size).then_some((d.ep_size, (d.line, c.line)))
        };
        let (ep, decode) = pair(low_latency)?;
        let (ep_prefill, prefill) = pair(normal)?;
        (ep == ep_prefill).then_some(ExpertExchange {
            ep,
            decode,
            prefill,
        })
    }
}

/// Names of a racksweep weight format in the GEMM tables, in order of preference: FP8 as the
/// checkpoint scales it (per 128 x 128 block, `fp8_block`, or per tensor); MXFP4 as measured
/// (AMD's AITER `a4w4` GEMMs on CDNA4), else on NVFP4's table: Blackwell runs both block-scaled
/// FP4 formats through the same tensor-core instruction at the same rate
/// (`tcgen05.mma.kind::mxf4nvf4`, PTX ISA "Block Scaling"), the two differing only in the scale
/// block (32 against 16 elements) and the scale's type, and NVIDIA's tables measure dense FP4
/// GEMMs as NVFP4 only.
fn gemm_dtypes(id: &str, fp8_block: bool) -> &'static [&'static str] {
    match id {
        "bf16" | "fp16" => &["bf16"],
        "fp8" if fp8_block => &["fp8_block", "fp8"],
        "fp8" => &["fp8"],
        "nvfp4" => &["nvfp4"],
        "mxfp4" => &["mxfp4", "nvfp4"],
        "int8" => &["int8_sq"],
        "int4" => &["int4_wo"],
        _ => &[],
    }
}

/// Names of the routed experts' format in the MoE tables: the weight format, or a published
/// MXFP4 checkpoint run with FP8 (W4A8) or bf16 (W4A16) activations.
fn moe_dtypes(id: &str, activations: ComputeClass, fp8_block: bool) -> &'static [&'static str] {
    match (id, activations) {
        ("mxfp4", ComputeClass::Fp8 | ComputeClass::Fp4) => &["mxfp4_w4a8", "mxfp4_w4a16"],
        ("mxfp4", _) => &["mxfp4_w4a16"],
        ("int4", _) => &["int4_wo"],
        (id, _) => gemm_dtypes(id, fp8_block),
    }
}

/// Name of a KV-cache format in the attention tables.
fn kv_dtype(id: &str) -> Option<&'static str> {
    match id {
        "bf16" | "fp16" => Some("bf16"),
        "fp8" => Some("fp8"),
        _ => None,
    }
}

/// The default (most measured) surface among those of `items` that `matches`, else the first.
fn pick<T>(items: &[T], matches: impl Fn(&T) -> bool, default: impl Fn(&T) -> bool) -> Option<&T> {
    let mut matching = items.iter().filter(|i| matches(i));
    let first = matching.next()?;
    Some(
        std::iter::once(first)
            .chain(matching)
            .find(|i| default(i))
            .unwrap_or(first),
    )
}

/// [`pick`] for the first of `keys` that some item has.
fn pick_key<'a, T>(
    items: &'a [T],
    keys: &[&str],
    key: impl Fn(&T) -> &str,
    default: impl Fn(&T) -> bool,
) -> Option<&'a T> {
    keys.iter()
        .find_map(|k| pick(items, |i| key(i) == *k, &default))
}

/// The formats a step's kernels run in.
#[derive(Debug, Clone, Copy)]
pub struct Formats<'a> {
    /// Weight format id of the linear layers.
    pub weights: &'a str,
    /// Format id of the routed experts' weights and the class their activations run in.
    pub experts: (&'a str, ComputeClass),
    /// KV-cache format id.
    pub kv: &'a str,
    /// The checkpoint's FP8 weights are scaled per block (`Model::fp8_block_size`).
    pub fp8_block: bool,
    /// The routing skew the MoE tables are read at (`Model::expert_routing`).
    pub routing: ExpertRouting,
}

impl StepKernels {
    /// The surfaces of `gpu` under `engine` for a step in `formats`; `None` when the GPU has no
    /// measured tables.
    pub fn resolve(gpu: &str, engine: ServingEngine, formats: &Formats) -> Option<StepKernels> {
        let (f, nccl) = kernels::surfaces(gpu, engine)?;
        let gemm = |ids: &[&str]| {
            pick_key(&f.gemm, ids, |g| g.dtype.as_str(), |g| g.default).map(|g| &g.params)
        };
        // Attention computes in bf16 over a bf16 or FP8 cache (FP8 FMHA is opt-in).
        let kv = kv_dtype(formats.kv);
        let on_kv = |attn: &str, kv_of: &str| attn == "bf16" && Some(kv_of) == kv;
        let prefill_attention = pick(
            &f.context_attention,
            |a| on_kv(&a.attn_dtype, &a.kv_dtype),
            |a| a.default,
        )
        .map(|a| &a.params);
        let decode_attention = pick(
            &f.generation_attention,
            |a| on_kv(&a.attn_dtype, &a.kv_dtype),
            |a| a.default,
        )
        .map(|a| &a.params);
        let prefill_mla = pick(
            &f.context_mla,
            |a| on_kv(&a.mla_dtype, &a.kv_dtype),
            |_| false,
        )
        .map(|a| a.params);
        let decode_mla = pick(
            &f.generation_mla,
            |a| on_kv(&a.mla_dtype, &a.kv_dtype),
            |_| false,
        )
        .map(|a| a.params);
        let (graph, eager) = match engine {
            ServingEngine::Trtllm => ("TRTLLM", "TRTLLM"),
            ServingEngine::Vllm => ("vLLM_custom_graph", "vLLM_custom_eager"),
            ServingEngine::Sglang => (
                "SGLang_CustomAllReduce_graph",
                "SGLang_CustomAllReduce_eager",
            ),
        };
        // The routed experts at the model's routing skew, else uniform, else what was measured.
        let expert_ids = moe_dtypes(formats.experts.0, formats.experts.1, formats.fp8_block);
        let experts = [formats.routing.as_str(), "balanced"]
            .into_iter()
            .find_map(|routing| {
                expert_ids.iter().find_map(|id| {
                    pick(
                        &f.moe,
                        |m| m.distribution == routing && m.dtype == *id,
                        |m| m.default,
                    )
                })
            })
            .or_else(|| pick_key(&f.moe, expert_ids, |m| m.dtype.as_str(), |m| m.default));
        let experts_balanced = expert_ids.iter().find_map(|id| {
            pick(
                &f.moe,
                |m| m.distribution == "balanced" && m.dtype == *id,
                |m| m.default,
            )
        });
        // A power-law table times the busiest rank already; a balancer's measured effect
        // applies to it at its own routing.
        let skewed = experts.filter(|m| m.distribution.starts_with("power_law"));
        let expert_balance = skewed.and_then(|m| {
            let trtllm = kernels::file(gpu, ServingEngine::Trtllm.as_str())?;
            trtllm
                .eplb
                .iter()
                .find(|b| b.distribution == m.distribution)
        });
        // The dispatch format of the all-to-alls' tables.
        let dispatch = match formats.experts.1 {
            ComputeClass::Fp4 => "nvfp4",
            ComputeClass::Fp8 => "fp8",
            _ => "bfloat16",
        };
        Some(StepKernels {
            gemm: gemm(gemm_dtypes(formats.weights, formats.fp8_block)),
            gemm_bf16: gemm(&["bf16"]),
            experts: experts.map(|m| m.params),
            experts_skewed: skewed.is_some(),
            experts_balanced: experts_balanced.map(|m| m.params),
            expert_balance,
            prefill_attention,
            decode_attention,
            prefill_mla,
            decode_mla,
            all_reduce_graph: CollectiveTable::all_reduce(f, graph),
            all_reduce_eager: CollectiveTable::all_reduce(f, eager),
            exchange: ExpertExchange::resolve(f, engine, dispatch),
            nvlink_all_to_all: NvlinkAllToAll::resolve(f, dispatch),
            gather: TokenGather::resolve(nccl, formats.experts, formats.fp8_block),
        })
    }

    /// Seconds of `layers` layers' worth of `shapes` at `rows` rows on one GPU of a
    /// tensor-parallel group of `tp`, on `gemm`.
    pub fn gemms_s(gemm: &GemmParams, shapes: &[GemmShape], rows: f64, tp: f64) -> f64 {
        if rows <= 0.0 {
            return 0.0;
        }
        shapes
            .iter()
            .filter(|s| s.n > 0.0)
            .map(|s| {
                let (n, k) = s.on(tp);
                gemm.time_s(rows, n, k)
            })
            .sum()
    }

    /// Seconds of one MoE layer's routed experts for `tokens` tokens entering it, with
    /// `expert_tp` shards per expert over `ep` expert-parallel groups, for a model whose experts
    /// have `matrices` weight matrices (the surface's own count is rescaled through the
    /// intermediate width, which both its FLOP and byte terms are linear in).
    #[expect(
        clippy::too_many_arguments,
        reason = "one MoE layer's shape: each argument is a model or layout fact"
    )]
    pub fn experts_s(
        moe: &MoeParams,
        tokens: f64,
        hidden: f64,
        inter: f64,
        matrices: f64,
        topk: f64,
        experts: f64,
        expert_tp: f64,
        ep: f64,
    ) -> f64 {
        if tokens <= 0.0 {
            return 0.0;
        }
        moe.time_s(&MoeShape {
            tokens,
            hidden,
            inter: inter * matrices / moe.matrices,
            topk,
            experts,
            tp: expert_tp,
            ep,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::catalog::kernels::MoeParams;

    /// The GEMM shapes hold exactly the model's linear-layer parameters (the catalog's own count
    /// without the norms), for every model preset.
    #[test]
    fn gemm_shapes_hold_every_linear_parameter() {
        let c = Catalog::builtin().unwrap();
        for m in &c.models {
            let Some(counts) = m.param_counts() else {
                continue;
            };
            let g = LayerGemms::of(m);
            let sum = |s: &[GemmShape]| s.iter().map(|s| s.n * s.k).sum::<f64>();
            let h = f64::from(m.hidden);
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.max(1.0);
            assert!(
                close(sum(&g.attention), counts.attention_per_layer - 2.0 * h),
                "{}: attention {} vs {}",
                m.id,
                sum(&g.attention),
                counts.attention_per_layer - 2.0 * h
            );
            assert!(
                close(sum(&g.dense_mlp), counts.dense_mlp_per_layer),
                "{}",
                m.id
            );
            assert!(
                close(sum(&g.moe_shared), counts.moe_shared_per_layer),
                "{}",
                m.id
            );
            assert!(close(g.head.n * g.head.k, counts.embedding), "{}", m.id);
        }
    }

    /// llama-3.1-70b (64 query heads, 8 KV heads of 128) at tp 8: QKV is 1024 + 2 x 128 wide
    /// per GPU; at tp 16 each GPU still holds one whole KV head (1 x 128 each for K and V).
    #[test]
    fn qkv_replicates_kv_heads_below_one_per_gpu() {
        let c = Catalog::builtin().unwrap();
        let g = LayerGemms::of(c.model("llama-3.1-70b").unwrap());
        assert_eq!(g.attention[0].on(8.0), (1024.0 + 256.0, 8192.0));
        assert_eq!(g.attention[0].on(16.0), (512.0 + 256.0, 8192.0));
        assert_eq!(g.attention[1].on(8.0), (8192.0, 1024.0));
    }

    /// NVIDIA GPUs of AIConfigurator's tables have surfaces, AMD GPUs under vLLM and SGLang only
    /// (no decode attention measured: roofline); MI300X has block-scaled FP8 GEMMs only, which
    /// a per-tensor checkpoint does not take; H100 under TensorRT-LLM has FP8 GEMMs, FP8-KV
    /// attention and an all-reduce measured at 2, 4 and 8 GPUs. MXFP4 takes AITER's own table on
    /// MI355X and NVFP4's on B200.
    #[test]
    fn resolution() {
        let f = Formats {
            weights: "fp8",
            experts: ("fp8", ComputeClass::Fp8),
            kv: "fp8",
            fp8_block: false,
            routing: ExpertRouting::Balanced,
        };
        assert!(StepKernels::resolve("mi300x", ServingEngine::Trtllm, &f).is_none());
        let amd = StepKernels::resolve("mi300x", ServingEngine::Vllm, &f).unwrap();
        assert!(amd.gemm.is_none() && amd.gemm_bf16.is_none() && amd.decode_attention.is_none());
        let amd_block = Formats {
            fp8_block: true,
            ..f
        };
        let amd_block = StepKernels::resolve("mi300x", ServingEngine::Vllm, &amd_block).unwrap();
        assert!(amd_block.gemm.is_some());
        let mxfp4 = Formats {
            weights: "mxfp4",
            ..f
        };
        let mi355x = StepKernels::resolve("mi355x", ServingEngine::Vllm, &mxfp4).unwrap();
        let table = |gpu: &str, engine: ServingEngine, dtype: &str| {
            let (file, _) = kernels::surfaces(gpu, engine).unwrap();
            let g = pick(&file.gemm, |g| g.dtype == dtype, |g| g.default).unwrap();
            &g.params as *const GemmParams
        };
        assert!(std::ptr::eq(
            mi355x.gemm.unwrap(),
            table("mi355x", ServingEngine::Vllm, "mxfp4")
        ));
        let b200 = StepKernels::resolve("b200", ServingEngine::Trtllm, &mxfp4).unwrap();
        assert!(std::ptr::eq(
            b200.gemm.unwrap(),
            table("b200", ServingEngine::Trtllm, "nvfp4")
        ));
        let k = StepKernels::resolve("h100-sxm", ServingEngine::Trtllm, &f).unwrap();
        assert!(k.gemm.is_some() && k.gemm_bf16.is_some() && k.experts.is_some());
        assert!(k.decode_attention.is_some() && k.prefill_attention.is_some());
        for n in [2, 4, 8] {
            assert!(k.all_reduce_graph.time_s(n, 1e6).is_some(), "{n}");
        }
        assert!(k.all_reduce_graph.time_s(16, 1e6).is_none());
        // Between two measured sizes, the interpolated line lies between theirs.
        let (t4, t8) = (
            k.all_reduce_graph.time_s(4, 1e6).unwrap(),
            k.all_reduce_graph.time_s(8, 1e6).unwrap(),
        );
        let t6 = k.all_reduce_graph.time_s(6, 1e6).unwrap();
        assert!(t6 >= t4.min(t8) && t6 <= t4.max(t8), "{t4} {t6} {t8}");
        // A block-scaled FP8 checkpoint (DeepSeek-V3, Qwen3) takes the block-scaled tables,
        // slower than per-tensor FP8 at a DeepSeek-V3 expert shape (AIC's H200 tables).
        let h200 = StepKernels::resolve("h200-sxm", ServingEngine::Trtllm, &f).unwrap();
        let block = Formats {
            fp8_block: true,
            ..f
        };
        let h200_block = StepKernels::resolve("h200-sxm", ServingEngine::Trtllm, &block).unwrap();
        let (g, gb) = (h200.gemm.unwrap(), h200_block.gemm.unwrap());
        assert!(!std::ptr::eq(g, gb));
        assert!(gb.time_s(256.0, 4096.0, 7168.0) > g.time_s(256.0, 4096.0, 7168.0));
        assert_ne!(h200.experts, h200_block.experts);
        // DeepSeek's routing skew takes the power-law table, which times the busiest rank
        // (no further imbalance); AMD files have balanced tables only.
        let skewed = Formats {
            fp8_block: true,
            routing: ExpertRouting::PowerLaw101,
            ..f
        };
        let k = StepKernels::resolve("h200-sxm", ServingEngine::Trtllm, &skewed).unwrap();
        assert!(k.experts_skewed && !h200_block.experts_skewed);
        // At DeepSeek-V3's expert shape, 4096 tokens over ep 8 (AIC's H200 table: 1.168 ms
        // power-law 1.01 against 0.726 ms balanced; each surface within its fit error).
        let dsv3 = |e: &MoeParams| {
            StepKernels::experts_s(e, 4096.0, 7168.0, 2048.0, 3.0, 8.0, 256.0, 1.0, 8.0) * 1e3
        };
        let (skew_ms, flat_ms) = (
            dsv3(&k.experts.unwrap()),
            dsv3(&h200_block.experts.unwrap()),
        );
        assert!((skew_ms / 1.168 - 1.0).abs() < 0.25, "{skew_ms}");
        assert!((flat_ms / 0.726 - 1.0).abs() < 0.25, "{flat_ms}");
        let amd = StepKernels::resolve("mi355x", ServingEngine::Vllm, &skewed).unwrap();
        assert!(amd.experts.is_some() && !amd.experts_skewed);
        // No FP4 KV-cache attention tables.
        let fp4kv = Formats { kv: "nvfp4", ..f };
        let k = StepKernels::resolve("b200", ServingEngine::Trtllm, &fp4kv).unwrap();
        assert!(k.decode_attention.is_none());
    }

    /// A step whose weights and routed experts are in `experts` (format id and activation
    /// class), FP8 KV cache, uniform routing.
    fn moe_formats(experts: (&'static str, ComputeClass), fp8_block: bool) -> Formats<'static> {
        Formats {
            weights: experts.0,
            experts,
            kv: "fp8",
            fp8_block,
            routing: ExpertRouting::Balanced,
        }
    }

    /// DeepSeek-V3 (hidden 7168, top-8) in NVFP4 on four B200s at attention DP 4: 2,048 tokens
    /// of all ranks gathered as 7168 x (1/2 + 1/16) = 4,032 bytes each plus 8 x 8 bytes of
    /// routing, 8,388,608 bytes; the bf16 outputs reduce-scattered, 29,360,128 bytes. By hand
    /// on `b200-nccl.toml` at 4 GPUs: the all-gather min(11.241 us + 8388608 / 2.61644e11,
    /// 33.05 us + 8388608 / 8.18238e11) = 43.302 us; the reduce-scatter min(11.0905 us +
    /// 29360128 / 2.93811e11, 29.4276 us + 29360128 / 7.85137e11) = 66.823 us; 110.125 us per
    /// MoE layer. Other formats gather fewer or more bytes; where the tables stop (GB200's trays
    /// measure 2 and 4 GPUs; AMD's RCCL files have neither collective) there is no time.
    #[test]
    fn token_gather_by_hand() {
        let gather = |gpu: &str, engine, experts, fp8_block| {
            StepKernels::resolve(gpu, engine, &moe_formats(experts, fp8_block))
                .unwrap()
                .gather
        };
        let nvfp4 = gather(
            "b200",
            ServingEngine::Trtllm,
            ("nvfp4", ComputeClass::Fp4),
            false,
        );
        assert_eq!(nvfp4.bytes_per_element, 0.5625);
        let (gathered, scattered) = (8_388_608.0, 29_360_128.0);
        assert_eq!(2048.0 * (7168.0 * 0.5625 + 8.0 * 8.0), gathered);
        let t = nvfp4.time_s(4, gathered, scattered).unwrap();
        assert!((t / 110.1245e-6 - 1.0).abs() < 1e-5, "{t}");
        let bytes = |experts, fp8_block| {
            gather("h200-sxm", ServingEngine::Trtllm, experts, fp8_block).bytes_per_element
        };
        assert_eq!(bytes(("fp8", ComputeClass::Fp8), false), 1.0);
        assert_eq!(bytes(("fp8", ComputeClass::Fp8), true), 2.0);
        assert_eq!(bytes(("mxfp4", ComputeClass::Fp8), false), 1.03125);
        assert_eq!(bytes(("bf16", ComputeClass::Bf16), false), 2.0);
        // Between measured sizes the lines interpolate; past them there is none.
        let at = |n| nvfp4.time_s(n, gathered, scattered);
        let (t2, t3, t8) = (at(2).unwrap(), at(3).unwrap(), at(8).unwrap());
        assert!(
            t3 >= t2.min(t) && t3 <= t2.max(t) && t8 > t,
            "{t2} {t3} {t} {t8}"
        );
        assert!(at(16).is_none());
        let gb200 = gather(
            "gb200-nvl72",
            ServingEngine::Trtllm,
            ("nvfp4", ComputeClass::Fp4),
            false,
        );
        assert!(gb200.time_s(4, gathered, scattered).is_some());
        assert!(gb200.time_s(8, gathered, scattered).is_none());
        let amd = gather(
            "mi300x",
            ServingEngine::Vllm,
            ("fp8", ComputeClass::Fp8),
            true,
        );
        assert!(amd.time_s(8, gathered, scattered).is_none());
    }

    /// TensorRT-LLM's NVLink all-to-all on GB200 NVL72, DeepSeek-V3 in NVFP4 at ep 16: a rank's
    /// 512 tokens, 4,096 routed copies of 7,168, 29,360,128 elements. By hand on
    /// `gb200-nvl72-trtllm.toml` at 16 GPUs: prepare 14.3237 us + 29360128 / 8.90065e12 =
    /// 17.622 us; the NVFP4 dispatch min(12.9093 us + 29360128 / 8.96792e11, 154.377 us +
    /// 29360128 / 9.82733e11) = 45.648 us; the bf16 combine min(14.4892 us + 29360128 /
    /// 2.77492e11, 20.0013 us + 29360128 / 2.77722e11) = 120.295 us; 183.565 us per MoE layer.
    /// Only GB200's TensorRT-LLM tables measured it; ep 2 to 64.
    #[test]
    fn nvlink_all_to_all_by_hand() {
        let nvlink = |gpu: &str, experts| {
            StepKernels::resolve(gpu, ServingEngine::Trtllm, &moe_formats(experts, false))
                .unwrap()
                .nvlink_all_to_all
        };
        let nvfp4 = nvlink("gb200-nvl72", ("nvfp4", ComputeClass::Fp4)).unwrap();
        let t = nvfp4.time_s(16, 29_360_128.0).unwrap();
        assert!((t / 183.565e-6 - 1.0).abs() < 1e-5, "{t}");
        assert!(nvfp4.time_s(64, 29_360_128.0).is_some());
        assert!(nvfp4.time_s(128, 29_360_128.0).is_none());
        // FP8 tokens dispatch faster than bf16 ones, slower than NVFP4 ones.
        let fp8 = nvlink("gb200-nvl72", ("fp8", ComputeClass::Fp8)).unwrap();
        let bf16 = nvlink("gb200-nvl72", ("bf16", ComputeClass::Bf16)).unwrap();
        let at = |x: &NvlinkAllToAll| x.time_s(16, 29_360_128.0).unwrap();
        assert!(at(&nvfp4) < at(&fp8) && at(&fp8) < at(&bf16));
        assert!(nvlink("b200", ("nvfp4", ComputeClass::Fp4)).is_none());
    }
}
