//! Escaping for every string that reaches an output format. Set, arm, unit, block and stratum
//! names come from the data, and reports are mailed to people who never saw it: no name may act as
//! markup, script, a Markdown table separator or a link.
//!
//! - [`html`]: text and attribute values in HTML (`&`, `<`, `>`, `"`, `'`).
//! - [`markdown`]: Markdown text and table cells: the characters that start emphasis, code, links,
//!   headings, HTML or a cell boundary are backslash-escaped; line breaks become spaces.
//!
//! CSV cells are neutralised against formula injection where every CSV is written,
//! `ablate::io::write::csv`.
//! - [`plain`]: control characters (other than tab and line feed), U+FFFE and U+FFFF become
//!   U+FFFD, since XML (the SVG charts) cannot carry them; applied inside the others.

/// Replaces control characters other than `\t` and `\n`, and U+FFFE and U+FFFF (which XML
/// cannot carry either), with U+FFFD.
pub fn plain(text: &str) -> String {
    text.chars()
        .map(|c| {
            if (c.is_control() && c != '\t' && c != '\n') || matches!(c, '\u{FFFE}' | '\u{FFFF}') {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in plain(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for Markdown (running text, headings and table cells alike).
pub fn markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in plain(text).chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '|' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A line of report prose with bold spans, rendered with every span escaped for its format.
#[derive(Debug, Clone, Default)]
pub struct Prose {
    spans: Vec<(String, bool)>,
}

impl Prose {
    /// Empty prose.
    pub fn new() -> Prose {
        Prose::default()
    }

    /// Appends plain text.
    pub fn text(mut self, t: impl Into<String>) -> Prose {
        self.spans.push((t.into(), false));
        self
    }

    /// Appends bold text.
    pub fn bold(mut self, t: impl Into<String>) -> Prose {
        self.spans.push((t.into(), true));
        self
    }

    /// Appends another piece of prose.
    pub fn append(mut self, other: Prose) -> Prose {
        self.spans.extend(other.spans);
        self
    }

    /// As HTML (bold as `<b>`, line breaks as `<br>`).
    pub fn html(&self) -> String {
        self.spans
            .iter()
            .map(|(t, b)| {
                let t = html(t).replace('\n', "<br>");
                if *b { format!("<b>{t}</b>") } else { t }
            })
            .collect()
    }

    /// As Markdown (bold as `**`, line breaks as Markdown hard breaks: two spaces, then the
    /// break).
    pub fn markdown(&self) -> String {
        self.spans
            .iter()
            .map(|(t, b)| {
                let t = t.split('\n').map(markdown).collect::<Vec<_>>().join("  \n");
                if *b && !t.is_empty() {
                    format!("**{t}**")
                } else {
                    t
                }
            })
            .collect()
    }

    /// As plain text, unescaped (for the terminal).
    pub fn plain(&self) -> String {
        self.spans.iter().map(|(t, _)| t.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_markup_and_quotes() {
        assert_eq!(
            html("</title><script>alert('x')</script> & \"q\""),
            "&lt;/title&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(html("naïve 日本 🙂"), "naïve 日本 🙂");
        assert_eq!(html("a\u{1}b"), "a\u{FFFD}b");
    }

    #[test]
    fn markdown_cannot_break_a_table_or_make_a_link() {
        assert_eq!(markdown("a|b"), "a\\|b");
        assert_eq!(markdown("[x](javascript:1)"), "\\[x\\](javascript:1)");
        assert_eq!(markdown("`<img src=x>`"), "\\`&lt;img src=x&gt;\\`");
        assert_eq!(markdown("line\nbreak"), "line break");
        assert_eq!(markdown("-0.0042"), "-0.0042");
    }

    #[test]
    fn prose_escapes_every_span() {
        let p = Prose::new().text("Set ").bold("<b>x</b>|").text(".\nNext");
        assert_eq!(p.html(), "Set <b>&lt;b&gt;x&lt;/b&gt;|</b>.<br>Next");
        // A line break is a Markdown hard break: two spaces, then the break.
        assert_eq!(p.markdown(), "Set **&lt;b&gt;x&lt;/b&gt;\\|**.  \nNext");
        assert_eq!(p.plain(), "Set <b>x</b>|.\nNext");
    }
}
