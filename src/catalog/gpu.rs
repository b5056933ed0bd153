//! Accelerator presets: dense tensor-core peaks, HBM, power, which number formats run natively,
//! and the per-GPU efficiency factors the performance model applies. Data in `data/gpus.toml`;
//! the same fields form an inline `[[gpu]]` table in a sweep file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::dtype::ComputeClass;
use crate::vocab::{Pricing, ServingEngine};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    pub id: String,
    pub name: String,
    pub source: String,
    #[serde(default)]
    pub notes: String,
    /// Dense (no sparsity) BF16 tensor-core peak, TFLOP/s.
    pub bf16_tflops: f64,
    /// Dense FP8 peak, TFLOP/s; absent when the GPU has no FP8 tensor cores.
    pub fp8_tflops: Option<f64>,
    /// Dense FP4 peak, TFLOP/s; absent when the GPU has no FP4 tensor cores.
    pub fp4_tflops: Option<f64>,
    /// Dense INT8 peak, TOP/s; absent when unknown or unsupported.
    pub int8_tops: Option<f64>,
    /// HBM capacity as marketed, GB (1e9 bytes).
    pub hbm_gb: f64,
    /// Memory the driver reports (`nvidia-smi`, `rocm-smi`), MiB: what an engine sizes its KV
    /// cache against. Marketed capacities count GiB ("80 GB" H100: 80 GiB, 85.9e9 bytes).
    /// Absent: `hbm_gb`.
    #[serde(default)]
    pub hbm_device_mib: Option<f64>,
    /// Peak HBM bandwidth, TB/s (1e12 bytes/s).
    pub hbm_tbps: f64,
    /// Board power (TDP/TGP), W; absent when no reliable source states it.
    pub tdp_w: Option<f64>,
    /// Board power at idle, W; absent when no reliable source states it.
    pub idle_w: Option<f64>,
    /// Cloud on-demand list price per GPU-hour, USD (provider and date in `data/gpus.toml`).
    pub usd_per_gpu_hour: Option<f64>,
    /// Price per GPU-hour with a one-year commitment, USD (source or estimate in
    /// `data/gpus.toml`).
    pub usd_per_gpu_hour_reserved_1y: Option<f64>,
    /// Price per GPU-hour with a three-year commitment, USD.
    pub usd_per_gpu_hour_reserved_3y: Option<f64>,
    /// Spot (preemptible) price per GPU-hour, USD; interruptions are priced in `perf::cost`.
    pub usd_per_gpu_hour_spot: Option<f64>,
    /// Purchase price of the server (or rack system) divided by its GPUs, USD.
    pub capex_usd_per_gpu: Option<f64>,
    /// Weight formats engines serve natively on this GPU: the tensor cores execute the format
    /// (ids of `data/dtypes.toml`, each running on its format's compute class).
    pub native_dtypes: Vec<String>,
    /// Weight formats engines serve weight-only on this GPU: the weights are dequantized inside
    /// the GEMM (Marlin, Machete, Petit and the like), which runs on the tensor cores of the class
    /// given, at `efficiency.gemm_weight_only` of their rate. Any format in neither list cannot
    /// be served. Sources per GPU in `data/gpus.toml`, the table in docs/model.md §3.
    #[serde(default)]
    pub weight_only_dtypes: BTreeMap<String, ComputeClass>,
    /// KV-cache formats engines can keep on this GPU (stored in the format, dequantized inside
    /// the attention kernel where the GPU lacks it).
    pub kv_dtypes: Vec<String>,
    /// Serving engines that run on this GPU, the default (`engine = "auto"`) first. Omitted:
    /// all three, TensorRT-LLM first (an NVIDIA GPU); AMD GPUs list vLLM and SGLang, which run
    /// on ROCm (TensorRT-LLM does not).
    #[serde(default = "all_engines")]
    pub engines: Vec<ServingEngine>,
    /// Rack preset used when the sweep does not name one.
    pub default_rack: String,
    pub efficiency: Efficiency,
}

/// Achievable fractions of the peaks above, each measured or documented at its source in
/// `data/gpus.toml` and `docs/model.md`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Efficiency {
    /// Fraction of the dense peak reached by large GEMMs, per compute class.
    pub gemm_bf16: f64,
    /// Required when the GPU has the matching peak; absent otherwise.
    pub gemm_fp8: Option<f64>,
    pub gemm_int8: Option<f64>,
    pub gemm_fp4: Option<f64>,
    /// Fraction of its compute class's GEMM rate a weight-only (dequantizing) GEMM reaches when
    /// compute-bound; required when `weight_only_dtypes` is not empty.
    pub gemm_weight_only: Option<f64>,
    /// Fraction of peak HBM bandwidth reached by streaming reads (weights, KV cache).
    pub hbm: f64,
    /// Fraction of link bandwidth reached by collectives (NCCL/RCCL bus bandwidth over link peak).
    pub link: f64,
}

