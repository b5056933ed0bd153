//! The `[grid]` table's checks, built from the axis tables (`crate::grid::inference_axes!`,
//! `crate::train::grid::training_axes!`) by [`load_grid!`]: platforms of hardware and racks,
//! number formats, words of a vocabulary (ownership, ...), and integer axes (lists or ranges
//! within bounds) with their defaults. Inference sweeps read the whole table here; training
//! sweeps (`training.rs`) add their scale axis and the checks across axes.

use std::collections::HashSet;

use toml::Spanned;

use crate::catalog::Catalog;
use crate::error::UserError;
use crate::grid::Grid;
use crate::limits::{self, Bounds, COUNT};
use crate::vocab::{Ownership, Payment, Platform, Pricing, Vocabulary};

use super::raw::{self, IntAxis, Names};
use super::{Loader, MAX_AXIS_VALUES};
use crate::format::thousands;

/// Builds `Loader::$name`, which checks every axis of a `[grid]` mirror in table order and
/// returns the grid: each row's key is `grid.<field>`, its default and bounds the row's.
macro_rules! load_grid {
    (
        fn $name:ident(&$raw:ident) -> $grid:ident;
        $(
            $(#[$doc:meta])*
            $field:ident : $kind:ident $(<$vocab:ty>)? $(= $default:tt $(, $bounds:ident)?)? ;
        )*
    ) => {
        impl $crate::spec::Loader<'_> {
            /// Every axis of `g`, checked in axis order.
            fn $name(
                &self,
                catalog: &$crate::catalog::Catalog,
                g: &$crate::spec::raw::$raw,
            ) -> Result<$grid, $crate::error::UserError> {
                Ok($grid {
                    $(
                        $field: load_grid!(@axis self, catalog, g, $field;
                            $kind $(<$vocab>)? $(= $default $(, $bounds)?)?),
                    )*
                })
            }
        }
    };
    (@axis $l:ident, $c:ident, $g:ident, $field:ident; Platforms) => {
        $l.platforms($c, &$g.hardware, &$g.rack)?
    };
    (@axis $l:ident, $c:ident, $g:ident, $field:ident; PrefillPlatforms = $default:tt) => {
        $l.prefill_platforms($c, &$g.$field)?
    };
    (@axis $l:ident, $c:ident, $g:ident, $field:ident; Dtypes = $default:tt) => {
        $l.dtypes($c, &$g.$field, concat!("grid.", stringify!($field)), $default)?
    };
    (@axis $l:ident, $c:ident, $g:ident, $field:ident; Named<$vocab:ty> = $default:ident) => {
        $l.words(&$g.$field, concat!("grid.", stringify!($field)), <$vocab>::$default)?
    };
    // The combinations need the [workload] table: `Loader::spec` sets them (`spec::workloads`).
    (@axis $l:ident, $c:ident, $g:ident, $field:ident; Workloads = $default:tt) => {
        <$crate::grid::Workloads as $crate::axis::Kind>::single($default, $c)
    };
    (@axis $l:ident, $c:ident, $g:ident, $field:ident; Payments = $default:tt) => {
        $l.payments(&$g.ownership, &$g.pricing)?
    };
    (@axis $l:ident, $c:ident, $g:ident, $field:ident; Sizes = $default:tt) => {
        $l.sizes($g, &$default)?
    };
    // Numbers, Racks ("auto" is read by `int_axis`) and Spine.
    (@axis $l:ident, $c:ident, $g:ident, $field:ident; $kind:ident = $default:tt, $bounds:ident) => {
        $l.int_axis(
            &$g.$field,
            concat!("grid.", stringify!($field)),
            &$default,
            $crate::limits::$bounds,
        )?
    };
}
pub(super) use load_grid;

crate::grid::inference_axes!(load_grid! { fn inference_axes(&RawGrid) -> Grid; });

