//! The lab's two languages. A leaf module: lessons, transcripts, events and
//! faults are all worded in a [`Lang`], and none of them should have to
//! import another to name it. The page's chrome uses the same type (its
//! string table is `frontend/src/i18n.rs`), so a language chosen on the
//! page is passed to core's wording as it is.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which language to show. The articles the lessons come from are Chinese;
/// the code, the commands and the replies are the same in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    #[default]
    En,
    Zh,
}

impl Lang {
    /// Both, in the order the page's switch shows them.
    pub const ALL: [Lang; 2] = [Lang::Zh, Lang::En];

    /// Exactly a language code, `en` or `zh` (a lesson file, `--lang`).
    pub fn parse(s: &str) -> Option<Lang> {
        match s {
            "en" => Some(Lang::En),
            "zh" => Some(Lang::Zh),
            _ => None,
        }
    }

    /// A URL code or a browser language tag (`zh`, `zh-CN`, `en-US`,
    /// `EN_us`): its primary subtag, in any case.
    pub fn from_tag(tag: &str) -> Option<Lang> {
        let primary = tag.split(['-', '_']).next().unwrap_or_default();
        if primary.eq_ignore_ascii_case("zh") {
            Some(Lang::Zh)
        } else if primary.eq_ignore_ascii_case("en") {
            Some(Lang::En)
        } else {
            None
        }
    }

    /// The code used in files, URLs (`?lang=zh`) and `<html lang>`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// The language's own name, as the page's switch labels it.
    pub fn native_name(self) -> &'static str {
        match self {
            Lang::Zh => "中文",
            Lang::En => "English",
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_exact_and_a_tag_is_read_by_its_primary_subtag() {
        assert_eq!(Lang::parse("zh"), Some(Lang::Zh));
        assert_eq!(Lang::parse("zh-CN"), None);
        assert_eq!(Lang::from_tag("zh-CN"), Some(Lang::Zh));
        assert_eq!(Lang::from_tag("EN_us"), Some(Lang::En));
        assert_eq!(Lang::from_tag("fr"), None);
        assert_eq!(Lang::from_tag(""), None);
        for lang in Lang::ALL {
            assert_eq!(Lang::parse(lang.code()), Some(lang));
            assert_eq!(Lang::from_tag(lang.code()), Some(lang));
            assert_eq!(lang.to_string(), lang.code());
        }
    }
}