impl Gpu {
    /// Dense peak of a compute class in FLOP/s (TOP/s for int8), if the GPU has it.
    pub fn peak_flops(&self, class: ComputeClass) -> Option<f64> {
        let tflops = match class {
            ComputeClass::Bf16 => Some(self.bf16_tflops),
            ComputeClass::Fp8 => self.fp8_tflops,
            ComputeClass::Int8 => self.int8_tops,
            ComputeClass::Fp4 => self.fp4_tflops,
        };
        tflops.map(|t| t * 1e12)
    }

    /// Achievable GEMM fraction of peak for a compute class, if the GPU has that class.
    pub fn gemm_efficiency(&self, class: ComputeClass) -> Option<f64> {
        match class {
            ComputeClass::Bf16 => Some(self.efficiency.gemm_bf16),
            ComputeClass::Fp8 => self.efficiency.gemm_fp8,
            ComputeClass::Int8 => self.efficiency.gemm_int8,
            ComputeClass::Fp4 => self.efficiency.gemm_fp4,
        }
    }

    /// Achievable dense FLOP/s of a compute class (peak x GEMM efficiency), if the GPU has it.
    pub fn achievable_flops(&self, class: ComputeClass) -> Option<f64> {
        Some(self.peak_flops(class)? * self.gemm_efficiency(class)?)
    }

    pub fn supports_natively(&self, dtype_id: &str) -> bool {
        self.native_dtypes.iter().any(|d| d == dtype_id)
    }

    /// The class a weight-only GEMM of `dtype_id` runs on, if engines serve it so here.
    pub fn weight_only_class(&self, dtype_id: &str) -> Option<ComputeClass> {
        self.weight_only_dtypes.get(dtype_id).copied()
    }

    /// Whether engines can keep the KV cache in `dtype_id` here.
    pub fn serves_kv(&self, dtype_id: &str) -> bool {
        self.kv_dtypes.iter().any(|d| d == dtype_id)
    }

    /// Price per GPU-hour at a pricing, USD, if the catalog or a quote gives one.
    pub fn usd_per_gpu_hour_at(&self, pricing: Pricing) -> Option<f64> {
        match pricing {
            Pricing::OnDemand => self.usd_per_gpu_hour,
            Pricing::Reserved1y => self.usd_per_gpu_hour_reserved_1y,
            Pricing::Reserved3y => self.usd_per_gpu_hour_reserved_3y,
            Pricing::Spot => self.usd_per_gpu_hour_spot,
        }
    }

    /// The field of [`Gpu::usd_per_gpu_hour_at`], for `[[price]]` quotes and `[cost]`.
    pub fn usd_per_gpu_hour_at_mut(&mut self, pricing: Pricing) -> &mut Option<f64> {
        match pricing {
            Pricing::OnDemand => &mut self.usd_per_gpu_hour,
            Pricing::Reserved1y => &mut self.usd_per_gpu_hour_reserved_1y,
            Pricing::Reserved3y => &mut self.usd_per_gpu_hour_reserved_3y,
            Pricing::Spot => &mut self.usd_per_gpu_hour_spot,
        }
    }

    /// The TOML key of the price at a pricing (`usd_per_gpu_hour_spot`), as `check_gpu` names
    /// it.
    pub fn price_key(pricing: Pricing) -> &'static str {
        match pricing {
            Pricing::OnDemand => "usd_per_gpu_hour",
            Pricing::Reserved1y => "usd_per_gpu_hour_reserved_1y",
            Pricing::Reserved3y => "usd_per_gpu_hour_reserved_3y",
            Pricing::Spot => "usd_per_gpu_hour_spot",
        }
    }

    pub fn hbm_bytes(&self) -> f64 {
        self.hbm_gb * 1e9
    }

    /// Bytes of device memory an engine sees ([`Gpu::hbm_device_mib`], else [`Gpu::hbm_bytes`]).
    pub fn device_bytes(&self) -> f64 {
        self.hbm_device_mib
            .map_or_else(|| self.hbm_bytes(), |mib| mib * 1024.0 * 1024.0)
    }

    pub fn hbm_bytes_per_s(&self) -> f64 {
        self.hbm_tbps * 1e12
    }
}

fn all_engines() -> Vec<ServingEngine> {
    ServingEngine::ALL.to_vec()
}
