//! The sweep file exactly as written: a serde mirror of the TOML with byte spans on every value an
//! error might point at. Unknown keys are rejected here; meaning is checked in `spec::load`.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

use crate::catalog::{Gpu, Model, Rack};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub sweep: RawSweep,
    pub workload: RawWorkload,
    pub grid: RawGrid,
    #[serde(default)]
    pub gpu: Vec<Spanned<Gpu>>,
    #[serde(default)]
    pub rack: Vec<Spanned<Rack>>,
    #[serde(default)]
    pub model: Vec<Spanned<Model>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
    pub objectives: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub constraints: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    pub model: Spanned<String>,
    pub input_tokens: Spanned<f64>,
    pub output_tokens: Spanned<f64>,
    /// Probability that a draft token is accepted (speculative decoding).
    pub spec_acceptance: Option<Spanned<f64>>,
    /// Cost of proposing one draft token, in layers of the target model.
    pub spec_draft_layers: Option<Spanned<f64>>,
}

pub type Names = Spanned<Vec<Spanned<String>>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGrid {
    pub hardware: Names,
    pub rack: Option<Names>,
    pub racks: Option<Spanned<IntAxis>>,
    pub tp: Option<Spanned<IntAxis>>,
    pub pp: Option<Spanned<IntAxis>>,
    pub ep: Option<Spanned<IntAxis>>,
    pub disagg_prefill_pct: Option<Spanned<IntAxis>>,
    pub spec_tokens: Option<Spanned<IntAxis>>,
    pub batch: Option<Spanned<IntAxis>>,
    pub weight_dtype: Option<Names>,
    pub kv_dtype: Option<Names>,
}

/// An integer axis: a list (`[1, 2, 4]`) or a range (`{ from = 1, to = 64, step = 1 }` or
/// `{ from = 1, to = 512, factor = 2 }`). Values are kept signed so that negatives get a clear
/// message rather than a type error.
#[derive(Debug, Clone, PartialEq)]
pub enum IntAxis {
    List(Vec<Spanned<i64>>),
    Range(RawRange),
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

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<IntAxis, A::Error> {
                RawRange::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(IntAxis::Range)
            }
        }

        deserializer.deserialize_any(AxisVisitor)
    }
}
