//! One module per verb. Each exposes a pure `run` from loaded inputs to a serialisable output
//! struct; none of them reads files or prints.

pub mod check;
