//! `racksweep catalog`: the built-in presets with their key specs, or one preset as a TOML table
//! a sweep file accepts (`racksweep catalog gpus h100-sxm`).

use std::fmt::Write as _;

use anyhow::Result;

use crate::catalog::{Catalog, Model, Rack};
use crate::cli::{CatalogArgs, CatalogKind};
use crate::error::UserError;
use crate::format::number;
use crate::limits::quoted;
use crate::output::table;
use crate::vocab::Pricing;

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), number)
}

pub fn render(catalog: &Catalog, kind: Option<CatalogKind>) -> String {
    let kinds = match kind {
        Some(k) => vec![k],
        None => vec![
            CatalogKind::Gpus,
            CatalogKind::Racks,
            CatalogKind::Models,
            CatalogKind::Dtypes,
        ],
    };
    let mut out = String::new();
    for (i, k) in kinds.iter().enumerate() {
        if kinds.len() > 1 {
            if i > 0 {
                out.push('\n');
            }
            let _ = writeln!(
                out,
                "{}",
                match k {
                    CatalogKind::Gpus => {
                        "# gpus (dense TFLOP/s; int8 in TOP/s; board power idle and at TDP, and the default rack's server power per GPU, in W; cloud prices in USD per GPU-hour)"
                    }
                    CatalogKind::Racks => "# racks",
                    CatalogKind::Models => "# models",
                    CatalogKind::Dtypes => "# dtypes",
                }
            );
        }
        out.push_str(&match k {
            CatalogKind::Gpus => gpus(catalog),
            CatalogKind::Racks => racks(catalog),
            CatalogKind::Models => models(catalog),
            CatalogKind::Dtypes => dtypes(catalog),
        });
    }
    out
}

fn gpus(c: &Catalog) -> String {
    let rows: Vec<Vec<String>> = c
        .gpus
        .iter()
        .map(|g| {
            vec![
                g.id.clone(),
                number(g.bf16_tflops),
                opt(g.fp8_tflops),
                opt(g.fp4_tflops),
                opt(g.int8_tops),
                number(g.hbm_gb),
                format!("{:.2}", g.hbm_tbps),
                g.native_dtypes.join(","),
                g.weight_only_dtypes
                    .iter()
                    .map(|(d, c)| format!("{d}>{}", c.as_str()))
                    .collect::<Vec<_>>()
                    .join(","),
                g.kv_dtypes.join(","),
                opt(g.idle_w),
                opt(g.tdp_w),
                c.rack(&g.default_rack).map_or_else(
                    || "-".into(),
                    |r| number(r.server_power_kw * 1e3 / f64::from(r.gpus_per_server)),
                ),
                opt(g.usd_per_gpu_hour_at(Pricing::OnDemand)),
                opt(g.usd_per_gpu_hour_at(Pricing::Reserved1y)),
                opt(g.usd_per_gpu_hour_at(Pricing::Reserved3y)),
                opt(g.usd_per_gpu_hour_at(Pricing::Spot)),
                g.default_rack.clone(),
            ]
        })
        .collect();
    table::render(
        &[
            "id",
            "bf16",
            "fp8",
            "fp4",
            "int8",
            "hbm_gb",
            "hbm_tbps",
            "native",
            "weight_only",
            "kv",
            "idle_w",
            "tdp_w",
            "server_w/gpu",
            "on-demand",
            "reserved-1y",
            "reserved-3y",
            "spot",
            "default_rack",
        ],
        &rows,
    )
}

fn racks(c: &Catalog) -> String {
    let rows: Vec<Vec<String>> = c
        .racks
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.gpu.clone(),
                r.gpus_per_server.to_string(),
                r.servers_per_rack.to_string(),
                r.gpus_per_rack().to_string(),
                r.scaleup_domain_gpus.to_string(),
                number(r.scaleup_gbps_per_gpu),
                number(r.scaleout_gbps_per_gpu),
                number(r.server_power_kw),
                number(r.rack_power_budget_kw),
            ]
        })
        .collect();
    table::render(
        &[
            "id",
            "gpu",
            "gpus/server",
            "servers",
            "gpus/rack",
            "scaleup_domain",
            "scaleup_gbps",
            "scaleout_gbps",
            "server_kw",
            "rack_kw",
        ],
        &rows,
    )
}

fn models(c: &Catalog) -> String {
    let rows: Vec<Vec<String>> = c
        .models
        .iter()
        .map(|m| {
            let counts = m.param_counts();
            let experts = if m.is_moe() {
                format!("{}/{}", m.experts_per_token(), m.experts())
            } else {
                "-".into()
            };
            vec![
                m.id.clone(),
                m.layers.to_string(),
                m.hidden.to_string(),
                format!("{}/{}", m.heads, m.kv_heads),
                format!("{:?}", m.attention).to_lowercase(),
                experts,
                counts.map_or_else(|| "-".into(), |p| number(p.total(m.experts()) / 1e9)),
                counts.map_or_else(
                    || "-".into(),
                    |p| number(p.active(m.experts_per_token()) / 1e9),
                ),
                m.max_context.to_string(),
            ]
        })
        .collect();
    table::render(
        &[
            "id",
            "layers",
            "hidden",
            "heads/kv",
            "attention",
            "experts",
            "params_b",
            "active_b",
            "max_context",
        ],
        &rows,
    )
}

