//! What a grid axis is, for both modes: the kinds of axis a table row may name, the generator
//! that turns an axis table into a grid ([`grid!`]), and mixed-radix arithmetic. Owns no axis:
//! each mode declares its axes once, in a table (`crate::grid::inference_axes!`,
//! `crate::train::grid::training_axes!`), whose module doc says how to add one. Knows nothing
//! of the sweep file: the spec reads the same tables with its own generators
//! (`spec::raw::raw_grid!` for the `[grid]` keys, `spec::grid::load_grid!` for their checks).
//!
//! A table is a `macro_rules!` macro that hands its rows to a generator, one row per axis,
//! slowest-varying first:
//!
//! ```text
//! /// doc of the point's field
//! field: Kind = default, BOUNDS;
//! ```
//!
//! `field` names the point's field, the grid's list of values, the `[grid]` key and the axis in
//! `racksweep check`. `Kind` says how the point holds the axis and how `[grid]` spells it:
//!
//! | kind | the point holds | `[grid]` key(s) | default |
//! |---|---|---|---|
//! | [`Platforms`] | an index into the grid's platforms | `hardware` (required), `rack` | none |
//! | [`Dtypes`] | an index into the grid's catalog formats | a list of format ids | an id, `"bf16"` |
//! | [`Named<T>`] | an index into the grid's words of `T` | a list of `T`'s words | a variant of `T` |
//! | [`Payments`] | an index into the grid's payments | `ownership`, `pricing` | a `Payment` |
//! | [`Numbers`] | the value | an integer axis (list or range) | a list, `[1, 2, 4, 8]` |
//!
//! and the kinds one mode alone has: `Racks` (numbers or `"auto"`, `crate::grid`), `Spine`
//! (numbers, or each rack's own when omitted, `crate::grid`) and `Sizes` (`racks`, `gpus` or
//! `dp`, `crate::train::grid`). `BOUNDS` (numeric kinds only) names the
//! [`crate::limits::Bounds`] the spec checks each value against.

use std::marker::PhantomData;

use crate::catalog::Catalog;
use crate::vocab::{Payment, Platform, Pricing, Vocabulary};

/// How a point holds one axis, how the grid keeps its values and how `check` shows them.
/// Implemented by the kind named in a table row; the generated grid calls it per axis.
pub trait Kind {
    /// The grid's values of the axis, in index order.
    type Values: Clone + std::fmt::Debug;
    /// What a table row gives as the default, or what [`Kind::single`] takes for a required
    /// axis.
    type Default: ?Sized;

    fn len(values: &Self::Values) -> usize;

    /// What a point holds for value number `digit`: the digit itself on a categorical axis, the
    /// value on a numeric one.
    fn held(values: &Self::Values, digit: u32) -> u32;

    /// The value number of what a point holds (the inverse of [`Kind::held`]); `None` where a
    /// numeric value is not on the axis. A categorical digit is checked by the caller.
    fn digit(values: &Self::Values, held: u32) -> Option<u32>;

    /// The axis's name in `racksweep check` and the manifest.
    fn name(field: &'static str, _values: &Self::Values) -> &'static str {
        field
    }

    /// The values as `racksweep check` lists them.
    fn shown(values: &Self::Values, catalog: &Catalog) -> String;

    /// The axis with one value: the default's first.
    fn single(default: &Self::Default, catalog: &Catalog) -> Self::Values;

    /// `n` distinct values (at most 2 on a categorical axis), for the grids' own tests.
    #[cfg(test)]
    fn sample(n: usize) -> Self::Values;
}

/// Integer values; the point holds the value.
pub struct Numbers;

impl Kind for Numbers {
    type Values = Vec<u32>;
    type Default = [u32];

    fn len(values: &Vec<u32>) -> usize {
        values.len()
    }

    #[inline]
    fn held(values: &Vec<u32>, digit: u32) -> u32 {
        values[digit as usize]
    }

    fn digit(values: &Vec<u32>, held: u32) -> Option<u32> {
        values.iter().position(|&v| v == held).map(|i| i as u32)
    }

    fn shown(values: &Vec<u32>, _: &Catalog) -> String {
        abbreviate(values.iter().map(u32::to_string).collect())
    }

    fn single(default: &[u32], _: &Catalog) -> Vec<u32> {
        vec![default[0]]
    }

