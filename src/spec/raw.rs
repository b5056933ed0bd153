//! The sweep file exactly as written: a serde mirror of the TOML with byte spans on every value an
//! error might point at. Unknown keys are rejected here; meaning is checked in `spec::load`.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

use crate::catalog::{Model, Rack};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub sweep: RawSweep,
    pub workload: RawWorkload,
    pub grid: RawGrid,
    /// Whole GPU presets, or a preset's fields over another's (`extends`): read by
    /// `Loader::gpu_table`.
    #[serde(default)]
    pub gpu: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    pub rack: Vec<Spanned<Rack>>,
    #[serde(default)]
    pub model: Vec<Spanned<Model>>,
    pub cost: Option<RawCost>,
    #[serde(default)]
    pub price: Vec<Spanned<RawPrice>>,
    /// Global factors, as `validate --calibration` reads them (`Catalog::calibrate`).
    pub calibration: Option<Spanned<toml::Table>>,
}

/// `[[price]]`: a provider's quote for one GPU at one pricing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrice {
    pub provider: Spanned<String>,
    pub gpu: Spanned<String>,
    pub usd_per_gpu_hour: Spanned<f64>,
    /// A pricing word: on-demand, reserved-1y, reserved-3y or spot.
    pub commitment: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    pub name: Spanned<String>,
    /// `"inference"` (the default) or `"training"`; read (and checked) first, by
    /// [`RawModeProbe`].
    #[serde(rename = "mode")]
    pub _mode: Option<Spanned<String>>,
    #[serde(default)]
    pub description: String,
    pub objectives: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub constraints: Vec<Spanned<String>>,
    pub ttft_p99_ms: Option<Spanned<f64>>,
    pub tpot_p99_ms: Option<Spanned<f64>>,
    pub tokens_per_s_per_user: Option<Spanned<f64>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    pub model: Spanned<String>,
    pub input_tokens: Spanned<f64>,
    pub output_tokens: Spanned<f64>,
    /// Probability that a draft token is accepted (speculative decoding).
    pub spec_acceptance: Option<Spanned<f64>>,
    /// Cost of proposing one draft token, in layers of the target model.
    pub spec_draft_layers: Option<Spanned<f64>>,
    pub cached_tokens: Option<Spanned<f64>>,
    pub think_s: Option<Spanned<f64>>,
    pub input_tokens_cv: Option<Spanned<f64>>,
    pub output_tokens_cv: Option<Spanned<f64>>,
    pub kv_admission: Option<Spanned<String>>,
    /// Serve MoE models with an expert-parallel load balancer (EPLB).
    pub eplb: Option<Spanned<bool>>,
    /// Overlap two micro-batches with the MoE dispatch and combine (SGLang, vLLM).
    pub two_batch_overlap: Option<Spanned<bool>>,
    pub demand: Option<Spanned<RawDemand>>,
    #[serde(default)]
    pub phase: Vec<Spanned<RawPhase>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDemand {
    pub concurrent_users: Option<Spanned<f64>>,
    pub arrival_rate_per_s: Option<Spanned<f64>>,
    pub session_minutes: Option<Spanned<f64>>,
    pub percentile: Option<Spanned<f64>>,
    pub requests_per_s: Option<Spanned<f64>>,
    pub tokens_per_day: Option<Spanned<f64>>,
    pub traffic: Option<Spanned<RawTraffic>>,
    pub target_utilization: Option<Spanned<f64>>,
}

/// A named traffic pattern or `{ active_ratio, burst_factor }`.
#[derive(Debug, Clone)]
pub enum RawTraffic {
    Named(String),
    Custom(RawCustomTraffic),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCustomTraffic {
    pub active_ratio: Spanned<f64>,
    pub burst_factor: Spanned<f64>,
}

impl<'de> Deserialize<'de> for RawTraffic {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TrafficVisitor;