fn dtypes(c: &Catalog) -> String {
    let rows: Vec<Vec<String>> = c
        .dtypes
        .iter()
        .map(|d| {
            // Which GPUs serve the format, and how: natively, weight-only, as a KV cache.
            let serving = |f: &dyn Fn(&crate::catalog::Gpu) -> bool| {
                let ids: Vec<&str> = c
                    .gpus
                    .iter()
                    .filter(|g| f(g))
                    .map(|g| g.id.as_str())
                    .collect();
                if ids.is_empty() {
                    "-".to_string()
                } else {
                    ids.join(",")
                }
            };
            vec![
                d.id.clone(),
                format!("{:.4}", d.bytes_per_param()),
                d.compute.as_str().to_string(),
                serving(&|g| g.supports_natively(&d.id)),
                serving(&|g| g.weight_only_class(&d.id).is_some()),
                serving(&|g| g.serves_kv(&d.id)),
                d.description.clone(),
            ]
        })
        .collect();
    table::render(
        &[
            "id",
            "bytes/param",
            "computes_on",
            "native_on",
            "weight_only_on",
            "kv_on",
            "description",
        ],
        &rows,
    )
}

/// One preset as a TOML table a sweep file accepts as it is: a GPU as a `[[gpu]]` table that
/// `extends` itself with every field (edit any number to replace it for the sweep); a rack or a
/// model as a copy under the id `<id>-custom` (an inline preset may not reuse a catalog id),
/// which the sweep then names in `[grid] rack` or `[workload] model`.
pub fn preset_toml(catalog: &Catalog, kind: CatalogKind, id: &str) -> Result<String, UserError> {
    let unknown = |what: &str, ids: Vec<&str>| {
        let hint = match crate::suggest::did_you_mean(id, ids.iter().copied()) {
            Some(s) => format!("{s} `racksweep catalog {what}s` lists them"),
            None => format!("`racksweep catalog {what}s` lists them"),
        };
        UserError::new(format!("catalog: unknown {what} \"{}\"", quoted(id))).with_hint(hint)
    };
    let (comment, body) = match kind {
        CatalogKind::Gpus => {
            let Some(g) = catalog.gpu(id) else {
                return Err(unknown(
                    "gpu",
                    catalog.gpus.iter().map(|g| g.id.as_str()).collect(),
                ));
            };
            (
                format!(
                    "# The built-in {id}: every field, as `extends` of itself. Change a number to \
                     replace it for this sweep\n# (docs/sweep-format.md, section 6); sources in \
                     src/catalog/data/gpus.toml.\n"
                ),
                array_of_one(
                    "gpu",
                    &Extends {
                        extends: id,
                        preset: g,
                    },
                ),
            )
        }
        CatalogKind::Racks => {
            let Some(r) = catalog.rack(id) else {
                return Err(unknown(
                    "rack",
                    catalog.racks.iter().map(|r| r.id.as_str()).collect(),
                ));
            };
            let copy = Rack {
                id: format!("{id}-custom"),
                ..r.clone()
            };
            (
                format!(
                    "# A copy of the built-in {id} under a new id (an inline preset adds to the \
                     catalog):\n# name it in [grid] rack = [\"{id}-custom\"]. Sources in \
                     src/catalog/data/racks.toml.\n"
                ),
                array_of_one("rack", &copy),
            )
        }
        CatalogKind::Models => {
            let Some(m) = catalog.model(id) else {
                return Err(unknown(
                    "model",
                    catalog.models.iter().map(|m| m.id.as_str()).collect(),
                ));
            };
            let copy = Model {
                id: format!("{id}-custom"),
                ..m.clone()
            };
            (
                format!(
                    "# A copy of the built-in {id} under a new id (an inline preset adds to the \
                     catalog):\n# name it in [workload] model = \"{id}-custom\". Sources in \
                     src/catalog/data/models.toml.\n"
                ),
                array_of_one("model", &copy),
            )
        }
        CatalogKind::Dtypes => {
            return Err(UserError::new(format!(
                "catalog: number formats are not set in a sweep file (\"{}\")",
                quoted(id)
            ))
            .with_hint("a sweep names formats in [grid] weight_dtype and kv_dtype; `racksweep catalog dtypes` lists them"));
        }
    };
    Ok(comment + &body.map_err(|e| UserError::new(format!("catalog: {e}")))?)
}

/// A GPU preset with `extends` (its own id) before its fields.
#[derive(serde::Serialize)]
struct Extends<'a> {
    extends: &'a str,
    #[serde(flatten)]
    preset: &'a crate::catalog::Gpu,
}

/// `[[key]]` with one table, its fields in declaration order.
fn array_of_one<T: serde::Serialize>(key: &str, value: &T) -> Result<String, toml::ser::Error> {
    toml::to_string(&std::collections::BTreeMap::from([(key, [value])]))
}

pub fn run(args: CatalogArgs) -> Result<String> {
    let catalog = Catalog::builtin().map_err(anyhow::Error::msg)?;
    match (args.kind, &args.id) {
        (Some(kind), Some(id)) => Ok(preset_toml(&catalog, kind, id)?),
        _ => Ok(render(&catalog, args.kind)),
    }
}
