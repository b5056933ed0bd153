//! Number formats for weights and the KV cache: storage bytes (with block-scale overhead) and the
//! tensor-core class each one computes on. The data lives in `data/dtypes.toml`; this file only
//! defines its shape.

use serde::Deserialize;

/// Tensor-core peak a format computes on (one `*_tflops` field of a GPU preset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeClass {
    Bf16,
    Fp8,
    Int8,
    Fp4,
}

impl ComputeClass {
    pub const ALL: [ComputeClass; 4] = [
        ComputeClass::Bf16,
        ComputeClass::Fp8,
        ComputeClass::Int8,
        ComputeClass::Fp4,
    ];

    /// The GPU preset's key of this class's dense peak.
    pub fn peak_key(self) -> &'static str {
        match self {
            ComputeClass::Bf16 => "bf16_tflops",
            ComputeClass::Fp8 => "fp8_tflops",
            ComputeClass::Int8 => "int8_tops",
            ComputeClass::Fp4 => "fp4_tflops",
        }
    }

    /// The GPU preset's key of this class's GEMM efficiency.
    pub fn efficiency_key(self) -> &'static str {
        match self {
            ComputeClass::Bf16 => "efficiency.gemm_bf16",
            ComputeClass::Fp8 => "efficiency.gemm_fp8",
            ComputeClass::Int8 => "efficiency.gemm_int8",
            ComputeClass::Fp4 => "efficiency.gemm_fp4",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ComputeClass::Bf16 => "bf16",
            ComputeClass::Fp8 => "fp8",
            ComputeClass::Int8 => "int8",
            ComputeClass::Fp4 => "fp4",
        }
    }
}

/// One number format, as written in `data/dtypes.toml` or an inline `[[dtype]]`-free sweep.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dtype {
    pub id: String,
    pub description: String,
    /// Bits of one stored element.
    pub bits: u32,
    /// Elements sharing one scale factor; 0 when the format has only a per-tensor scale.
    pub block_size: u32,
    /// Bits of each block scale.
    pub scale_bits: u32,
    /// Tensor cores the format runs on where a GPU serves it natively (which GPUs do, and which
    /// serve it weight-only, is each GPU preset's statement).
    pub compute: ComputeClass,
    pub source: String,
}

impl Dtype {
    /// Storage bytes per element including the amortized block scale:
    /// `bits/8 + scale_bits/8/block_size`.
    pub fn bytes_per_param(&self) -> f64 {
        let scale = if self.block_size == 0 {
            0.0
        } else {
            f64::from(self.scale_bits) / 8.0 / f64::from(self.block_size)
        };
        f64::from(self.bits) / 8.0 + scale
    }
}
