//! The declarations of the tables each output exports (`--export`, the Python module): the
//! [`spec::Export`] trait, implemented beside each output's rendering.

pub mod spec;