        impl<'de> Visitor<'de> for TrafficVisitor {
            type Value = RawTraffic;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "\"steady\", \"business-hours\", \"bursty\" or { active_ratio, burst_factor }",
                )
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawTraffic, E> {
                Ok(RawTraffic::Named(v.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawTraffic, A::Error> {
                RawCustomTraffic::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawTraffic::Custom)
            }
        }

        deserializer.deserialize_any(TrafficVisitor)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPhase {
    pub name: Spanned<String>,
    pub weight: Option<Spanned<f64>>,
    pub duration_h: Option<Spanned<f64>>,
    pub load_scale: Option<Spanned<f64>>,
    pub input_tokens: Option<Spanned<f64>>,
    pub output_tokens: Option<Spanned<f64>>,
}

/// `[cost]`: overrides of `data/economics.toml`, per-GPU prices and API prices.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCost {
    pub pue: Option<Spanned<f64>>,
    pub usd_per_kwh: Option<Spanned<f64>>,
    pub kg_co2e_per_kwh: Option<Spanned<f64>>,
    pub water_l_per_kwh: Option<Spanned<f64>>,
    pub facility_capex_usd_per_kw: Option<Spanned<f64>>,
    pub facility_years: Option<Spanned<f64>>,
    pub hosting_usd_per_kw_month: Option<Spanned<f64>>,
    pub maintenance_pct_per_year: Option<Spanned<f64>>,
    pub network_capex_usd_per_rack: Option<Spanned<f64>>,
    pub years: Option<Spanned<f64>>,
    pub storage_tb_per_server: Option<Spanned<f64>>,
    pub storage_gbps_per_server: Option<Spanned<f64>>,
    pub storage_power_kw_per_server: Option<Spanned<f64>>,
    pub storage_capex_usd_per_server: Option<Spanned<f64>>,
    pub spot_mean_lifetime_hours: Option<Spanned<f64>>,
    pub spot_recovery_minutes: Option<Spanned<f64>>,
    pub usd_per_mtok_api_input: Option<Spanned<f64>>,
    pub usd_per_mtok_api_output: Option<Spanned<f64>>,
    pub usd_per_gpu_hour: Option<Spanned<std::collections::BTreeMap<String, Spanned<f64>>>>,
    pub capex_usd_per_gpu: Option<Spanned<std::collections::BTreeMap<String, Spanned<f64>>>>,
}

impl RawCost {
    /// The economics overrides, by key.
    pub fn economics(&self) -> [(&'static str, &Option<Spanned<f64>>); 16] {
        [
            ("pue", &self.pue),
            ("usd_per_kwh", &self.usd_per_kwh),
            ("kg_co2e_per_kwh", &self.kg_co2e_per_kwh),
            ("water_l_per_kwh", &self.water_l_per_kwh),
            ("facility_capex_usd_per_kw", &self.facility_capex_usd_per_kw),
            ("facility_years", &self.facility_years),
            ("hosting_usd_per_kw_month", &self.hosting_usd_per_kw_month),
            ("maintenance_pct_per_year", &self.maintenance_pct_per_year),
            (
                "network_capex_usd_per_rack",
                &self.network_capex_usd_per_rack,
            ),
            ("years", &self.years),
            ("storage_tb_per_server", &self.storage_tb_per_server),
            ("storage_gbps_per_server", &self.storage_gbps_per_server),
            (
                "storage_power_kw_per_server",
                &self.storage_power_kw_per_server,
            ),
            (
                "storage_capex_usd_per_server",
                &self.storage_capex_usd_per_server,
            ),
            ("spot_mean_lifetime_hours", &self.spot_mean_lifetime_hours),
            ("spot_recovery_minutes", &self.spot_recovery_minutes),
        ]
    }
}

pub type Names = Spanned<Vec<Spanned<String>>>;

/// A list of numbers (a workload axis: `input_tokens = [1024, 8192]`).
pub type Floats = Spanned<Vec<Spanned<f64>>>;

/// Builds a `[grid]` table's mirror from an axis table's rows (`crate::grid::inference_axes!`,
/// `crate::train::grid::training_axes!`): the platform's keys `hardware` and `rack`, then every
/// numeric axis's key, then every named axis's, each group in table order (the order in which
/// an unknown key's error lists the keys).
macro_rules! raw_grid {
    (pub struct $name:ident; $($rows:tt)*) => {
        raw_grid!(@sort $name [] [] []; $($rows)*);
    };
    // Each row joins its group: [platform keys] [numeric keys] [named keys].
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : Platforms; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)* pub hardware: Names, pub rack: Option<Names>,]
            [$($numeric)*] [$($named)*]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : Workloads = $default:tt; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)*] [$($numeric)*]
            [$($named)* pub model: Option<Names>, pub input_tokens: Option<Floats>,
                pub output_tokens: Option<Floats>, pub think_s: Option<Floats>,
                pub cached_tokens: Option<Floats>, pub concurrent_users: Option<Floats>,
                pub requests_per_s: Option<Floats>, pub tokens_per_day: Option<Floats>,
                pub demand_scale: Option<Floats>,]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : Sizes = $default:tt; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)*]
            [$($numeric)* pub racks: Option<Spanned<IntAxis>>, pub gpus: Option<Spanned<IntAxis>>,
                pub dp: Option<Spanned<IntAxis>>,]
            [$($named)*]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : Numbers = $default:tt, $bounds:ident; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)*] [$($numeric)* pub $field: Option<Spanned<IntAxis>>,]
            [$($named)*]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : Spine = $default:tt, $bounds:ident; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)*] [$($numeric)* pub $field: Option<Spanned<IntAxis>>,]
            [$($named)*]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : Racks = $default:tt, $bounds:ident; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)*] [$($numeric)* pub $field: Option<Spanned<IntAxis>>,]
            [$($named)*]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : PrefillPlatforms = $default:tt; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)*] [$($numeric)*]
            [$($named)* pub $field: Option<Names>,]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : Dtypes = $default:tt; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)*] [$($numeric)*]
            [$($named)* pub $field: Option<Names>,]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : Named<$vocab:ty> = $default:tt; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)*] [$($numeric)*]
            [$($named)* pub $field: Option<Names>,]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];
        $(#[$doc:meta])* $field:ident : Payments = $default:tt; $($rest:tt)*) => {
        raw_grid!(@sort $name [$($platform)*] [$($numeric)*]
            [$($named)* pub ownership: Option<Names>, pub pricing: Option<Names>,]; $($rest)*);
    };
    (@sort $name:ident [$($platform:tt)*] [$($numeric:tt)*] [$($named:tt)*];) => {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($platform)*
            $($numeric)*
            $($named)*
        }
    };
}

