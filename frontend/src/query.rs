//! The view in the URL: `?lang=zh&lesson=05&step=end&seed=7&driver=sim`.
//!
//! Interview mode is `quiz=N`: on, with its choices shuffled by seed `N`.
//!
//! A class's follower page is `?class=ABC234` (the join URL): the code,
//! and the page's language, nothing else — where it is comes from the
//! presenter.
//!
//! An explorer counterexample is shared as `?explore=<design>&seed=N` (and
//! `step=`): the design by name or encoded (see
//! [`locklab_core::explore::link`]), the seed the search ran with.
//!
//! A link must reproduce what its sender saw, so everything that selects a
//! view (not what was typed into the console) is read from the query string
//! on load and written back with `history.replaceState` on every change.
//! Parsing is forgiving — an unknown key or a malformed value is dropped,
//! never an error page — and writing is canonical (fixed key order), so the
//! same view always has the same URL.

use locklab_core::class::ClassCode;

use crate::i18n::Lang;

/// Which driver produces the trace: the simulator in the page (the
/// default), or real redis-server through the backend's WebSocket
/// (`driver=real`). An unknown driver falls back to `sim`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DriverKind {
    #[default]
    Sim,
    Real,
}

impl DriverKind {
    pub const ALL: [DriverKind; 2] = [DriverKind::Sim, DriverKind::Real];

    pub fn code(self) -> &'static str {
        match self {
            DriverKind::Sim => "sim",
            DriverKind::Real => "real",
        }
    }

    pub fn parse(s: &str) -> Option<DriverKind> {
        DriverKind::ALL.into_iter().find(|d| d.code() == s)
    }
}

/// What the query string can say. `None` means "not given".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub lang: Option<Lang>,
    pub lesson: Option<String>,
    /// An explorer design to search and play (`explore=`), as written in
    /// the URL: the explore screen decodes it and says what is wrong.
    pub explore: Option<String>,
    pub step: Option<String>,
    pub seed: Option<u64>,
    pub driver: Option<DriverKind>,
    /// Presenter mode (`present=1`): the timeline fills the screen.
    pub present: bool,
    /// The projector theme (`theme=dark`); light when absent.
    pub dark: bool,
    /// The class to follow (`class=`), as [`ClassCode::parse`] reads it.
    pub class: Option<ClassCode>,
    /// Interview mode, with the seed its choices are shuffled by
    /// (`quiz=N`): a shared link asks in the same order.
    pub quiz: Option<u64>,
    /// The mock interview is open (`mock=1`).
    pub mock: bool,
    /// This window is presenter mode's notes window (`notes=1`).
    pub notes: bool,
}

