//! Pure numeric code: stable sums and moments. No Polars, no I/O.

pub mod moments;
