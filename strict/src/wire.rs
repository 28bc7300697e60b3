//! Closed vocabularies that cross a process boundary (report.json,
//! events.jsonl, checkpoints, summary.json) as plain strings. Each is declared
//! once, with its wire name next to its variant: serde, `as_str`, `parse` and
//! `ALL` all come from that one list, so a reader that matches a variant
//! stops compiling when the writer renames it, and a string the list does not
//! hold fails to parse instead of being taken for some other value.
//!
//! Here, not in the harness, so the bench (which depends on the harness) and
//! the harness declare theirs with one macro: the harness's endings, tools
//! and outcomes, the bench's audit gates.

/// Declare a closed enum whose variants travel as the given strings.
///
/// The calling crate needs `serde` (with `derive`) and `schemars` among its
/// dependencies: the derives expand there.
///
/// ```
/// strict::wire_names! {
///     /// How a light is set.
///     pub enum Light {
///         On = "on",
///         Off = "off",
///     }
/// }
/// assert_eq!(Light::On.as_str(), "on");
/// assert_eq!(Light::parse("off"), Some(Light::Off));
/// assert_eq!(Light::parse("dim"), None);
/// assert_eq!(Light::ALL, &[Light::On, Light::Off]);
/// assert_eq!(serde_json::to_string(&Light::Off).unwrap(), "\"off\"");
/// ```
#[macro_export]
macro_rules! wire_names {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $wire, )+
                }
            }

            pub fn parse(s: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.as_str() == s)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
