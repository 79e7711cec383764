//! The lab's two languages: [`Bilingual`] text in both, the [`Lang`] a page or a
//! transcript is in, and the [`Theme`] a lesson belongs to.

use serde::{Deserialize, Serialize};

/// Text in both of the lab's languages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bilingual {
    pub zh: String,
    pub en: String,
}

pub use crate::lang::Lang;

impl Bilingual {
    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en,
            Lang::Zh => &self.zh,
        }
    }
}

/// The catalogue's themes, in the order the lesson list shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Theme {
    Basics,
    Release,
    Renewal,
    Replication,
    Redlock,
    Fencing,
    Patterns,
    Interview,
}

impl Theme {
    pub const ALL: [Theme; 8] = [
        Theme::Basics,
        Theme::Release,
        Theme::Renewal,
        Theme::Replication,
        Theme::Redlock,
        Theme::Fencing,
        Theme::Patterns,
        Theme::Interview,
    ];

    pub fn title(self) -> Bilingual {
        let (en, zh) = match self {
            Theme::Basics => ("Basics", "基础"),
            Theme::Release => ("Safe release", "安全释放"),
            Theme::Renewal => ("TTL and renewal", "TTL 与续期"),
            Theme::Replication => ("Replication and failover", "主从复制与故障切换"),
            Theme::Redlock => ("Redlock", "Redlock"),
            Theme::Fencing => ("Fencing and clocks", "Fencing 与时钟"),
            Theme::Patterns => ("Patterns", "工程模式"),
            Theme::Interview => ("Interview", "面试"),
        };
        Bilingual {
            zh: zh.into(),
            en: en.into(),
        }
    }
}
