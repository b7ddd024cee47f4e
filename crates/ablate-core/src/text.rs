//! Text for people: cells cut to a display width, number formats, confidence levels.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// `text` cut to at most `max` characters (not display columns), the last of them "…" when it
/// was longer: for sample text kept or shown in bounded space.
pub fn cut_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Widest a terminal table cell gets, in display columns.
pub const MAX_CELL_WIDTH: usize = 48;

/// `text` cut to at most `max` display columns, ending in "…" when cut; control characters are
/// shown as U+FFFD so a name cannot move the cursor.
pub fn truncate(text: &str, max: usize) -> String {
    let text = crate::escape::plain(text).replace(['\n', '\t'], " ");
    if text.width() <= max {
        return text;
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Formats a count with thousands separators: 14000 → "14,000".
pub fn thousands(n: f64) -> String {
    let neg = n < 0.0;
    let digits = format!("{:.0}", n.abs());
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if neg { format!("-{out}") } else { out }
}

/// A path or argument as one word for a POSIX shell: as it is when every character is plain
/// (letters, digits, `_ - . / : = + @ ,`), else in single quotes (a quote inside as `'\''`).
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=+@,".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A float as a person reads it in a message: plain between 1e-4 and 1e15, else in scientific
/// notation (`1e300`, not a 301-digit integer).
pub fn float_text(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e15).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// The first `most` of `names` joined by ", ", then ", …" when there are more: for warnings
/// that name the arms they concern without growing with the experiment.
pub fn some_names(names: &[&str], most: usize) -> String {
    let mut text = names[..names.len().min(most)].join(", ");
    if names.len() > most {
        text.push_str(", …");
    }
    text
}

/// Formats an optional number with `digits` decimals, or "—".
/// Non-finite values print as "—" too.
pub fn num(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(v) if v.is_finite() => fixed(v, digits),
        _ => "—".to_string(),
    }
}

/// Formats with `digits` decimals, never printing a negative zero ("-0.000" becomes "0.000").
pub fn fixed(v: f64, digits: usize) -> String {
    let s = format!("{v:.digits$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// A small positive level (an α) with `sig` significant digits and no trailing zeros:
/// 0.05 → "0.05", 0.05/42 → "0.00119", 1e-6 → "0.000001" (where a fixed 3 decimals printed
/// "0.000"); "—" when not finite.
pub fn significant(x: f64, sig: usize) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i64;
    let digits = (sig as i64 - 1 - magnitude).clamp(0, 17) as usize;
    let s = fixed(x, digits);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Formats a p-value: 3 significant digits, "<0.001" below.
pub fn pval(p: Option<f64>) -> String {
    match p {
        None => "—".into(),
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
    }
}

/// Formats a drop-like number with 4 decimals and its sign ("+0.0042", "-0.0009"), or "—".
pub fn signed(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() && v >= 0.0 => format!("+{}", fixed(v, 4)),
        Some(v) if v.is_finite() => fixed(v, 4),
        _ => "—".into(),
    }
}

/// A share as a percentage with `digits` decimals (0.1234 → "12.3%" at 1), or "—" when absent or
/// not finite.
pub fn percent(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{}%", fixed(100.0 * v, digits)),
        _ => "—".into(),
    }
}

/// A confidence level as a percentage with the digits it needs and no more: 0.95 → "95%",
/// 0.999 → "99.9%", 0.9999999 → "99.99999%" (never a rounded "100%").
pub fn percent_level(confidence: f64) -> String {
    let pct = 100.0 * confidence;
    let mut digits = 0;
    while digits < 12 {
        let scale = 10f64.powi(digits);
        let shown = (pct * scale).round() / scale;
        // Never "100%" for a level below it: the digits go on until it shows.
        if (shown - pct).abs() <= 1e-9 * pct.abs().max(1.0) && (shown < 100.0 || pct >= 100.0) {
            break;
        }
        digits += 1;
    }
    format!("{pct:.*}%", digits as usize)
}

/// Lower-case hex of bytes (a digest, or its first bytes).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn significant_keeps_the_digits_of_small_levels() {
        assert_eq!(super::significant(0.05, 3), "0.05");
        assert_eq!(super::significant(0.05 / 42.0, 3), "0.00119");
        assert_eq!(super::significant(1.0 - 0.999999, 3), "0.000001");
        assert_eq!(super::significant(0.050000000000000044, 3), "0.05");
        assert_eq!(super::significant(0.25, 3), "0.25");
        assert_eq!(super::significant(f64::NAN, 3), "—");
    }

    #[test]
    fn a_level_below_100_percent_never_reads_100() {
        assert_eq!(super::percent_level(0.9999999999), "99.99999999%");
        assert_eq!(super::percent_level(0.95), "95%");
        assert_eq!(super::percent_level(0.999), "99.9%");
    }

    #[test]
    fn shell_words() {
        assert_eq!(
            shell_word("notebooks-data/support-eval-v3"),
            "notebooks-data/support-eval-v3"
        );
        assert_eq!(shell_word("my exp"), "'my exp'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }

    use super::*;

    #[test]
    fn numbers_never_print_negative_zero() {
        assert_eq!(fixed(-0.00001, 4), "0.0000");
        assert_eq!(num(Some(f64::NAN), 2), "—");
        assert_eq!(signed(Some(0.0042)), "+0.0042");
        assert_eq!(signed(Some(-0.0009)), "-0.0009");
        assert_eq!(pval(Some(0.0001)), "<0.001");
    }

    #[test]
    fn confidence_levels_keep_their_digits() {
        assert_eq!(percent_level(0.95), "95%");
        assert_eq!(percent_level(0.999), "99.9%");
        assert_eq!(percent_level(0.9999999), "99.99999%");
        assert_eq!(percent_level(0.8), "80%");
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(14000.0), "14,000");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(-1234567.0), "-1,234,567");
    }
}
