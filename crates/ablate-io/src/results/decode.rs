//! The page reader's value decoders: fixed-width numbers, booleans and text, PLAIN or
//! dictionary-encoded, one trait ([`Decoder`]) for all.

use std::collections::HashMap;

use polars_parquet::parquet::encoding::plain_byte_array::BinaryIter;

use super::fold::{NONE, Strings};
use super::pages::{Decoding, Unsupported};

/// Decodes one physical type's values.
pub(super) trait Decoder {
    /// A decoded value.
    type Value: Copy;
    /// What a null reads as.
    const NULL: Self::Value;
    /// Reads the chunk's dictionary page (`n` plain-encoded values).
    fn dictionary(&mut self, bytes: &[u8], n: usize) -> Decoding<()>;
    /// Appends `n` plain-encoded values.
    fn plain(&mut self, bytes: &[u8], n: usize, out: &mut Vec<Self::Value>) -> Decoding<()>;
    /// Appends the dictionary values at `indices`.
    fn indexed(&mut self, indices: &[u32], out: &mut Vec<Self::Value>) -> Decoding<()>;
}

/// A fixed-width little-endian number type.
pub(super) trait Number: Copy + Default {
    const WIDTH: usize;
    const ZERO: Self;
    fn from_le(bytes: &[u8]) -> Self;
}

macro_rules! number {
    ($t:ty) => {
        impl Number for $t {
            const WIDTH: usize = std::mem::size_of::<$t>();
            const ZERO: Self = 0 as $t;
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().unwrap_or_default())
            }
        }
    };
}
number!(i32);
number!(i64);
number!(f32);
number!(f64);

/// Fixed-width numbers, PLAIN or dictionary-encoded.
#[derive(Default)]
pub(super) struct Fixed<T> {
    pub(super) dictionary: Vec<T>,
}

fn plain_numbers<T: Number>(bytes: &[u8], n: usize, out: &mut Vec<T>) -> Decoding<()> {
    let bytes = bytes
        .get(..n * T::WIDTH)
        .ok_or_else(|| Unsupported("a page is shorter than its values".into()))?;
    out.extend(bytes.chunks_exact(T::WIDTH).map(T::from_le));
    Ok(())
}

fn out_of_dictionary(index: u32) -> Unsupported {
    Unsupported(format!("dictionary index {index} out of range"))
}

impl<T: Number> Decoder for Fixed<T> {
    type Value = T;
    const NULL: T = T::ZERO;
    fn dictionary(&mut self, bytes: &[u8], n: usize) -> Decoding<()> {
        plain_numbers(bytes, n, &mut self.dictionary)
    }
    fn plain(&mut self, bytes: &[u8], n: usize, out: &mut Vec<T>) -> Decoding<()> {
        plain_numbers(bytes, n, out)
    }
    fn indexed(&mut self, indices: &[u32], out: &mut Vec<T>) -> Decoding<()> {
        out.reserve(indices.len());
        for &i in indices {
            out.push(
                *self
                    .dictionary
                    .get(i as usize)
                    .ok_or_else(|| out_of_dictionary(i))?,
            );
        }
        Ok(())
    }
}

/// Booleans, PLAIN (bit-packed, least significant bit first).
pub(super) struct Bools;

impl Decoder for Bools {
    type Value = bool;
    const NULL: bool = false;
    fn dictionary(&mut self, _: &[u8], _: usize) -> Decoding<()> {
        Err(Unsupported("a dictionary of booleans".into()))
    }
    fn plain(&mut self, bytes: &[u8], n: usize, out: &mut Vec<bool>) -> Decoding<()> {
        if bytes.len() * 8 < n {
            return Err(Unsupported("a page is shorter than its values".into()));
        }
        out.extend((0..n).map(|i| bytes[i / 8] >> (i % 8) & 1 == 1));
        Ok(())
    }
    fn indexed(&mut self, _: &[u32], _: &mut Vec<bool>) -> Decoding<()> {
        Err(Unsupported("a dictionary of booleans".into()))
    }
}

/// UTF-8 strings as codes into a dictionary: the chunk's dictionary page, then any strings of
/// plain-encoded pages (a writer falls back to them when the dictionary grows too large).
#[derive(Default)]
pub(super) struct Text {
    pub(super) dictionary: Strings,
    /// Code of each string, built at the first plain page.
    pub(super) index: HashMap<String, u32>,
}

fn utf8(bytes: &[u8]) -> std::result::Result<&str, Unsupported> {
    std::str::from_utf8(bytes).map_err(|_| Unsupported("text that is not UTF-8".into()))
}

impl Decoder for Text {
    type Value = u32;
    /// A null is no string: [`NONE`].
    const NULL: u32 = NONE;
    fn dictionary(&mut self, bytes: &[u8], n: usize) -> Decoding<()> {
        // Each entry takes at least its 4-byte length: a page cannot hold more (a damaged
        // header may declare more, which must not become a huge allocation).
        let entries = n.min(bytes.len() / 4);
        self.dictionary = Strings::with_capacity(entries, bytes.len() - 4 * entries);
        for value in BinaryIter::new(bytes, Some(n)).take(n) {
            self.dictionary.push(utf8(value?)?);
        }
        if self.dictionary.len() != n {
            return Err(Unsupported(
                "a dictionary page is shorter than it declares".into(),
            ));
        }
        Ok(())
    }
    fn plain(&mut self, bytes: &[u8], n: usize, out: &mut Vec<u32>) -> Decoding<()> {
        if self.index.len() < self.dictionary.len() {
            self.index = (0..self.dictionary.len())
                .map(|i| (self.dictionary.get(i).to_string(), i as u32))
                .collect();
        }
        let start = out.len();
        for value in BinaryIter::new(bytes, Some(n)).take(n) {
            let s = utf8(value?)?;
            let code = match self.index.get(s) {
                Some(&code) => code,
                None => {
                    let code = self.dictionary.len() as u32;
                    self.dictionary.push(s);
                    self.index.insert(s.to_string(), code);
                    code
                }
            };
            out.push(code);
        }
        if out.len() != start + n {
            return Err(Unsupported("a page is shorter than its values".into()));
        }
        Ok(())
    }
    fn indexed(&mut self, indices: &[u32], out: &mut Vec<u32>) -> Decoding<()> {
        if let Some(&bad) = indices
            .iter()
            .find(|&&i| i as usize >= self.dictionary.len())
        {
            return Err(out_of_dictionary(bad));
        }
        out.extend_from_slice(indices);
        Ok(())
    }
}
