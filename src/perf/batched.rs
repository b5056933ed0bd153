//! One placed configuration at its engine batch, reduced to per-instance rates, so that a pool of
//! any number of instances can be evaluated without re-running the step model: the sizing search
//! asks "how many instances?" many times per configuration.

use super::latency::Decode;
use super::{Estimate, Instance, Limit, Memory, Reason};

/// A configuration's per-instance serving facts at batch `batch`.
#[derive(Debug, Clone, Copy)]
pub struct BatchedInstance<'a> {
    pub inst: &'a Instance<'a>,
    pub batch: f64,
    pub decode: Decode,
    pub memory: Memory,
    /// First-token latency of a request on an idle instance (plus the KV transfer when
    /// disaggregated), seconds.
    pub ttft_idle_s: f64,
    /// Requests per second one decode instance completes at full batch.
    pub decode_requests_per_s: f64,
    /// Requests per second one prefill-only instance completes (disaggregated serving).
    pub prefill_requests_per_s: f64,
    /// Per output token, seconds of the step spent on each resource (per-kernel rooflines).
    compute_s: f64,
    memory_s: f64,
    comm_s: f64,
}

/// Instances in each pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pools {
    pub decode: u32,
    pub prefill: u32,
}

impl Pools {
    /// One aggregated instance.
    pub const ONE: Pools = Pools {
        decode: 1,
        prefill: 0,
    };
}

impl<'a> BatchedInstance<'a> {
    /// `Err` is the estimate of a configuration that does not fit in HBM.
    pub fn new(inst: &'a Instance<'a>, batch: u32) -> Result<BatchedInstance<'a>, Estimate> {
        let batch = f64::from(batch);
        // One decode step serves both the activation sizing and the timing; a batch that
        // cannot fit is rejected before its step is timed.
        let shape = inst.decode_shape(batch);
        let memory = inst.memory_with(batch, &shape);
        if !memory.fits() {
            return Err(Estimate {
                limit: Some(Limit::Memory),
                ..Estimate::with_memory(Reason::DoesNotFit, &inst.layout, &memory)
            });
        }
        let decode = inst.decode_step(&shape);
        let pp = f64::from(inst.layout.pp);
        let gained = inst.speculation.tokens_per_step();
        Ok(BatchedInstance {
            inst,
            batch,
            decode,
            memory,
            ttft_idle_s: inst.ttft_idle_s,
            decode_requests_per_s: batch / (decode.tpot_s * inst.output_tokens),
            prefill_requests_per_s: inst.prefill_pool_requests_per_s,
            compute_s: pp * decode.stage.compute_s / gained,
            memory_s: pp * decode.stage.memory_s / gained,
            comm_s: (pp * decode.stage.comm_s + decode.hops_s) / gained,
        })
    }

    /// Splits `instances` into pools: aggregated, every instance decodes; disaggregated,
    /// `round(instances x pct / 100)` (at least one) prefill and the rest decode.
    pub fn pools(&self, instances: u32) -> Result<Pools, Reason> {
        match self.inst.disagg_prefill_pct {
            0 => Ok(Pools {
                decode: instances,
                prefill: 0,
            }),
            pct => {
                let prefill =
                    ((f64::from(instances) * f64::from(pct) / 100.0).round() as u32).max(1);
                if prefill >= instances {
                    return Err(Reason::DisaggNeedsTwoPools);
                }
                Ok(Pools {
                    decode: instances - prefill,
                    prefill,
                })
            }
        }
    }

    /// GPUs of the decode pool's and of the prefill pool's instances.
    pub fn pool_gpus(&self, pools: Pools) -> (u32, u32) {
        let inst = self.inst;
        (
            pools.decode * inst.layout.gpus_per_instance,
            pools.prefill * inst.prefill_layout.gpus_per_instance,
        )
    }

    /// Requests per second the pools complete at full batch: the slower pool's rate.
    pub fn capacity_requests_per_s(&self, pools: Pools) -> f64 {
        let decode = f64::from(pools.decode) * self.decode_requests_per_s;
        if pools.prefill == 0 {
            decode
        } else {
            decode.min(f64::from(pools.prefill) * self.prefill_requests_per_s)
        }
    }

    /// The estimate of `instances` instances on a cluster of `gpus` GPUs, at full batch.
    pub fn estimate(&self, instances: u32, gpus: u32) -> Estimate {
        let l = &self.inst.layout;
        let pools = match self.pools(instances) {
            Ok(p) => p,
            Err(reason) => return Estimate::with_layout(reason, l),
        };
        let mut limit = if self.comm_s >= self.compute_s.max(self.memory_s) {
            Limit::Comm
        } else if self.compute_s >= self.memory_s {
            Limit::Compute
        } else {
            Limit::Hbm
        };
        let request_rate = self.capacity_requests_per_s(pools);
        // A prefill pool slower than the decode pool bounds the rate with its compute.
        if request_rate < f64::from(pools.decode) * self.decode_requests_per_s {
            limit = Limit::Compute;
        }
        let output_tokens_per_s = request_rate * self.inst.output_tokens;
        // Per-GPU figures are a per-instance rate times the instances' share of the GPUs, one
        // correctly rounded quotient: clusters that differ only in size (8 instances on 32 GPUs,
        // 24 on 96) then give the same per-GPU figures to the bit, so the frontier keeps them as
        // ties (`total / gpus` can differ in the last bit).
        let share = |n: u32| f64::from(n) / f64::from(gpus);
        let prefill_bound = request_rate < f64::from(pools.decode) * self.decode_requests_per_s;
        let tokens_per_s_per_gpu = self.inst.output_tokens
            * if prefill_bound {
                self.prefill_requests_per_s * share(pools.prefill)
            } else {
                self.decode_requests_per_s * share(pools.decode)
            };
        let per_gpu = |seconds: f64| {
            if seconds > 0.0 {
                self.batch / seconds * share(pools.decode)
            } else {
                f64::NAN
            }
        };
        let tpot_s = self.decode.tpot_s;
        Estimate {
            reason: None,
            limit: Some(limit),
            gpus,
            instances,
            prefill_instances: pools.prefill,
            prefill_gpus: self.pool_gpus(pools).1,
            kv_transfer_ms: self.inst.kv_transfer_s * 1e3,
            ttft_ms: self.ttft_idle_s * 1e3,
            ttft_idle_ms: self.ttft_idle_s * 1e3,
            tpot_ms: tpot_s * 1e3,
            tokens_per_s_per_user: 1.0 / tpot_s,
            tokens_per_s_per_instance: output_tokens_per_s / f64::from(instances),
            tokens_per_s_per_gpu,
            output_tokens_per_s,
            compute_bound_tokens_per_s_per_gpu: per_gpu(self.compute_s),
            hbm_bound_tokens_per_s_per_gpu: per_gpu(self.memory_s),
            comm_bound_tokens_per_s_per_gpu: per_gpu(self.comm_s),
            ..Estimate::with_memory(Reason::DoesNotFit, l, &self.memory)
        }
    }
}