crate::grid::inference_axes!(raw_grid! { pub struct RawGrid; });

/// An integer axis: a list (`[1, 2, 4]`) or a range (`{ from = 1, to = 64, step = 1 }` or
/// `{ from = 1, to = 512, factor = 2 }`). Values are kept signed so that negatives get a clear
/// message rather than a type error.
#[derive(Debug, Clone, PartialEq)]
pub enum IntAxis {
    List(Vec<Spanned<i64>>),
    Range(RawRange),
    /// A word where numbers go: `"auto"` for racks, an error elsewhere.
    Word(String),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRange {
    pub from: Spanned<i64>,
    pub to: Spanned<i64>,
    pub step: Option<Spanned<i64>>,
    pub factor: Option<Spanned<i64>>,
}

impl<'de> Deserialize<'de> for IntAxis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AxisVisitor;

        impl<'de> Visitor<'de> for AxisVisitor {
            type Value = IntAxis;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a list of integers or a range { from, to, step } / { from, to, factor }",
                )
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IntAxis, A::Error> {
                let mut values = Vec::new();
                while let Some(v) = seq.next_element::<Spanned<i64>>()? {
                    values.push(v);
                }
                Ok(IntAxis::List(values))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntAxis, E> {
                Ok(IntAxis::Word(v.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<IntAxis, A::Error> {
                RawRange::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(IntAxis::Range)
            }
        }

        deserializer.deserialize_any(AxisVisitor)
    }
}

/// Just `[sweep] mode`, read first to pick the schema the rest is parsed with.
#[derive(Debug, Deserialize)]
pub struct RawModeProbe {
    pub sweep: Option<RawModeOnly>,
}

#[derive(Debug, Deserialize)]
pub struct RawModeOnly {
    pub mode: Option<Spanned<String>>,
}

/// A training sweep (`[sweep] mode = "training"`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrainingSpec {
    pub sweep: RawSweep,
    pub workload: RawTrainingWorkload,
    pub grid: RawTrainingGrid,
    #[serde(default)]
    pub gpu: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    pub rack: Vec<Spanned<Rack>>,
    #[serde(default)]
    pub model: Vec<Spanned<Model>>,
    pub cost: Option<RawCost>,
    pub calibration: Option<Spanned<toml::Table>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrainingWorkload {
    pub model: Spanned<String>,
    pub seq_len: Spanned<i64>,
    pub global_batch_tokens: Option<Spanned<f64>>,
    pub global_batch_seqs: Option<Spanned<i64>>,
    pub train_tokens: Spanned<f64>,
    pub restart_minutes: Option<Spanned<f64>>,
    pub failures_per_gpu_hour: Option<Spanned<f64>>,
}

crate::train::grid::training_axes!(raw_grid! { pub struct RawTrainingGrid; });

/// The tables of a `mode` sweep that accept `key`, as a hint names them (`[workload.demand]`,
/// `[grid] (as an axis to sweep)`), in file order.
pub fn tables_with(mode: crate::columns::Mode, key: &str) -> Vec<&'static str> {
    use crate::columns::Mode;
    let tables: &[(&'static str, &'static [&'static str])] = match mode {
        Mode::Inference => &[
            ("[sweep]", keys::<RawSweep>()),
            ("[workload]", keys::<RawWorkload>()),
            ("[workload.demand]", keys::<RawDemand>()),
            ("[[workload.phase]]", keys::<RawPhase>()),
            ("[cost]", keys::<RawCost>()),
            ("[grid] (as an axis to sweep)", keys::<RawGrid>()),
        ],
        Mode::Training => &[
            ("[sweep]", keys::<RawSweep>()),
            ("[workload]", keys::<RawTrainingWorkload>()),
            ("[cost]", keys::<RawCost>()),
            ("[grid] (as an axis to sweep)", keys::<RawTrainingGrid>()),
        ],
    };
    tables
        .iter()
        .filter(|(_, keys)| keys.contains(&key))
        .map(|&(table, _)| table)
        .collect()
}

/// The keys of a table's mirror, as its `Deserialize` derive declares them: the derive hands
/// its field names to `deserialize_struct`, which this deserializer records and stops at.
fn keys<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    #[derive(Debug)]
    struct Stop;
    impl fmt::Display for Stop {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("field names recorded")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            *self.0 = fields;
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::Mode;

    /// The keys come from the derives: a demand key lives in [workload.demand] and is a grid
    /// axis; a key of no table has no home.
    #[test]
    fn a_key_is_found_in_its_tables() {
        assert!(keys::<RawDemand>().contains(&"concurrent_users"));
        assert!(keys::<RawSweep>().contains(&"mode"));
        assert_eq!(
            tables_with(Mode::Inference, "concurrent_users"),
            ["[workload.demand]", "[grid] (as an axis to sweep)"]
        );
        assert_eq!(tables_with(Mode::Inference, "ttft_p99_ms"), ["[sweep]"]);
        assert_eq!(
            tables_with(Mode::Inference, "think_s"),
            ["[workload]", "[grid] (as an axis to sweep)"]
        );
        assert_eq!(
            tables_with(Mode::Training, "concurrent_users"),
            Vec::<&str>::new()
        );
        assert!(tables_with(Mode::Inference, "no_such_key").is_empty());
    }
}
