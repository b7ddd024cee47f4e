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
//!   U+FFFD, since XML (the SVG charts) cannot carry them, and so do the bidirectional formatting
//!   characters, which would reorder the text after a name; applied inside the others.

/// Whether `c` is a bidirectional formatting character (the marks U+200E, U+200F and U+061C, the
/// embeddings and overrides U+202A–U+202E, the isolates U+2066–U+2069): in a name, it would
/// reorder how the text after it is drawn, ablate's own numbers included.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Replaces control characters other than `\t` and `\n`, the bidirectional formatting
/// characters ([`is_bidi_control`]), and U+FFFE and U+FFFF (which XML cannot carry either), with
/// U+FFFD.
pub fn plain(text: &str) -> String {
    text.chars()
        .map(|c| {
            if (c.is_control() && c != '\t' && c != '\n')
                || is_bidi_control(c)
                || matches!(c, '\u{FFFE}' | '\u{FFFF}')
            {
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

/// A Markdown line that continues a paragraph after a hard break, with what would start a block
/// there escaped: a list item (`-`, `+`, `1.`, `1)`) or a setext heading's underline (`=`, `-`).
/// [`markdown`] has already escaped the rest (`#`, `>`, `*`, `|`, code, links).
fn not_a_block_start(line: String) -> String {
    let lead = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[lead..];
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let at = match rest.as_bytes().first() {
        Some(b'-' | b'+' | b'=') => lead,
        Some(b'0'..=b'9') if matches!(rest.as_bytes().get(digits), Some(b'.' | b')')) => {
            lead + digits
        }
        _ => return line,
    };
    format!("{}\\{}", &line[..at], &line[at..])
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
        let mut out = String::new();
        for (t, b) in &self.spans {
            let t = t
                .split('\n')
                .enumerate()
                .map(|(i, line)| match i > 0 || out.ends_with('\n') {
                    // A line after a break: nothing in it may start a list or a heading.
                    true => not_a_block_start(markdown(line)),
                    false => markdown(line),
                })
                .collect::<Vec<_>>()
                .join("  \n");
            if *b && !t.is_empty() {
                out += &format!("**{t}**");
            } else {
                out += &t;
            }
        }
        out
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

    #[test]
    fn a_line_break_in_data_starts_no_list_or_heading() {
        let p = Prose::new()
            .text("Set ")
            .bold("tiny\n=====\n- every example is removable\n12. x\n3) y\n  + z\n-0.5")
            .text(".\n1. next");
        assert_eq!(
            p.markdown(),
            "Set **tiny  \n\\=====  \n\\- every example is removable  \n12\\. x  \n3\\) y  \n  \\+ z  \n\\-0.5**.  \n1\\. next"
        );
        // Within a line, nothing changes.
        assert_eq!(Prose::new().text("a - b = 1. c").markdown(), "a - b = 1. c");
    }

    #[test]
    fn direction_marks_cannot_reorder_the_text_after_a_name() {
        for c in ['\u{202E}', '\u{2066}', '\u{2069}', '\u{200F}', '\u{061C}'] {
            let name = format!("few_shot/02{c}");
            assert_eq!(plain(&name), "few_shot/02\u{FFFD}");
            assert_eq!(html(&name), "few_shot/02\u{FFFD}");
            assert_eq!(markdown(&name), "few\\_shot/02\u{FFFD}");
        }
        // A zero-width joiner (emoji, Indic scripts) is text, not a control.
        assert_eq!(plain("a\u{200D}b"), "a\u{200D}b");
    }
}