    #[cfg(test)]
    fn sample(n: usize) -> Vec<u32> {
        (0..n as u32).map(|i| 1 + 3 * i).collect()
    }
}

/// GPU presets in their racks (from `hardware` and `rack`); the point holds the index.
pub struct Platforms;

impl Kind for Platforms {
    type Values = Vec<Platform>;
    /// The one platform of [`Kind::single`]: the axis has no default.
    type Default = Platform;

    fn len(values: &Vec<Platform>) -> usize {
        values.len()
    }

    #[inline]
    fn held(_: &Vec<Platform>, digit: u32) -> u32 {
        digit
    }

    fn digit(_: &Vec<Platform>, held: u32) -> Option<u32> {
        Some(held)
    }

    fn name(_: &'static str, _: &Vec<Platform>) -> &'static str {
        "hardware x rack"
    }

    fn shown(values: &Vec<Platform>, catalog: &Catalog) -> String {
        values
            .iter()
            .map(|p| format!("{} in {}", catalog.gpus[p.gpu].id, catalog.racks[p.rack].id))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn single(platform: &Platform, _: &Catalog) -> Vec<Platform> {
        vec![*platform]
    }

    #[cfg(test)]
    fn sample(n: usize) -> Vec<Platform> {
        (0..n).map(|i| Platform { gpu: i, rack: i }).collect()
    }
}

/// Number formats of the catalog (indices into `catalog.dtypes`); the point holds the index.
pub struct Dtypes;

impl Kind for Dtypes {
    type Values = Vec<usize>;
    /// A format id.
    type Default = str;

    fn len(values: &Vec<usize>) -> usize {
        values.len()
    }

    #[inline]
    fn held(_: &Vec<usize>, digit: u32) -> u32 {
        digit
    }

    fn digit(_: &Vec<usize>, held: u32) -> Option<u32> {
        Some(held)
    }

    fn shown(values: &Vec<usize>, catalog: &Catalog) -> String {
        values
            .iter()
            .map(|&d| catalog.dtypes[d].id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn single(id: &str, catalog: &Catalog) -> Vec<usize> {
        vec![catalog.dtype_index(id).expect("a built-in number format")]
    }

    #[cfg(test)]
    fn sample(n: usize) -> Vec<usize> {
        (0..n).collect()
    }
}

/// Words of a fixed vocabulary `T` (ownership, recompute, ...); the point holds the index.
pub struct Named<T>(PhantomData<T>);

impl<T: Vocabulary> Kind for Named<T> {
    type Values = Vec<T>;
    type Default = T;

    fn len(values: &Vec<T>) -> usize {
        values.len()
    }

    #[inline]
    fn held(_: &Vec<T>, digit: u32) -> u32 {
        digit
    }

    fn digit(_: &Vec<T>, held: u32) -> Option<u32> {
        Some(held)
    }

    fn shown(values: &Vec<T>, _: &Catalog) -> String {
        values
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn single(default: &T, _: &Catalog) -> Vec<T> {
        vec![*default]
    }

    #[cfg(test)]
    fn sample(n: usize) -> Vec<T> {
        T::ALL[..n].to_vec()
    }
}

/// How configurations pay for their hardware (from `ownership` and `pricing`: each cloud
/// pricing, and owned once); the point holds the index. Named `ownership` in `check` and the
/// manifest, whose values it shows as ownership words while every cloud value is on-demand (as
/// before the pricing axis), else as `cloud <pricing>` and `owned`.
pub struct Payments;

impl Kind for Payments {
    type Values = Vec<Payment>;
    type Default = Payment;

    fn len(values: &Vec<Payment>) -> usize {
        values.len()
    }

    #[inline]
    fn held(_: &Vec<Payment>, digit: u32) -> u32 {
        digit
    }

    fn digit(_: &Vec<Payment>, held: u32) -> Option<u32> {
        Some(held)
    }

    fn shown(values: &Vec<Payment>, _: &Catalog) -> String {
        let on_demand = values
            .iter()
            .all(|v| matches!(v, Payment::Owned | Payment::Cloud(Pricing::OnDemand)));
        values
            .iter()
            .map(|v| match (v, on_demand) {
                (Payment::Cloud(p), false) => format!("cloud {}", p.as_str()),
                _ => v.ownership().as_str().to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn single(default: &Payment, _: &Catalog) -> Vec<Payment> {
        vec![*default]
    }

    #[cfg(test)]
    fn sample(n: usize) -> Vec<Payment> {
        [Payment::DEFAULT, Payment::Owned][..n].to_vec()
    }
}

/// Values joined by commas; long axes show their first and last few values.
pub fn abbreviate(values: Vec<String>) -> String {
    const SHOWN: usize = 8;
    if values.len() <= 2 * SHOWN {
        return values.join(", ");
    }
    let n = values.len();
    format!(
        "{}, ..., {} ({n} values)",
        values[..SHOWN].join(", "),
        values[n - SHOWN..].join(", ")
    )
}

/// Builds a grid from an axis table's rows: the point struct (one `u32` per axis), the grid
/// struct (each axis's values, as its kind keeps them), `AXES`, and the grid's size, names,
/// `check` listing, decoding (`point`, `index_of`) and an iterator that updates only the axes
/// that moved. Invoked through a table: `inference_axes!(crate::axis::grid! { ... })`.
macro_rules! grid {
    (
        $(#[$point_meta:meta])* pub struct $Point:ident;
        $(#[$grid_meta:meta])* pub struct $Grid:ident;
        $(#[$points_meta:meta])* pub struct $Points:ident;
        $(
            $(#[$doc:meta])*
            $field:ident : $kind:ident $(<$vocab:ty>)? $(= $default:tt $(, $bounds:ident)?)? ;
        )*
    ) => {
        /// Axis numbers, slowest-varying first (the table's order).
        #[expect(non_camel_case_types, reason = "variants are the axis fields, named as the table names them")]
        enum AxisNumber {
            $($field,)*
        }

        /// Each axis's number, by field.
        #[expect(non_upper_case_globals, reason = "constants are the axis fields, named as the table names them")]
        mod axis_number {
            $(pub const $field: usize = super::AxisNumber::$field as usize;)*
        }

        /// The number of axes.
        pub const AXES: usize = [$(stringify!($field)),*].len();

        $(#[$point_meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $Point {
            $(
                $(#[$doc])*
                pub $field: u32,
            )*
        }

        $(#[$grid_meta])*
        #[derive(Debug, Clone)]
        pub struct $Grid {
            $(
                #[doc = concat!("Values of `", stringify!($field), "`, in index order.")]
                pub $field: <$kind $(<$vocab>)? as $crate::axis::Kind>::Values,
            )*
        }

        impl $Grid {
            /// The grid with one value per axis: `platform`, and each other axis's default
            /// (its first value where the default lists several).
            pub fn single(
                catalog: &$crate::catalog::Catalog,
                platform: $crate::vocab::Platform,
            ) -> $Grid {
                $Grid {
                    $(
                        $field: <$kind $(<$vocab>)? as $crate::axis::Kind>::single(
                            &$crate::axis::grid!(@default platform; $kind $(<$vocab>)? $(= $default)?),
                            catalog,
                        ),
                    )*
                }
            }

            /// Each axis with `sizes[axis]` distinct values, for the grid's own tests.
            #[cfg(test)]
            pub fn sample(sizes: [usize; AXES]) -> $Grid {
                $Grid {
                    $(
                        $field: <$kind $(<$vocab>)? as $crate::axis::Kind>::sample(
                            sizes[axis_number::$field],
                        ),
                    )*
                }
            }

            /// Axis lengths in axis order.
            pub fn radices(&self) -> [u64; AXES] {
                [$(<$kind $(<$vocab>)? as $crate::axis::Kind>::len(&self.$field) as u64,)*]
            }

            /// Axis names in axis order, as `racksweep check` and the manifest show them.
            pub fn axis_names(&self) -> [&'static str; AXES] {
                [$(<$kind $(<$vocab>)? as $crate::axis::Kind>::name(stringify!($field), &self.$field),)*]
            }

            /// Each axis's values as `racksweep check` lists them, in axis order.
            pub fn shown_values(&self, catalog: &$crate::catalog::Catalog) -> [String; AXES] {
                [$(<$kind $(<$vocab>)? as $crate::axis::Kind>::shown(&self.$field, catalog),)*]
            }

            /// Number of configurations, or `None` if it overflows u64.
            pub fn checked_len(&self) -> Option<u64> {
                $crate::axis::mixed_radix::checked_len(&self.radices())
            }

            /// Number of configurations. Spec validation guarantees it fits in u64.
            pub fn len(&self) -> u64 {
                self.checked_len()
                    .expect("grid size validated at spec load")
            }

            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// Axis digits of configuration `index` (the last axis least significant).
            fn digits(&self, index: u64) -> [u32; AXES] {
                $crate::axis::mixed_radix::digits(&self.radices(), index)
            }

            /// Sets the field of axis `axis` of `p` to the axis's value number `digit`.
            #[inline]
            fn set_axis(&self, p: &mut $Point, axis: usize, digit: u32) {
                match axis {
                    $(
                        axis_number::$field => {
                            p.$field = <$kind $(<$vocab>)? as $crate::axis::Kind>::held(&self.$field, digit)
                        }
                    )*
                    _ => unreachable!("axis {axis} of {AXES}"),
                }
            }

            fn point_from_digits(&self, d: &[u32; AXES]) -> $Point {
                $Point {
                    $(
                        $field: <$kind $(<$vocab>)? as $crate::axis::Kind>::held(
                            &self.$field,
                            d[axis_number::$field],
                        ),
                    )*
                }
            }

            /// Configuration number `index` (0-based, `index < len()`).
            pub fn point(&self, index: u64) -> $Point {
                debug_assert!(index < self.len());
                self.point_from_digits(&self.digits(index))
            }

            /// Index of a point produced by this grid (the inverse of `point`). Numeric axes are
            /// looked up by value, so axes must not repeat a value (spec validation ensures it).
            pub fn index_of(&self, p: &$Point) -> Option<u64> {
                let digits = [
                    $(<$kind $(<$vocab>)? as $crate::axis::Kind>::digit(&self.$field, p.$field)?,)*
                ];
                $crate::axis::mixed_radix::index(&self.radices(), &digits)
            }

            /// Points `start..end` in index order, by incrementing a mixed-radix counter (no
            /// division per point).
            pub fn range(&self, start: u64, end: u64) -> $Points<'_> {
                let end = end.min(self.len());
                let next = start.min(end);
                let digits = self.digits(next);
                $Points {
                    grid: self,
                    radices: self.radices(),
                    digits,
                    point: if next < end {
                        self.point_from_digits(&digits)
                    } else {
                        $Point::default()
                    },
                    next,
                    end,
                }
            }
        }

        $(#[$points_meta])*
        pub struct $Points<'a> {
            grid: &'a $Grid,
            radices: [u64; AXES],
            digits: [u32; AXES],
            point: $Point,
            next: u64,
            end: u64,
        }

        impl Iterator for $Points<'_> {
            type Item = (u64, $Point);

            fn next(&mut self) -> Option<(u64, $Point)> {
                if self.next >= self.end {
                    return None;
                }
                let item = (self.next, self.point);
                self.next += 1;
                if self.next < self.end {
                    for axis in (0..AXES).rev() {
                        self.digits[axis] += 1;
                        let wrapped = u64::from(self.digits[axis]) == self.radices[axis];
                        if wrapped {
                            self.digits[axis] = 0;
                        }
                        self.grid.set_axis(&mut self.point, axis, self.digits[axis]);
                        if !wrapped {
                            break;
                        }
                    }
                }
                Some(item)
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                let n = (self.end - self.next) as usize;
                (n, Some(n))
            }
        }

        impl ExactSizeIterator for $Points<'_> {}
    };

    // A row's default as `Kind::single` takes it: a vocabulary's variant, the row's default,
    // or, on the required axis, `$platform`.
    (@default $platform:ident; Named<$vocab:ty> = $default:ident) => {
        <$vocab>::$default
    };
    (@default $platform:ident; $kind:ident = $default:tt) => {
        $default
    };
    (@default $platform:ident; $kind:ident) => {
        $platform
    };
}
pub(crate) use grid;

/// Mixed-radix arithmetic over axis digits (most significant first), shared by the inference
/// and training grids.
pub mod mixed_radix {
    /// The number of digit combinations, or `None` if it overflows u64.
    pub fn checked_len(radices: &[u64]) -> Option<u64> {
        radices.iter().try_fold(1u64, |acc, &r| acc.checked_mul(r))
    }

    /// Digits of `index`.
    pub fn digits<const N: usize>(radices: &[u64; N], mut index: u64) -> [u32; N] {
        let mut digits = [0u32; N];
        for axis in (0..N).rev() {
            digits[axis] = (index % radices[axis]) as u32;
            index /= radices[axis];
        }
        digits
    }

    /// The index of `digits`, `None` if a digit is out of its axis.
    pub fn index<const N: usize>(radices: &[u64; N], digits: &[u32; N]) -> Option<u64> {
        let mut index = 0u64;
        for axis in 0..N {
            let d = u64::from(digits[axis]);
            if d >= radices[axis] {
                return None;
            }
            index = index * radices[axis] + d;
        }
        Some(index)
    }
}
