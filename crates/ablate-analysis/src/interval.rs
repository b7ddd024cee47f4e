//! How an [`Interval`] is written in an output: flat, as four keys `<name>_low`, `<name>_high`,
//! `<name>_level` and `<name>_method`, each null when the interval is undefined. One spelling
//! for every interval, so a script (and the export specs) address them all alike.
//!
//! A field holding an interval reads
//!
//! ```ignore
//! #[serde(flatten, serialize_with = "interval::ci")]
//! pub ci: Option<Interval>,
//! ```
//!
//! where the function names the key prefix.

pub use crate::stats::estimate::Interval;
use serde::ser::{SerializeMap, Serializer};

/// Writes `v` as the four keys `<prefix>_low`, `_high`, `_level`, `_method` into the enclosing
/// object (the field is `#[serde(flatten)]`).
fn flat<S: Serializer>(v: &Option<Interval>, prefix: &str, s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(4))?;
    map.serialize_entry(&format!("{prefix}_low"), &v.map(|i| i.low))?;
    map.serialize_entry(&format!("{prefix}_high"), &v.map(|i| i.high))?;
    map.serialize_entry(&format!("{prefix}_level"), &v.map(|i| i.level))?;
    map.serialize_entry(&format!("{prefix}_method"), &v.map(|i| i.method))?;
    map.end()
}

/// One serializer per key prefix (serde's `serialize_with` takes a function path, not an
/// argument).
macro_rules! prefixes {
    ($($name:ident),* $(,)?) => {$(
        #[doc = concat!("Writes an interval as `", stringify!($name), "_low`, `_high`, `_level`, `_method`.")]
        pub fn $name<S: Serializer>(v: &Option<Interval>, s: S) -> Result<S::Ok, S::Error> {
            flat(v, stringify!($name), s)
        }
    )*};
}

prefixes!(
    ci,
    ci_family,
    ci_production,
    ci_production_family,
    ci_main_family,
    ci_stress_family,
    cs,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::estimate::CiMethod;

    #[derive(serde::Serialize)]
    struct Row {
        drop: f64,
        #[serde(flatten, serialize_with = "ci")]
        ci: Option<Interval>,
        #[serde(flatten, serialize_with = "ci_family")]
        ci_family: Option<Interval>,
    }

    #[test]
    fn an_interval_is_four_flat_keys_and_null_when_undefined() {
        let row = Row {
            drop: 0.1,
            ci: Interval::new(Some(0.05), Some(0.15), 0.95, CiMethod::T),
            ci_family: None,
        };
        let v = serde_json::to_value(&row).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "drop": 0.1,
                "ci_low": 0.05, "ci_high": 0.15, "ci_level": 0.95, "ci_method": "t",
                "ci_family_low": null, "ci_family_high": null,
                "ci_family_level": null, "ci_family_method": null,
            })
        );
    }
}
