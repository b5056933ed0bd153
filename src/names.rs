//! [`names!`]: declares a C-like enum of named values from one table, one row per variant
//! (variant, its name and, optionally, a description), so that the list of every variant, the
//! names and the descriptions cannot drift from the enum. Used by the infeasibility reasons
//! (inference's `perf::Reason`, training's `train::Infeasible`) and by the enums whose names a
//! sweep file or an output column spells (`perf::Limit`, `perf::memory::KvAdmission`,
//! `vocab::Ownership`, `train::Recompute`, `train::Precision`); owns no values itself.

/// Declares the enum and, from the same rows:
/// - `ALL`, every variant in declaration order, so `ALL[v as usize] == v` (the Parquet writers
///   store a value as that index into a dictionary of the names);
/// - `as_str`, the name (a `match`: no allocation, as the sweep loop needs);
/// - `describe`, the description, when every row has one.
///
/// ```ignore
/// names! {
///     /// Why it cannot run.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Why {
///         TooBig => "too_big", "it does not fit";
///     }
/// }
/// ```
macro_rules! names {
    (
        $(#[$attr:meta])*
        $vis:vis enum $Enum:ident {
            $($(#[$doc:meta])* $Variant:ident => $name:literal, $description:literal;)+
        }
    ) => {
        $crate::names::names! {
            $(#[$attr])*
            $vis enum $Enum {
                $($(#[$doc])* $Variant => $name;)+
            }
        }

        impl $Enum {
            /// What the value means, in words.
            pub fn describe(self) -> &'static str {
                match self {
                    $($Enum::$Variant => $description,)+
                }
            }
        }
    };
    (
        $(#[$attr:meta])*
        $vis:vis enum $Enum:ident {
            $($(#[$doc:meta])* $Variant:ident => $name:literal;)+
        }
    ) => {
        $(#[$attr])*
        $vis enum $Enum {
            $($(#[$doc])* $Variant,)+
        }

        impl $Enum {
            /// Every value, in declaration order: `ALL[v as usize] == v`.
            pub const ALL: [$Enum; [$($name),+].len()] = [$($Enum::$Variant),+];

            /// The name, as the sweep file and the output spell it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($Enum::$Variant => $name,)+
                }
            }
        }
    };
}

pub(crate) use names;

#[cfg(test)]
mod tests {
    names! {
        /// Two values with descriptions.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Described {
            /// Documented.
            First => "first", "the first";
            Second => "second", "the second";
        }
    }

    names! {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Named {
            Only => "only";
        }
    }

    #[test]
    fn rows_give_the_list_names_and_descriptions() {
        assert_eq!(Described::ALL, [Described::First, Described::Second]);
        for (i, r) in Described::ALL.into_iter().enumerate() {
            assert_eq!(r as usize, i);
        }
        assert_eq!(Described::Second.as_str(), "second");
        assert_eq!(Described::First.describe(), "the first");
        assert_eq!(Named::ALL.map(Named::as_str), ["only"]);
    }

    /// A name is a dictionary value of the `infeasible_reason` column: distinct, snake_case.
    #[test]
    fn names_are_distinct_snake_case() {
        let inference = crate::perf::Reason::ALL.map(crate::perf::Reason::as_str);
        let training = crate::train::Infeasible::ALL.map(crate::train::Infeasible::as_str);
        for names in [&inference[..], &training[..]] {
            for (i, name) in names.iter().enumerate() {
                assert!(!names[..i].contains(name), "{name} twice");
                assert!(
                    name.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "{name}"
                );
            }
        }
    }
}