impl Loader<'_> {
    pub(super) fn grid(
        &self,
        catalog: &Catalog,
        g: raw::RawGrid,
        demand: bool,
    ) -> Result<Grid, UserError> {
        if let Some(r) = &g.racks
            && matches!(r.get_ref(), IntAxis::Word(w) if w == "auto")
            && !demand
        {
            return Err(self
                .at(r.span(), "grid.racks: \"auto\" sizes the cluster to [workload.demand], which this sweep does not set")
                .with_hint("add a [workload.demand] table (e.g. concurrent_users = 1000), or list rack counts"));
        }
        self.inference_axes(catalog, &g)
    }

    /// A list of catalog number formats (`grid.weight_dtype`, `grid.kv_dtype`), `default`
    /// without one.
    fn dtypes(
        &self,
        catalog: &Catalog,
        names: &Option<Names>,
        key: &str,
        default: &str,
    ) -> Result<Vec<usize>, UserError> {
        match names {
            None => Ok(vec![
                catalog
                    .dtype_index(default)
                    .expect("the default format is built in"),
            ]),
            Some(n) => {
                let ids: Vec<&str> = catalog.dtypes.iter().map(|d| d.id.as_str()).collect();
                self.names(
                    n,
                    key,
                    "number format",
                    |id| catalog.dtype_index(id),
                    &ids,
                    "racksweep catalog dtypes",
                )
            }
        }
    }

    /// A categorical axis over the words of `T` (`grid.ownership`, ...), without repeats;
    /// `default` without one.
    pub(super) fn words<T: Vocabulary>(
        &self,
        names: &Option<Names>,
        key: &str,
        default: T,
    ) -> Result<Vec<T>, UserError> {
        let Some(names) = names else {
            return Ok(vec![default]);
        };
        let all = || {
            T::ALL
                .iter()
                .map(|w| w.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if names.get_ref().is_empty() {
            let hint = T::EMPTY_HINT.map_or_else(
                || format!("list some of {}, or remove the key for the default", all()),
                String::from,
            );
            return Err(self
                .at(names.span(), format!("{key}: empty"))
                .with_hint(hint));
        }
        let mut out = Vec::new();
        for (i, n) in names.get_ref().iter().enumerate() {
            let Some(word) = T::parse(n.get_ref()) else {
                let hint = T::UNKNOWN_HINT.map_or_else(|| format!("use {}", all()), String::from);
                return Err(self
                    .at(
                        n.span(),
                        format!(
                            "{key}[{i}]: unknown {} \"{}\"",
                            T::NOUN,
                            limits::quoted(n.get_ref())
                        ),
                    )
                    .with_hint(hint));
            };
            if out.contains(&word) {
                return Err(self.at(
                    n.span(),
                    format!(
                        "{key}[{i}]: \"{}\" appears twice",
                        limits::quoted(n.get_ref())
                    ),
                ));
            }
            out.push(word);
        }
        Ok(out)
    }

    /// `grid.ownership` and `grid.pricing`: each ownership in order, cloud once per pricing
    /// (default on-demand), owned once (a price per GPU-hour does not apply to it).
    fn payments(
        &self,
        ownership: &Option<Names>,
        pricing: &Option<Names>,
    ) -> Result<Vec<Payment>, UserError> {
        let owners = self.words(ownership, "grid.ownership", Ownership::Cloud)?;
        let pricings = self.words(pricing, "grid.pricing", Pricing::OnDemand)?;
        if let Some(p) = pricing
            && !owners.contains(&Ownership::Cloud)
        {
            return Err(self
                .at(
                    p.span(),
                    "grid.pricing: prices cloud GPU-hours, and grid.ownership has no \"cloud\"",
                )
                .with_hint("add \"cloud\" to grid.ownership, or remove grid.pricing"));
        }
        let mut out = Vec::new();
        for o in owners {
            match o {
                Ownership::Cloud => out.extend(pricings.iter().map(|&p| Payment::Cloud(p))),
                Ownership::Owned => out.push(Payment::Owned),
            }
        }
        Ok(out)
    }

    /// `grid.prefill_hardware`: `"same"` (`None`) or GPU ids, each GPU in its default rack;
    /// `"same"` alone without the key.
    fn prefill_platforms(
        &self,
        catalog: &Catalog,
        names: &Option<Names>,
    ) -> Result<Vec<Option<Platform>>, UserError> {
        let Some(names) = names else {
            return Ok(vec![None]);
        };
        let same = catalog.gpus.len();
        let mut ids: Vec<&str> = catalog.gpus.iter().map(|g| g.id.as_str()).collect();
        ids.push(crate::grid::SAME_HARDWARE);
        let gpus = self.names(
            names,
            "grid.prefill_hardware",
            "GPU",
            |id| {
                if id == crate::grid::SAME_HARDWARE {
                    Some(same)
                } else {
                    catalog.gpu_index(id)
                }
            },
            &ids,
            "racksweep catalog gpus",
        )?;
        Ok(gpus
            .into_iter()
            .map(|g| {
                (g != same).then(|| Platform {
                    gpu: g,
                    rack: catalog
                        .rack_index(&catalog.gpus[g].default_rack)
                        .expect("checked default rack"),
                })
            })
            .collect())
    }

    /// `grid.hardware` and `grid.rack`: each GPU with the listed racks that host it, or with
    /// its default rack.
    pub(super) fn platforms(
        &self,
        catalog: &Catalog,
        hardware: &Names,
        rack: &Option<Names>,
    ) -> Result<Vec<Platform>, UserError> {
        let gpu_ids: Vec<&str> = catalog.gpus.iter().map(|g| g.id.as_str()).collect();
        let gpus = self.names(
            hardware,
            "grid.hardware",
            "GPU",
            |id| catalog.gpu_index(id),
            &gpu_ids,
            "racksweep catalog gpus",
        )?;
        let rack_ids: Vec<&str> = catalog.racks.iter().map(|r| r.id.as_str()).collect();
        Ok(match rack {
            None => gpus
                .iter()
                .map(|&g| Platform {
                    gpu: g,
                    rack: catalog
                        .rack_index(&catalog.gpus[g].default_rack)
                        .expect("checked default rack"),
                })
                .collect(),
            Some(names) => {
                let racks = self.names(
                    names,
                    "grid.rack",
                    "rack",
                    |id| catalog.rack_index(id),
                    &rack_ids,
                    "racksweep catalog racks",
                )?;
                for (i, &r) in racks.iter().enumerate() {
                    let hosted = &catalog.racks[r].gpu;
                    if !gpus.iter().any(|&g| &catalog.gpus[g].id == hosted) {
                        return Err(self
                            .at(names.get_ref()[i].span(), format!("grid.rack[{i}]: \"{}\" hosts {hosted}, which is not in grid.hardware", catalog.racks[r].id))
                            .with_hint(format!("add \"{hosted}\" to grid.hardware or drop this rack")));
                    }
                }
                // Each GPU pairs with the listed racks that host it, or with its default rack.
                let mut platforms = Vec::new();
                for &g in &gpus {
                    let mut mine: Vec<usize> = racks
                        .iter()
                        .copied()
                        .filter(|&r| catalog.racks[r].gpu == catalog.gpus[g].id)
                        .collect();
                    if mine.is_empty() {
                        mine.push(
                            catalog
                                .rack_index(&catalog.gpus[g].default_rack)
                                .expect("checked default rack"),
                        );
                    }
                    platforms.extend(mine.into_iter().map(|r| Platform { gpu: g, rack: r }));
                }
                platforms
            }
        })
    }

    pub(super) fn in_bounds(
        &self,
        v: &Spanned<i64>,
        key: &str,
        bounds: Bounds,
    ) -> Result<u32, UserError> {
        let x = *v.get_ref();
        if x < i64::from(bounds.min) {
            return Err(self.at(
                v.span(),
                format!("{key}: {x} must be at least {}", bounds.min),
            ));
        }
        if x > i64::from(bounds.max) {
            let e = self.at(
                v.span(),
                format!("{key}: {x} is larger than {}", bounds.max),
            );
            return Err(match bounds.why {
                Some(why) => e.with_hint(why),
                None => e,
            });
        }
        Ok(x as u32)
    }

    pub(super) fn int_axis(
        &self,
        axis: &Option<Spanned<IntAxis>>,
        key: &str,
        default: &[u32],
        bounds: Bounds,
    ) -> Result<Vec<u32>, UserError> {
        let Some(axis) = axis else {
            return Ok(default.to_vec());
        };
        let values = match axis.get_ref() {
            IntAxis::List(list) => {
                if list.is_empty() {
                    return Err(self
                        .at(axis.span(), format!("{key}: empty"))
                        .with_hint("list at least one value, or remove the key for the default"));
                }
                if list.len() as u64 > MAX_AXIS_VALUES {
                    let n = thousands(list.len() as u64);
                    let max = thousands(MAX_AXIS_VALUES);
                    return Err(self.at(axis.span(), format!("{key}: {n} values, more than {max}")));
                }
                let mut seen = HashSet::new();
                let mut out = Vec::with_capacity(list.len());
                for (i, v) in list.iter().enumerate() {
                    let x = self.in_bounds(v, &format!("{key}[{i}]"), bounds)?;
                    if !seen.insert(x) {
                        return Err(self.at(v.span(), format!("{key}[{i}]: {x} appears twice")));
                    }
                    out.push(x);
                }
                out
            }
            IntAxis::Word(w) if key == "grid.racks" && w == "auto" => {
                vec![crate::perf::cluster::AUTO_RACKS]
            }
            IntAxis::Word(w) => {
                let hint = if key == "grid.racks" {
                    "a list of rack counts, a range, or \"auto\" to size the cluster to the demand"
                } else {
                    "a list of integers, or a range { from, to, step } / { from, to, factor }"
                };
                return Err(self
                    .at(
                        axis.span(),
                        format!("{key}: \"{}\" is not a number", limits::quoted(w)),
                    )
                    .with_hint(hint));
            }
            IntAxis::Range(r) => {
                let from = self.in_bounds(&r.from, &format!("{key}.from"), bounds)?;
                let to = self.in_bounds(&r.to, &format!("{key}.to"), bounds)?;
                if to < from {
                    return Err(self.at(
                        r.to.span(),
                        format!("{key}.to: {to} is less than from ({from})"),
                    ));
                }
                match (&r.step, &r.factor) {
                    (Some(step), None) => {
                        let step = self.in_bounds(step, &format!("{key}.step"), COUNT)?;
                        let count = u64::from((to - from) / step) + 1;
                        if count > MAX_AXIS_VALUES {
                            return Err(self
                                .at(
                                    axis.span(),
                                    format!(
                                        "{key}: the range has {} values, more than {}",
                                        thousands(count),
                                        thousands(MAX_AXIS_VALUES)
                                    ),
                                )
                                .with_hint("use a larger step or a factor"));
                        }
                        (0..count).map(|i| from + (i as u32) * step).collect()
                    }
                    (None, Some(factor)) => {
                        let f = *factor.get_ref();
                        if f < 2 {
                            return Err(self.at(
                                factor.span(),
                                format!("{key}.factor: {f} must be at least 2"),
                            ));
                        }
                        if from == 0 {
                            return Err(self.at(
                                r.from.span(),
                                format!("{key}.from: a factor range starts at 1 or more"),
                            ));
                        }
                        let f = u64::try_from(f).unwrap_or(u64::MAX);
                        let mut out = Vec::new();
                        let mut v = u64::from(from);
                        while v <= u64::from(to) {
                            out.push(v as u32);
                            v = v.saturating_mul(f);
                        }
                        out
                    }
                    _ => {
                        return Err(self.at(axis.span(), format!("{key}: a range needs exactly one of step or factor")).with_hint("e.g. { from = 1, to = 64, step = 1 } or { from = 1, to = 512, factor = 2 }"));
                    }
                }
            }
        };
        Ok(values)
    }
}