/// Lesson ids and step names are short words; anything else is not ours.
fn is_word(s: &str) -> bool {
    !s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `%XX` and `+` decoding, lossy on bad UTF-8 (the value is then rejected by
/// the field's own check anyway).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `%XX` for everything but RFC 3986's unreserved characters (what the
/// explorer's links are made of, so a link it wrote is copied verbatim).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Query {
    /// The page's own query string, and the browser's language (a tag such
    /// as `zh-CN` is Chinese): what the loading screen and the lab both
    /// open in, so they agree.
    pub fn from_page() -> (Query, Option<Lang>) {
        let window = web_sys::window();
        let search = window
            .as_ref()
            .and_then(|w| w.location().search().ok())
            .unwrap_or_default();
        let browser = window
            .and_then(|w| w.navigator().language())
            .and_then(|l| Lang::from_tag(&l));
        (Query::parse(&search), browser)
    }

    /// Parse `location.search` (with or without the leading `?`).
    pub fn parse(search: &str) -> Query {
        let mut q = Query::default();
        for pair in search.trim_start_matches('?').split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = decode(v);
            match decode(k).as_str() {
                "lang" => q.lang = Lang::from_tag(&v),
                "lesson" => q.lesson = is_word(&v).then_some(v),
                "explore" => q.explore = Some(v),
                "step" => q.step = is_word(&v).then_some(v),
                "seed" => q.seed = v.parse().ok(),
                "driver" => q.driver = DriverKind::parse(&v),
                "present" => q.present = v == "1",
                "theme" => q.dark = v == "dark",
                "class" => q.class = ClassCode::parse(&v).ok(),
                "quiz" => q.quiz = v.parse().ok(),
                "mock" => q.mock = v == "1",
                "notes" => q.notes = v == "1",
                _ => {}
            }
        }
        q
    }

    /// The canonical query string, `?` included; empty when nothing is set.
    /// Values are words or numbers by construction, except `explore`, which
    /// is escaped.
    pub fn to_search(&self) -> String {
        let mut parts = Vec::new();
        if let Some(lang) = self.lang {
            parts.push(format!("lang={}", lang.code()));
        }
        if let Some(code) = &self.class {
            parts.push(format!("class={code}"));
        }
        if let Some(lesson) = &self.lesson {
            parts.push(format!("lesson={lesson}"));
        }
        if let Some(design) = &self.explore {
            parts.push(format!("explore={}", escape(design)));
        }
        if let Some(step) = &self.step {
            parts.push(format!("step={step}"));
        }
        if let Some(seed) = self.seed {
            parts.push(format!("seed={seed}"));
        }
        if let Some(driver) = self.driver {
            parts.push(format!("driver={}", driver.code()));
        }
        if let Some(quiz) = self.quiz {
            parts.push(format!("quiz={quiz}"));
        }
        if self.mock {
            parts.push("mock=1".to_owned());
        }
        if self.notes {
            parts.push("notes=1".to_owned());
        }
        if self.present {
            parts.push("present=1".to_owned());
        }
        if self.dark {
            parts.push("theme=dark".to_owned());
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

/// Where the URL's `step=` puts the run: a number of steps done, or `end`.
pub fn parse_step(step: Option<&str>, len: usize) -> usize {
    match step {
        None => 0,
        Some("end") => len,
        Some(n) => n.parse::<usize>().map_or(0, |n| n.min(len)),
    }
}

/// The URL's `step=` for a position: none at the start, `end` at the end.
pub fn step_param(pos: usize, len: usize) -> Option<String> {
    if pos == 0 {
        None
    } else if pos >= len {
        Some("end".to_owned())
    } else {
        Some(pos.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_the_documented_example() {
        let s = "?lang=zh&lesson=05&step=end&seed=7&driver=sim";
        let q = Query::parse(s);
        assert_eq!(q.lang, Some(Lang::Zh));
        assert_eq!(q.lesson.as_deref(), Some("05"));
        assert_eq!(q.step.as_deref(), Some("end"));
        assert_eq!(q.seed, Some(7));
        assert_eq!(q.driver, Some(DriverKind::Sim));
        assert_eq!(q.to_search(), s);
    }

    #[test]
    fn is_forgiving_and_canonical() {
        let q = Query::parse("driver=sim&x=1&seed=-3&lang=fr&lesson=%3Cscript%3E&&step=3&lang=en");
        assert_eq!(q.to_search(), "?lang=en&step=3&driver=sim");
        assert_eq!(Query::parse("").to_search(), "");
        assert_eq!(Query::parse("?lesson=%30%35").lesson.as_deref(), Some("05"));
        // A truncated escape is kept literally, then rejected as a word.
        assert_eq!(Query::parse("?lesson=0%3").lesson, None);
        assert_eq!(Query::parse("?lesson=%").lesson, None);
        assert_eq!(Query::parse("?driver=real").driver, Some(DriverKind::Real));
        assert_eq!(Query::parse("?driver=mock").driver, None);
        let p = Query::parse("?lesson=05&present=1&theme=dark");
        assert!(p.present && p.dark);
        assert_eq!(p.to_search(), "?lesson=05&present=1&theme=dark");
        assert!(!Query::parse("?present=0&theme=light").present);
        let c = Query::parse("?class=abc-234&lang=zh");
        assert_eq!(c.to_search(), "?lang=zh&class=ABC234");
        assert_eq!(Query::parse("?class=%3Cb%3E").class, None, "not a code");
        let quiz = Query::parse("?lesson=05&quiz=4821&lang=zh");
        assert_eq!(quiz.quiz, Some(4821));
        assert_eq!(quiz.to_search(), "?lang=zh&lesson=05&quiz=4821");
        assert_eq!(
            Query::parse("?quiz=x").quiz,
            None,
            "not a seed: interview mode stays off"
        );
        assert_eq!(Query::parse("?mock=1&lang=en").to_search(), "?lang=en&mock=1");
    }

    #[test]
    fn an_explore_link_round_trips_and_hostile_values_stay_inert() {
        let v = locklab_core::explore::link::encode_text("release = \"del\"\n");
        let s = format!("?lang=en&explore={v}&seed=7");
        let q = Query::parse(&s);
        assert_eq!(q.explore.as_deref(), Some(v.as_str()));
        assert_eq!(q.to_search(), s);
        assert_eq!(
            Query::parse("?explore=01-bare-del").explore.as_deref(),
            Some("01-bare-del")
        );
        // Whatever came in goes out escaped: it cannot add a parameter.
        let q = Query::parse("?explore=%26lesson%3D05%20x");
        assert_eq!(q.explore.as_deref(), Some("&lesson=05 x"));
        assert_eq!(q.to_search(), "?explore=%26lesson%3D05%20x");
        assert_eq!(Query::parse(&q.to_search()), q);
    }

    #[test]
    fn step_params_round_trip() {
        assert_eq!(parse_step(Some("end"), 9), 9);
        assert_eq!(parse_step(Some("3"), 9), 3);
        assert_eq!(parse_step(Some("30"), 9), 9);
        assert_eq!(parse_step(Some("x"), 9), 0);
        assert_eq!(step_param(0, 9), None);
        assert_eq!(step_param(3, 9).as_deref(), Some("3"));
        assert_eq!(step_param(9, 9).as_deref(), Some("end"));
    }
}
